"""The deck's bottom line: modes, the focused role and its state, the
gateway, waiting gates, the last message and the help hint."""

from __future__ import annotations

from typing import Any

from choragos.ui import keys as k
from choragos.ui.overlays import inert
from choragos.ui.pane import Line, RowBuilder


def render(deck: Any, cols: int) -> Line:
    """The status line of ``deck`` (a Deck), ``cols`` wide."""
    row = RowBuilder(cols)
    for text, attr in mode_tags(deck):
        row.add(text, attr)
    row.add(" choragos ", "status dim")
    state = deck.state
    focus = state.layout.focus
    if focus:
        info = state.roles.get(focus)
        row.add(f"▸ {inert(focus)} ", "status")
        row.add(f"({info.status if info else '?'}) ", "status dim")
    if state.gateway is not None:
        attr = "status waiting" if state.gateway == "down" else "status dim"
        row.add(f" gateway {state.gateway} ", attr)
    gates = len(state.gates)
    if gates:
        row.add(f" ⚑ {gates} gate{'s' if gates != 1 else ''} waiting ", "status waiting")
    if deck.message is not None:
        row.add(" " + deck.message[0] + " ", "status message")
    hint = f" {k.display_name(deck.keymap.prefix_spelling)} ? help "
    if row.col + len(hint) < cols:
        row.add(" " * (cols - row.col - len(hint)), "status")
        row.add(hint, "status dim")
    return row.line("status")


def shown(deck: Any, cols: int) -> tuple:
    """Everything :func:`render` reads: the line is built again only when
    this changed (every frame has a status line; an echo frame must stay
    cheap)."""
    state = deck.state
    focus = state.layout.focus
    info = state.roles.get(focus) if focus else None
    pane = state.panes.get(focus) if focus else None
    return (cols, deck.mode, focus, info.status if info else None,
            pane is not None and pane.scroll is not None, state.layout.zoomed,
            state.broadcast, deck.editor is not None, state.gateway, len(state.gates),
            deck.message[0] if deck.message is not None else None,
            deck.keymap.prefix_spelling)


def mode_tags(deck: Any) -> list[tuple[str, str]]:
    """What the keys do right now: prefix, resize, scroll, zoom, broadcast, editor."""
    tags = []
    if deck.mode == "prefix":
        tags.append((" PREFIX ", "status accent"))
    elif deck.mode == "resize":
        tags.append((" RESIZE  arrows/hjkl, Esc ends ", "status waiting"))
    state = deck.state
    focus = state.layout.focus
    pane = state.panes.get(focus) if focus else None
    if pane is not None and pane.scroll is not None:
        tags.append((" SCROLL  PgUp/PgDn / n N q ", "status scroll"))
    if state.layout.zoomed:
        tags.append((" ZOOM ", "status accent"))
    if state.broadcast:
        tags.append((" BROADCAST ", "status waiting"))
    if deck.editor is not None:
        tags.append((" EDITOR ", "status accent"))
    return tags
