"""The deck's loop: the urwid main loop, which draws only for an attached
client and only when something changed; the widget the deck is drawn as
(tiles, sidebar and status line as one canvas); and the mailbox through
which other threads hand the loop work.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import urwid

from choragos.ui.deckselect import KeptSelectLoop

log = logging.getLogger("choragos.deck")


class _Loop(urwid.MainLoop):
    """A main loop that draws only for an attached client, and only on change."""

    deck: Any  # the Deck this loop draws

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # One epoll set for the run, not one made and closed every pass.
        super().__init__(*args, event_loop=KeptSelectLoop(), **kwargs)

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


class Mailbox:
    """Work posted to the loop's thread from any thread, woken through one
    ``watch_pipe``: a burst of posts costs one wake-up.  ``redraw()`` is
    called after a wake-up whose work changed what is shown."""

    def __init__(self, redraw: Callable[[], None]) -> None:
        self.redraw = redraw
        self.wakeups = 0  # times the loop woke up for posted work
        self._inbox: deque = deque()
        self._guard = threading.Lock()
        self._wake_fd: int | None = None
        self._wake_pending = False

    def post(self, work: Callable[[], bool | None], wake: bool = True) -> None:
        """Run ``work`` on the loop's thread (it returns False when it needs no
        frame).  ``wake=False``: run it before whatever wakes the loop next,
        without waking it for this."""
        with self._guard:
            self._inbox.append(work)
            if not wake or self._wake_pending or self._wake_fd is None:
                return
            self._wake_pending = True
            fd = self._wake_fd
        with contextlib.suppress(OSError):
            os.write(fd, b"!")

    def open(self, loop: urwid.MainLoop) -> None:
        """Deliver to ``loop`` (before it runs); work posted meanwhile wakes it."""
        with self._guard:
            self._wake_fd = loop.watch_pipe(self._wake)
            self._wake_pending = bool(self._inbox)
            if self._inbox:
                os.write(self._wake_fd, b"!")

    def close(self, loop: urwid.MainLoop) -> None:
        """``loop`` ended: posts wait for the next one."""
        with self._guard:
            fd, self._wake_fd = self._wake_fd, None
        if fd is not None:
            loop.remove_watch_pipe(fd)

    def _wake(self, _data: bytes) -> bool:
        """Run the posted work; each item returns False when it needs no frame."""
        self.wakeups += 1
        with self._guard:
            self._wake_pending = False
            items = list(self._inbox)
            self._inbox.clear()
        redraw = False
        for work in items:
            redraw = work() is not False or redraw
        if redraw:
            self.redraw()
        return True
