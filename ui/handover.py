"""How soon a thread that waits for the interpreter gets it: sooner while
the operator types.

The session parses every pane's output in one interpreter.  A thread that
wakes while another runs Python waits a whole switch interval before it
may ask for the interpreter (CPython's rule), and with several flooding
panes it may lose that round to another waiting reader and wait again.
A keystroke's way holds two such wake-ups (the attach pump that reads the
key, the pane's reader that takes its echo), so with flooding neighbours
each waited about an interval, often two or three.

While the operator types, the interval is :data:`TYPING` (the threads hand
over more often: a few microseconds of switching each time some other
thread waits); :data:`WINDOW` seconds after the last key it is put back.
The first key after a pause still goes at the session's usual interval.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

TYPING = 0.0001  # seconds: the switch interval while keys come
WINDOW = 2.0  # seconds after the last key until the usual interval is back


class Handover:
    """The switch interval, lowered by :meth:`typed` and put back by
    :meth:`check` once ``window`` seconds passed with no key.  One thread
    (the attach pump) calls both; ``due_ms`` is its poll's longest wait."""

    def __init__(self, typing: float = TYPING, window: float = WINDOW,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.typing = typing
        self.window = window
        self.now = now
        self.lowered = 0  # times the interval was lowered (tests count them)
        self._usual: float | None = None  # the interval to put back, while lowered
        self._until = 0.0

    @property
    def active(self) -> bool:
        return self._usual is not None

    def typed(self) -> None:
        """Keys came: the short interval, for ``window`` seconds more."""
        self._until = self.now() + self.window
        if self._usual is None:
            usual = sys.getswitchinterval()
            if usual <= self.typing:
                return  # already as short (another session in this process, a test)
            self._usual = usual
            sys.setswitchinterval(self.typing)
            self.lowered += 1

    def due_ms(self) -> int | None:
        """Milliseconds until :meth:`check` must put the interval back; None
        when it is not lowered."""
        if self._usual is None:
            return None
        return max(int((self._until - self.now()) * 1000) + 1, 0)

    def check(self) -> None:
        """Put the usual interval back once the window is over."""
        if self._usual is not None and self.now() >= self._until:
            self.restore()

    def restore(self) -> None:
        """The usual interval now (the client left, the server closes)."""
        if self._usual is not None:
            sys.setswitchinterval(self._usual)
            self._usual = None
