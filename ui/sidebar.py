"""The sidebar: one card per role.

A card shows the role's number (its focus key), status dot and state, model,
restart count, current task, token counts, cost and budget (only once the
gateway has counted something for the role: no made-up zeros), the marks
the core's guardrails set ("over budget", "stalled", "input holds an
untaken line"), and the last lines of activity (the role actor already
left out the agent's chrome).
"""

from __future__ import annotations

from choragos.gateway.costs import cost_text
from choragos.ui.deckstate import RoleInfo
from choragos.ui.pane import Line, blank_line, clipped_line, fitted, inert, text_line
from choragos.ui.theme import STATE_DOT, STATE_STYLE

WIDTH = 34
# States whose detail says why (held: memory, at a first start or a restart).
EXPLAINED = ("starting", "exited", "failed", "limited")


def state_text(info: RoleInfo) -> str:
    """The role's state, with why for a role not running (``starting, held: memory``)."""
    if info.status in EXPLAINED and info.detail:
        return f"{info.status}, {inert(info.detail)}"
    return info.status


def card(info: RoleInfo, number: int, width: int, *, focused: bool, shown: bool,
         task: dict | None, preview_lines: int, compact: bool = False) -> list[Line]:
    """A role's card; ``compact``: its head row alone, the state named on it
    (a team too big for whole cards).  A row too long ends in ``…``."""
    style = STATE_STYLE.get(info.status, "idle")
    dot = STATE_DOT.get(info.status, "●")
    name_attr = "card focus" if focused else "card name"
    head = [(" ", None), (f"{number} " if number <= 9 else "  ", "dim"), (dot + " ", style),
            (inert(info.name), name_attr)]
    if info.start:
        head.append((" ★", "accent"))
    if info.approve:
        head.append((" ⚑", "waiting"))
    if not shown:
        head.append((" (hidden)", "dim"))
    if compact:
        return [clipped_line(width, [*head, (f" {state_text(info)}", style)])]
    lines = [clipped_line(width, head)]
    facts = [info.status]
    if info.host:
        facts.append(inert(f"@{info.host}"))
    if info.model:
        facts.append(inert(info.model))
    if info.profile:
        facts.append(inert(info.profile))
    facts.append(f"↻{info.restarts}")
    if info.pid:
        facts.append(f"pid {info.pid}")
    # A fact is never cut across two rows: a pid cut short names another process.
    for row in fitted(facts, width - 3, " · "):
        lines.append(clipped_line(width, [("   ", None), (row, style)]))
    if info.status in EXPLAINED and info.detail:
        lines.append(clipped_line(width, [("   ", None), (inert(info.detail), "dim")]))
    if info.usage is not None:
        # Tokens, then spending and budget: each whole, the budget never cut off.
        for row in fitted(usage_pieces(info.usage), width - 3, " "):
            lines.append(clipped_line(width, [("   ", None), (row, "dim")]))
    if info.extra.get("marks"):  # "over budget", "stalled"...: set by the core's guardrails
        lines.append(clipped_line(width, [("   ", None),
                                          (" · ".join(info.extra["marks"]), "waiting")]))
    if task is not None:
        lines.append(clipped_line(width, [("   ", None), (f"{task['id']} ", "accent"),
                                       (inert(task.get("label", "")), None)]))
    for text in list(info.preview)[-preview_lines:] if preview_lines else []:
        lines.append(clipped_line(width, [("   › ", "dim"), (inert(text), "idle")]))
    return lines


def usage_pieces(usage: dict) -> list[str]:
    """``↑in ↓out`` and ``$cost/$budget`` (``~$cost``: an estimate), pieces a card
    may put on rows of their own; no cost without a ``[pricing]`` table."""
    tokens = usage.get("tokens", {})
    pieces = [f"↑{count_text(tokens.get('input', 0))} ↓{count_text(tokens.get('output', 0))}"]
    cost = usage.get("cost")
    spent = "" if cost is None else cost_text(cost, bool(usage.get("estimated")))
    spent += budget_text(usage.get("budget"))
    return [*pieces, spent] if spent else pieces


def budget_text(budget: dict | None) -> str:
    """``/$1.00`` (or ``/500.0k tok``) after the spending, when the role has a budget."""
    if not budget:
        return ""
    caps = [cost_text(budget["usd"]) if budget.get("usd") is not None else "",
            f"{count_text(budget['tokens'])} tok" if budget.get("tokens") else ""]
    return "/" + " ".join(cap for cap in caps if cap)


def count_text(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def render(infos: list[RoleInfo], width: int, height: int, *, focus: str | None,
           shown: set[str], tasks: dict[str, dict],
           spans: list[tuple[str, int, int]] | None = None) -> list[Line]:
    """``height`` rows of cards; previews shrink when the team does not fit,
    then each card shrinks to its head row, and the cards that still do not
    fit are counted on the last row.

    ``spans``, when given, receives (role, first row, end row) of each card,
    for mouse clicks."""
    border = [("│", "bar")]
    inner = width - 1
    lines: list[Line] = []
    for preview in (3, 2, 1, 0, None):
        lines = []
        placed = []
        for number, info in enumerate(infos, 1):
            start = len(lines)
            lines += card(info, number, inner, focused=info.name == focus,
                          shown=info.name in shown, task=tasks.get(info.name),
                          preview_lines=preview or 0, compact=preview is None)
            placed.append((info.name, start, len(lines)))
            if preview is not None:
                lines.append(blank_line(inner))
        if len(lines) <= height:
            break
    if len(lines) > height > 0:
        # The last row says how many cards are left out rather than cutting one.
        placed = [(name, start, end) for name, start, end in placed if end < height]
        left_out = len(infos) - len(placed)
        lines = [*lines[:height - 1], clipped_line(inner, [(
            f"   … {left_out} more role{'s' if left_out != 1 else ''}",
            "dim")])]
    if spans is not None:
        spans[:] = placed
    lines = lines[:height]
    while len(lines) < height:
        lines.append(blank_line(inner))
    bar = text_line(1, border)
    return [(bar[0] + data, bar[1] + attrs) for data, attrs in lines]
