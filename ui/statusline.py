"""The deck's bottom line: modes, the focused role and its state, the
gateway, waiting gates, the last message and the help hint."""

from __future__ import annotations

from dataclasses import dataclass

from choragos.ui import keys as k
from choragos.ui.deckstate import DeckState
from choragos.ui.pane import Line, clipped_line, inert, text_width


@dataclass(frozen=True)
class Chrome:
    """What the deck shows around the panes besides its state."""

    mode: str = "normal"   # the key mode: normal | prefix | resize
    message: str | None = None  # the last message, while it lasts
    editing: bool = False  # the editor covers the deck
    prefix: str = "ctrl+b"  # the prefix key as written in [keys]


def render(state: DeckState, chrome: Chrome, cols: int) -> Line:
    """The status line, ``cols`` wide."""
    tags = list(mode_tags(state, chrome))
    where = [(" choragos ", "status dim")]
    focus = state.layout.focus
    if focus:
        info = state.roles.get(focus)
        where.append((f"▸ {inert(focus)} ", "status"))
        where.append((f"({info.status if info else '?'}) ", "status dim"))
    alerts = _alerts(state)
    if chrome.message is not None:
        message = (" " + chrome.message + " ", "status message")
        # A message that fits whole without the name and the focused role
        # is shown whole (its end is often the command to run, such as a
        # rollback's undo); they are back once it has gone.
        if _width([*tags, *where, *alerts, message]) > cols >= _width([*tags, *alerts, message]):
            where = []
        alerts.append(message)
    pieces = [*tags, *where, *alerts]
    hint = f" {k.display_name(chrome.prefix)} ? help "
    used = _width(pieces)
    if used + len(hint) < cols:
        pieces += [(" " * (cols - used - len(hint)), "status"), (hint, "status dim")]
    # A message too long for the line ends in "…" rather than stopping short.
    return clipped_line(cols, pieces, "status")


def _width(pieces: list[tuple[str, str]]) -> int:
    return sum(text_width(text) for text, _ in pieces)


def _alerts(state: DeckState) -> list[tuple[str, str]]:
    """The gateway and the gates waiting: kept on the line, a message or not."""
    pieces = []
    if state.gateway is not None:
        attr = "status waiting" if state.gateway == "down" else "status dim"
        pieces.append((f" gateway {state.gateway} ", attr))
    gates = len(state.gates)
    if gates:
        pieces.append((f" ⚑ {gates} gate{'s' if gates != 1 else ''} waiting ", "status waiting"))
    return pieces


def shown(state: DeckState, chrome: Chrome, cols: int) -> tuple:
    """Everything :func:`render` reads: the line is built again only when
    this changed (every frame has a status line; an echo frame must stay
    cheap)."""
    focus = state.layout.focus
    info = state.roles.get(focus) if focus else None
    pane = state.panes.get(focus) if focus else None
    return (cols, chrome, focus, info.status if info else None,
            pane is not None and pane.scroll is not None, state.layout.zoomed,
            state.broadcast, state.gateway, len(state.gates))


def mode_tags(state: DeckState, chrome: Chrome) -> list[tuple[str, str]]:
    """What the keys do right now: prefix, resize, scroll, zoom, broadcast, editor."""
    tags = []
    if chrome.mode == "prefix":
        tags.append((" PREFIX ", "status accent"))
    elif chrome.mode == "resize":
        tags.append((" RESIZE  arrows/hjkl, Esc ends ", "status waiting"))
    focus = state.layout.focus
    pane = state.panes.get(focus) if focus else None
    if pane is not None and pane.scroll is not None:
        tags.append((" SCROLL  PgUp/PgDn / n N q ", "status scroll"))
    if state.layout.zoomed:
        tags.append((" ZOOM ", "status accent"))
    if state.broadcast:
        tags.append((" BROADCAST ", "status waiting"))
    if chrome.editing:
        tags.append((" EDITOR ", "status accent"))
    return tags
