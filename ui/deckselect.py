"""The deck's event loop: urwid's select loop with one ``epoll`` set for
the whole run.

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

import heapq
import selectors
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from urwid.event_loop.abstract_loop import ExitMainLoop
from urwid.event_loop.select_loop import SelectEventLoop


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
            with suppress(KeyError, ValueError):
                self._selector.unregister(handle)
        return True

    def run(self) -> None:
        """As urwid's, with the selector made once for the run and closed after it."""
        self._selector = selectors.DefaultSelector()
        self.selectors_made += 1
        try:
            for fd, callback in self._watch_files.items():
                self._register(fd, callback)
            with suppress(ExitMainLoop):
                self._did_something = True
                while True:
                    with suppress(InterruptedError):
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
