"""Keys first: while the echo of a typed key is on its way, the other panes'
output waits for it.

The session parses every pane's output in one interpreter.  With neighbours
flooding, the threads that carry a keystroke's echo (the one that writes
the key, the reader that takes the agent's answer and draws it) wait their
turn for the interpreter behind the floods' parsing at every step, and the
echo comes back several times later than on a quiet machine.  So the deck
says when it wrote keys straight to a role's PTY (:meth:`EchoWait.expect`)
and when the echo is drawn (:meth:`EchoWait.drawn`); in between, every
other role's reader holds the output it has just read
(:meth:`EchoWait.take_turn`) -- a short while at most, so an agent that
does not echo costs its neighbours no more than ``hold`` seconds per key.
Nothing is dropped: a held reader feeds its output once released, and its
agent meanwhile blocks on a full PTY as it would behind a slow terminal.
"""

from __future__ import annotations

import threading
import time

HOLD = 0.02  # the longest the other panes' output waits for one key's echo


class EchoWait:
    """Which role's echo is awaited, and the readers holding back for it."""

    def __init__(self, hold: float = HOLD) -> None:
        self.hold = hold
        self._lock = threading.Lock()
        self._role: str | None = None
        self._until = 0.0
        self._released = threading.Event()
        self._released.set()
        self.waiting = 0  # readers holding their output now (tests watch it)
        self.held = 0  # times a reader held its output

    def expect(self, role: str) -> None:
        """Keys were just written to ``role``'s PTY: its echo is on its way."""
        with self._lock:
            self._role = role
            self._until = time.monotonic() + self.hold
            self._released.clear()

    def drawn(self, role: str | None = None) -> None:
        """The echo awaited (of ``role``, or whichever is) is on the screen."""
        with self._lock:
            if role is not None and role != self._role:
                return
            self._role = None
            self._released.set()

    def take_turn(self, role: str) -> None:
        """Called by ``role``'s reader before it feeds what it read: returns at
        once unless another role's echo is awaited, else when it is drawn or
        the hold is over."""
        if self._released.is_set():
            return
        with self._lock:
            if self._role is None or self._role == role:
                return
            left = self._until - time.monotonic()
            if left <= 0:
                return
            self.waiting += 1
            self.held += 1
        try:
            self._released.wait(left)
        finally:
            with self._lock:
                self.waiting -= 1
