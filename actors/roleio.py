"""A role's PTY traffic that does not wait for the role actor's thread.

Two paths of a keystroke's echo used to cross the role actor: the
operator's keys (deck -> actor -> PTY) and the agent's output (reader
thread -> actor -> terminal).  Each hand-over between Python threads costs
0.1-0.2 ms, more when the machine is busy, so both now skip the actor:

* **Keys** typed in the deck are written to the PTY on the deck's thread
  (:func:`type_keys`).  :class:`~choragos.terminal.ptyproc.PtyChild` serialises its
  writes, so an injection's text (one write) never has a key land in the
  middle of it.  Keys can still land between an injection's text and its
  Enter, as they always could: typing into a pane that is being injected
  into is the operator's call.  Keys the PTY does not take at once (full,
  or another write in progress) and keys typed into a paused role wait in
  :class:`KeyQueue`, in order, and the actor writes them (:class:`FlushKeys`);
  while anything waits there, later keys queue behind it.
* **Output** is fed to the role's terminal on the PTY reader's thread
  (:class:`OutputFeed`); the terminal's own lock keeps renderers consistent
  and its change callback wakes the deck from there.  The actor gets one
  :class:`OutputSeen` notice per batch (not per chunk) and does what needs
  its timers: status classification, quiet and stall checks, boot
  readiness; echo waits of injections read the screen itself.

Everything here lives on the role's state, never on an actor instance, so
an actor the supervisor replaces takes over with the same queue and feed.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from choragos.actors.handle import ActorGone
from choragos.roles.rolestatus import RoleStatus
from choragos.session import hopstamps

GONE = (RoleStatus.STARTING, RoleStatus.EXITED, RoleStatus.FAILED)

# How long a pane's terminal may hold log lines back to draw them with the
# next ones (see Terminal's ``hold``): a flood is read 4 KB at a time, and
# drawing it in batches cuts what it costs the session by a third or more.
# Below the frame budget of a neighbour pane's output, so nobody sees it;
# never while a key's echo is on its way.
FLOOD_HOLD = 0.025


NAMED_KEYS = {"enter": b"\r", "esc": b"\x1b", "tab": b"\t", "space": b" ",
              "backspace": b"\x7f", "ctrl+c": b"\x03"}
CURSOR_KEYS = {"up": b"\x1b[A", "down": b"\x1b[B", "right": b"\x1b[C", "left": b"\x1b[D"}
# DECCKM: an application that asked for "application cursor keys" reads SS3 forms.
CURSOR_KEYS_APP = {name: b"\x1bO" + seq[-1:] for name, seq in CURSOR_KEYS.items()}


@dataclass(frozen=True)
class FlushKeys:
    """Write the oldest waiting keys (if the role is not paused)."""


@dataclass(frozen=True)
class OutputSeen:
    """The reader fed output of process ``gen`` to the terminal since the last notice."""

    gen: int


@dataclass
class KeyQueue:
    """Operator keys waiting for the actor, oldest first.

    ``lock`` also guards the paused state's changes (the actor pauses and
    resumes under it), so a key is either written before a pause or held
    until the resume, never written to a role the deck thinks is running
    while the actor already holds its keys.
    """

    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: deque[bytes] = field(default_factory=deque)
    typed: int = 0  # operator keys taken, ever: the role's card waits while it moves


def type_keys(state: Any, data: bytes, tell: Callable[[Any], None]) -> None:
    """The operator's keys for ``state``'s agent, from any thread: written
    now when nothing waits ahead of them, else queued for the actor."""
    queue: KeyQueue = state.keys
    with queue.lock:
        child = state.child
        if child is None or state.status in GONE:
            return
        queue.typed += 1
        if state.status is RoleStatus.PAUSED:
            queue.waiting.append(data)  # the resume sends them
            return
        if not queue.waiting:
            rest = child.try_write(data)
            if hopstamps.ON:
                hopstamps.mark("key-written", state.spec.name)
            if not rest:  # all written, or the PTY is gone (the reader reports the exit)
                return
            data = rest
        queue.waiting.append(data)
    with contextlib.suppress(ActorGone):
        tell(FlushKeys())


def flush_one(state: Any) -> None:
    """On the actor: write the oldest waiting keys.  They leave the queue only
    once written, so keys typed meanwhile queue behind them."""
    queue: KeyQueue = state.keys
    with queue.lock:
        if not queue.waiting or state.status is RoleStatus.PAUSED:
            return
        data = queue.waiting[0]
        child = state.child
    if child is not None and state.status not in GONE:
        child.write(data)
    with queue.lock:
        if queue.waiting and queue.waiting[0] is data:
            queue.waiting.popleft()


class OutputFeed:
    """The reader thread's callbacks for one process of a role."""

    def __init__(self, state: Any, me: Any, gen: int,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.state = state
        self.me = me
        self.gen = gen
        self.now = now
        # The role's screen is made once, before its first reader starts
        # (``make_screen``), and kept across respawns: taken here, not on
        # every piece read.
        self.terminal = state.terminal
        self._short_on: int | None = None  # the reader thread given a short slice

    def data(self, data: bytes) -> float | None:
        """Feed the terminal here; tell the actor only when no notice is pending.
        Once the actor is given up the reader keeps draining the PTY (so the
        agent never blocks on a full one) and drops what it reads.
        Returned: when the terminal holds log lines back, the seconds after
        which :meth:`lull` must draw them if no more output came."""
        s = self.state
        if hopstamps.ON:
            hopstamps.mark("out-read", s.spec.name)
        if self.me.closed:
            return None
        # Keys first: another pane's echo is on its way, or this is that echo.
        eager = s.echo_wait is not None and s.echo_wait.reading(s.spec.name, len(data))
        with s.feed_lock:  # the actor's respawn bumps gen and resets the screen under it
            if self.gen != s.gen:
                return None
            s.last_output = self.now()
            due = self.terminal.feed(data, eager=eager)
        if eager or (due is not None and self._short_on is not None):
            self._slice(eager)
        if hopstamps.ON:  # the bench tells a neighbour's costly feeds (a batch drawn) by these
            hopstamps.mark("fed", s.spec.name)
        if s.output_noticed or (s.classify_pending and s.typing is None):
            # A notice or classification on its way reads the screen after
            # it clears its flag, so it takes this output in too: a notice
            # now would wake the actor to change nothing (for a flooding
            # pane, once per chunk read).  While a line is being typed in,
            # its echo and its clearing are looked for as they arrive.
            return due
        self._notice()
        return due

    def _slice(self, typed_at: bool) -> None:
        """A reader whose pane is typed at takes the shortest slice, one that
        holds a flood's batch the default (see choragos.terminal.timeslice);
        the kernel is asked only when that changes, as the echo's way calls
        this on every key."""
        me = threading.get_ident()
        if typed_at == (self._short_on == me):
            return
        # With the first key's echo, not the start.
        from choragos.terminal.timeslice import default_slice, short_slice

        if typed_at:
            self._short_on = me if short_slice() else None
        else:
            default_slice()
            self._short_on = None

    def lull(self) -> None:
        """The output stopped while log lines were held: draw them now
        (after another pane's echo, as a feed would)."""
        s = self.state
        if s.echo_wait is not None:
            s.echo_wait.take_turn(s.spec.name)
        if hopstamps.ON:
            hopstamps.mark("lull", s.spec.name)
        self.terminal.catch_up()
        if hopstamps.ON:
            hopstamps.mark("lull-drawn", s.spec.name)

    def _notice(self) -> None:
        # The actor clears the flag before it reads the state, so output fed
        # after that sends another notice, and output before it is covered.
        self.state.output_noticed = True
        try:  # not contextlib.suppress: this follows a key's echo on its thread
            self.me.tell(OutputSeen(self.gen))
        except ActorGone:
            return  # given up: the reader drains the PTY, the notice has no reader


def key_bytes(keys: tuple[str, ...], application_cursor: bool) -> bytes:
    """Named keys (``enter``, ``up``…) as the agent's terminal sends them."""
    cursor_keys = CURSOR_KEYS_APP if application_cursor else CURSOR_KEYS
    return b"".join(cursor_keys.get(key) or NAMED_KEYS[key] for key in keys)


def send_input(state: Any, data: bytes, tell: Callable[[Any], None]) -> None:
    """On the actor: an operator's keys; typed into a paused pane they wait
    for resume, and behind keys already waiting they queue."""
    queue: KeyQueue = state.keys
    if state.child is None or state.status in GONE:
        return
    with queue.lock:
        queue.typed += 1
        if state.status is RoleStatus.PAUSED or queue.waiting:
            queue.waiting.append(data)  # behind the keys already waiting
            held = state.status is RoleStatus.PAUSED
        else:
            held = None
    if held is None:
        state.child.write(data)
    elif not held:
        tell(FlushKeys())
