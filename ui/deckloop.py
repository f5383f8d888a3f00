"""The deck's urwid glue: the main loop, which draws only for an attached
client and only when something changed, and the widget the deck is drawn
as (tiles, sidebar and status line as one canvas).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import urwid

log = logging.getLogger("choragos.deck")


class _Loop(urwid.MainLoop):
    """A main loop that draws only for an attached client, and only on change."""

    deck: Any  # the Deck this loop draws

    # Everything the loop runs for the deck holds the deck's drawing lock, so
    # the echo lane (drawing from a pane's reader thread) never sees a state
    # half changed.

    def set_alarm_in(self, sec: float, callback: Callable[..., Any],
                     user_data: Any = None) -> Any:
        return super().set_alarm_in(sec, self.deck.lane.locked(callback), user_data)

    def watch_pipe(self, callback: Callable[[bytes], bool | None]) -> int:
        return super().watch_pipe(self.deck.lane.locked(callback))

    def draw_screen(self) -> None:
        lane = self.deck.lane
        with lane.drawing:
            self._draw()
            lane.open = self.deck.attached

    def _draw(self) -> None:
        deck = self.deck
        if not deck.attached or not deck.dirty:
            return
        deck.dirty = False
        size = self.screen.get_cols_rows()
        plain = self.widget is deck.view and self.screen_size == size
        if plain:
            # No dialog over the panes: only the rows that changed are written.
            frame = deck.render_base(*size, True)
            if self.screen.paint(*frame, size):
                deck.drawn()
                return
            deck.view.prepared = frame
        deck.view._invalidate()
        super().draw_screen()
        # urwid draws nothing while a resize is pending: then no row is known.
        whole = self.widget is deck.view and not self.screen._resized
        drawn = deck.view.last if whole else None
        self.screen.drawn_whole(drawn[0] if drawn else None, drawn[1] if drawn else None,
                                self.screen_size or size)
        deck.drawn()


class DeckView(urwid.Widget):
    """Tiles, sidebar and status line, drawn as one canvas."""

    _sizing = frozenset([urwid.Sizing.BOX])
    _selectable = True

    def __init__(self, deck: Any) -> None:
        super().__init__()
        self.deck = deck
        self.prepared: tuple | None = None  # a frame render_base just made for this size
        self.last: tuple | None = None  # the frame rendered last

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        cols, rows = size
        prepared, self.prepared = self.prepared, None
        if prepared is not None and len(prepared[0]) == rows and focus:
            lines, cursor = prepared
        else:
            lines, cursor = self.deck.render_base(cols, rows, focus)
        self.last = (lines, cursor)
        return urwid.TextCanvas([line[0] for line in lines], [line[1] for line in lines],
                                cursor=cursor, maxcol=cols, check_width=False)

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        return key
