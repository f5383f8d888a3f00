"""The deck's loop: the urwid main loop, which draws only for an attached
client and only when something changed; the widget the deck is drawn as
(tiles, sidebar and status line as one canvas); the mailbox through
which other threads hand the loop work; and the event loop under it.

urwid's :class:`~urwid.SelectEventLoop` builds a new selector every pass
of its loop (``epoll_create1``, one ``epoll_ctl`` per watched descriptor,
the wait, ``close``) and makes two passes a wake-up: the one that runs the
work, then a look with no wait before it goes idle and draws.  The deck
wakes for every change a pane's reader or an actor hands it, so on a
keystroke's way those syscalls run on a core beside the echo's reader.
:class:`KeptSelectLoop` keeps one selector while it runs, and registers
or unregisters a descriptor when its watch is added or removed; its
passes do what urwid's do (alarms, the look before idle, the idle
callbacks) in the same order.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import urwid
from urwid.event_loop.select_loop import SelectEventLoop

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
        self.deck.after_draw()

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
        deck.drawn(shown=not self.screen._resized)


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


class KeptSelectLoop(SelectEventLoop):
    """A :class:`~urwid.SelectEventLoop` whose selector lives as long as its run."""

    def __init__(self) -> None:
        super().__init__()
        self._selector: selectors.BaseSelector | None = None
        self.selectors_made = 0  # tests count them: one a run

    def watch_file(self, fd: int, callback: Callable[[], Any]) -> int:
        handle = super().watch_file(fd, callback)
        if self._selector is not None:
            self._register(fd, callback)
        return handle

    def remove_watch_file(self, handle: int) -> bool:
        if not super().remove_watch_file(handle):
            return False
        if self._selector is not None:
            # urwid removes a pipe's watch before it closes the pipe; a
            # descriptor closed first has left the epoll set by itself.
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(handle)
        return True

    def run(self) -> None:
        """As urwid's, with the selector made once for the run and closed after it."""
        self._selector = selectors.DefaultSelector()
        self.selectors_made += 1
        try:
            for fd, callback in self._watch_files.items():
                self._register(fd, callback)
            with contextlib.suppress(urwid.ExitMainLoop):
                self._did_something = True
                while True:
                    with contextlib.suppress(InterruptedError):
                        self._loop()
        finally:
            selector, self._selector = self._selector, None
            selector.close()

    def _register(self, fd: int, callback: Callable[[], Any]) -> None:
        selector = self._selector
        assert selector is not None
        try:
            selector.modify(fd, selectors.EVENT_READ, callback)
        except KeyError:  # not registered yet
            selector.register(fd, selectors.EVENT_READ, callback)

    def _loop(self) -> None:
        """One pass, as urwid's (urwid 5.1's ``SelectEventLoop._loop``) but
        with the kept selector."""
        selector = self._selector
        assert selector is not None
        idle = False
        alarms = self._alarms
        if alarms or self._did_something:
            timeout = max(0.0, alarms[0][0] - time.monotonic()) if alarms else 0.0
            if self._did_something and (not alarms or timeout > 0):
                timeout, idle = 0.0, True  # look once more before going idle
            ready = self._select(selector, timeout)
        else:
            ready = self._select(selector, None)
        if not ready and idle:
            self._entering_idle()
            self._did_something = False
        for key in ready:
            # An earlier callback of this pass may have removed or replaced this watch.
            callback = self._watch_files.get(key.fd)
            if callback is None or callback is not key.data:
                continue
            callback()
            self._did_something = True
        # A descriptor always readable must not keep expired alarms from running.
        if alarms and alarms[0][0] <= time.monotonic():
            _at, _tie, alarm = heapq.heappop(alarms)
            alarm()
            self._did_something = True

    def _select(self, selector: selectors.BaseSelector,
                timeout: float | None) -> list[selectors.SelectorKey]:
        if not self._watch_files:  # urwid sleeps then (select() wants a descriptor)
            time.sleep(timeout or 0.0)
            return []
        return [key for key, _events in selector.select(timeout)]
