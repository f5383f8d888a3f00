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

An echo may come in pieces: an agent that writes each character on its own
is read a character at a time, and the first piece is drawn before the rest
has arrived.  Releasing the neighbours then would let a flood's parsing in
ahead of the rest of the echo.  So the typed role's reader counts what it
feeds (:meth:`EchoWait.fed`), and a drawn echo releases the others only once
at least as many bytes came back as were typed (an agent that redraws its
input line answers a key with more than that; one that shows less, or
nothing, is released by the hold's end).
Nothing is dropped: a held reader feeds its output once released, and its
agent meanwhile blocks on a full PTY as it would behind a slow terminal.
"""

from __future__ import annotations

import threading
import time

HOLD = 0.02  # the longest the other panes' output waits for one key's echo


class EchoWait:
    """Which role's echo is awaited, and the readers holding back for it.

    Every key typed and every piece an agent writes passes here, so the
    common steps are plain attribute reads and one lock: ``released`` says
    whether anything is awaited, and a reader that must wait sleeps on a
    condition of the same lock, notified only when a reader is waiting."""

    def __init__(self, hold: float = HOLD) -> None:
        self.hold = hold
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._role: str | None = None
        self._until = 0.0
        self._owed = 0  # bytes typed at the awaited role that have not come back yet
        self.released = True  # no echo awaited (changed under the lock, read without)
        self._releases = 0  # times the awaited echo was released (a waiter's wake-up)
        self.waiting = 0  # readers holding their output now (tests watch it)
        self.held = 0  # times a reader held its output

    def expect(self, role: str, size: int = 1) -> None:
        """``size`` bytes of keys were just written to ``role``'s PTY: their
        echo is on its way."""
        with self._lock:
            now = time.monotonic()
            if self._role == role and not self.released and now < self._until:
                self._owed += size  # typed again before the last echo was whole
            else:
                self._owed = size  # a hold that ran out owes nothing any more
            self._role = role
            self._until = now + self.hold
            self.released = False

    def fed(self, role: str, size: int) -> None:
        """``role``'s reader is about to feed ``size`` bytes of its output."""
        if self._role != role:  # read without the lock: the common case costs nothing
            return
        with self._lock:
            if self._role == role:
                self._owed -= size

    def drawn(self, role: str | None = None) -> None:
        """The echo awaited (of ``role``, or whichever is) is on the screen;
        with a role named, the others are released only once the echo is
        whole (see above)."""
        with self._lock:
            if role is not None and (role != self._role or self._owed > 0):
                return
            self._role = None
            self.released = True
            self._releases += 1
            if self.waiting:
                self._cond.notify_all()

    def awaited(self, role: str) -> bool:
        """Whether ``role``'s echo is on its way (its output must be drawn at
        once).  Read without the lock: a stale answer costs one batch drawn
        early, or held a batch's time."""
        return self._role == role and not self.released

    def reading(self, role: str, size: int) -> bool:
        """``role``'s reader is about to feed ``size`` bytes: its turn taken
        (:meth:`take_turn`), an echo's bytes counted (:meth:`fed`); returns
        whether this output is the awaited echo (:meth:`awaited`).  One call
        for every piece read, and next to nothing while no echo is awaited
        (the awaited echo's piece: one lock, no other call)."""
        awaited = self._role  # read without the lock, as awaited() does
        if awaited is None:
            return False
        if awaited != role:
            self.take_turn(role)
            if self._role != role:  # as fed() reads it: typed at meanwhile, it counts
                return False
        with self._lock:
            if self._role != role:
                return False
            self._owed -= size
            return not self.released

    def take_turn(self, role: str) -> None:
        """Called by ``role``'s reader before it feeds what it read: returns at
        once unless another role's echo is awaited, else when it is drawn or
        the hold is over."""
        if self.released:
            return
        with self._lock:
            if self._role is None or self._role == role:
                return
            end = self._until
            left = end - time.monotonic()
            if left <= 0:
                return
            self.waiting += 1
            self.held += 1
            releases = self._releases
            try:
                # Until this echo is released (a later key's echo counts as
                # released too: the wait is for one key) or the hold is over.
                while self._releases == releases and left > 0:
                    self._cond.wait(left)
                    left = end - time.monotonic()
            finally:
                self.waiting -= 1
