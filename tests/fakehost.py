"""A role actor in memory: a fake clock, fake timers and a fake PTY.

:class:`World` builds a real :class:`~choragos.actors.role.RoleActor` on
a :class:`~choragos.actors.rolehost.RoleHost` whose clock only moves when
the test runs the world, with a :class:`FakeAgent` in place of the PTY: a
line editor at a prompt, drawn on the role's real emulated terminal, whose
echo, Enter handling, starving and stopping the test scripts.  What the
agent draws goes through the role's real output feed (the reader thread's
callback), notice to the actor included.  Messages the actor tells itself
and timers' messages are handled one at a time, in order, on the test's
thread, as the actor's inbox would.  No real time passes and no process
runs.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choragos.actors import messages as m
from choragos.actors import roleio
from choragos.actors.role import RoleActor, new_state, spec_profile
from choragos.actors.rolehost import RoleHost
from choragos.config.model import RoleSpec
from choragos.roles.launch import Launch
from choragos.roles.rolestatus import RoleStatus

PASTE_ON, PASTE_OFF = b"\x1b[200~", b"\x1b[201~"


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t


class FakeTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimers:
    """The session's timers on the fake clock: ``after`` as the real ones,
    ``call`` for the fake agent's own doings."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.heap: list[tuple[float, int, FakeTimer, Callable[[], None]]] = []
        self.seq = itertools.count()

    def after(self, delay: float, target: Any, message: Any) -> FakeTimer:
        return self.call(delay, lambda: target.tell(message))

    def call(self, delay: float, fn: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer()
        heapq.heappush(self.heap, (self.clock.t + max(0.0, delay), next(self.seq), timer, fn))
        return timer

    def pop_due(self, until: float) -> Callable[[], None] | None:
        while self.heap and self.heap[0][0] <= until:
            due, _, timer, fn = heapq.heappop(self.heap)
            if not timer.cancelled:
                self.clock.t = max(self.clock.t, due)
                return fn
        return None


class Inbox:
    """The actor's handle: what is told waits its turn."""

    def __init__(self) -> None:
        self.waiting: deque[Any] = deque()
        self.closed = False

    def tell(self, message: Any) -> None:
        self.waiting.append(message)


class Core:
    def __init__(self) -> None:
        self.told: list[Any] = []

    def tell(self, message: Any) -> None:
        self.told.append(message)

    def outcomes(self, final: bool = True) -> list[m.InjectionOutcome]:
        return [x for x in self.told
                if isinstance(x, m.InjectionOutcome) and x.final is final]

    def view(self) -> m.RoleView | None:
        views = [x.view for x in self.told if isinstance(x, m.RoleReported)]
        return views[-1] if views else None


@dataclass
class FakeAgent:
    """A line editor at ``prompt`` on the role's terminal, as a fake PTY.

    Knobs a test sets: ``echo_after`` (s from reading a key to drawing it),
    ``shows_text`` (False: it never draws what is typed), ``paste_window``
    (an Enter read this soon after text is a newline in the input, as agent
    TUIs take text and Enter that arrive together), ``deaf_enters`` (that
    many Enters are ignored), ``enter_takes`` (s it works, on a CPU, between
    reading an Enter and taking the line), ``bracketed`` (mode 2004 on), ``chatter``
    (after each echo, this many lines of output 50 ms apart), and the
    machine's doings: :meth:`starve` (nothing read until then),
    ``stopped`` (SIGSTOP), ``busy`` (on a CPU), ``wants`` (the share of
    the clock its threads want a CPU while not busy; None: the system
    gives no figures).
    """

    world: World
    prompt: str = "agent> "
    echo_after: float = 0.005
    shows_text: bool = True
    paste_window: float = 0.0
    deaf_enters: int = 0
    enter_takes: float = 0.0
    bracketed: bool = False
    chatter: int = 0
    stopped_: bool = False
    busy: bool = False
    wants: float | None = 0.01
    pid: int = 4242
    wanted: tuple[float, float] = (0.0, 0.0)  # (clock, ns) when last read
    writes: list[tuple[float, bytes]] = field(default_factory=list)
    submitted: list[str] = field(default_factory=list)
    unread: bytearray = field(default_factory=bytearray)
    unfed: bytearray = field(default_factory=bytearray)  # written, not yet fed: see write_unfed
    line: str = ""
    last_text_read: float = -1.0
    starved_until: float = 0.0

    # -- the Child protocol ---------------------------------------------

    def write(self, data: bytes) -> bool:
        self.writes.append((self.world.clock.t, bytes(data)))
        self.unread += data
        self._read()
        return True

    def try_write(self, data: bytes) -> bytes | None:
        self.write(data)
        return None

    def unread_input(self) -> int:
        return len(self.unread)

    def output_unseen(self) -> bool:
        return bool(self.unfed)

    def stopped(self) -> bool:
        return self.stopped_

    def running(self) -> bool:
        return self.busy

    def wanted_ns(self) -> int | None:
        """Grows by ``wants`` of the clock (all of it while busy) since the
        last reading."""
        if self.wants is None:
            return None
        at, ns = self.wanted
        rate = 1.0 if self.busy else 0.0 if self.stopped_ else self.wants
        self.wanted = (self.world.clock.t, ns + (self.world.clock.t - at) * rate * 1e9)
        return int(self.wanted[1])

    def poll(self) -> None:
        return None

    def signal_group(self, sig: int) -> bool:
        return True

    def resize(self, cols: int, rows: int) -> None:
        pass

    def terminate(self, grace: float = 3.0) -> None:
        return None

    def close(self) -> None:
        pass

    # -- the agent ------------------------------------------------------

    def start(self) -> None:
        """Draw the prompt (and ask for bracketed paste if it does)."""
        self.draw(("\x1b[?2004h" if self.bracketed else "") + self.prompt)

    def draw(self, text: str) -> None:
        """Output, as the reader feeds it: the terminal, and a notice to the actor."""
        self.world.feed.data(text.encode())

    def write_unfed(self, text: str, fed_after: float) -> None:
        """Output the reader takes only ``fed_after`` seconds later (a reader
        the busy machine runs late): meanwhile the screen does not show it."""
        self.unfed += text.encode()

        def fed() -> None:
            data, self.unfed = bytes(self.unfed), bytearray()
            self.draw(data.decode())
        self.world.timers.call(fed_after, fed)

    def starve(self, seconds: float) -> None:
        """The machine does not run the agent for ``seconds``: it reads nothing."""
        self.starved_until = self.world.clock.t + seconds
        self.world.timers.call(seconds, self._read)

    def stop(self, seconds: float) -> None:
        """Stopped from outside for ``seconds``, then read on."""
        self.stopped_ = True
        self.starved_until = self.world.clock.t + seconds

        def cont() -> None:
            self.stopped_ = False
            self._read()
        self.world.timers.call(seconds, cont)

    def _read(self) -> None:
        """Read all the terminal holds, the way a TUI reads what arrived together."""
        now = self.world.clock.t
        if self.stopped_ or now < self.starved_until or not self.unread:
            return
        data, self.unread = bytes(self.unread), bytearray()
        data = data.replace(PASTE_ON, b"").replace(PASTE_OFF, b"")
        parts = data.decode().split("\r")
        text_in_read = False
        for i, part in enumerate(parts):
            if part:
                self._take_text(part, now)
                text_in_read = True
            if i < len(parts) - 1:  # an Enter after this part
                self._take_enter(now, pasted=text_in_read)

    def _take_text(self, text: str, now: float) -> None:
        if not text:
            return
        self.line += text
        self.last_text_read = now
        if self.shows_text:
            self.world.timers.call(self.echo_after, lambda: self._echo(text))

    def _echo(self, text: str) -> None:
        self.draw(text)
        for n in range(self.chatter):
            self.world.timers.call(0.05 * (n + 1), lambda: self._chatter())

    def _chatter(self) -> None:
        """Output elsewhere on the screen (a spinner, a clock): the cursor stays."""
        self.world.feed.data(b"\x1b7\x1b[1;1Hx\x1b8")

    def _take_enter(self, now: float, pasted: bool) -> None:
        if pasted or now - self.last_text_read < self.paste_window:
            self.line += "\n"  # a newline in the input, not a submission
            return
        if self.deaf_enters:
            self.deaf_enters -= 1
            return
        line, self.line = self.line, ""
        if not self.enter_takes:
            self._submit(line)
            return
        self.busy = True

        def done() -> None:
            self.busy = False
            self._submit(line)
        self.world.timers.call(self.enter_takes, done)

    def _submit(self, line: str) -> None:
        self.submitted.append(line)
        self.draw("\r\nok\r\n" + self.prompt)


class World:
    """One role in memory: its real actor, state and terminal; fake all else."""

    def __init__(self, tmp_path: Path, cols: int = 120, **agent: Any) -> None:
        self.clock = FakeClock()
        self.timers = FakeTimers(self.clock)
        self.core = Core()
        self.inbox = Inbox()
        spec = RoleSpec(name="coder", command="agent", args=())
        self.state = new_state(Launch(spec, {}, tmp_path, spec_profile(spec)), tmp_path,
                               cols=cols)
        host = RoleHost(now=self.clock.now, spawn=self._no_spawn, reader=self._no_spawn)
        self.actor = RoleActor(self.state, self.core, self.timers, None, self.inbox, host)
        self.agent = FakeAgent(self, **agent)
        s = self.state
        s.child, s.gen, s.booted, s.status = self.agent, 1, True, RoleStatus.IDLE
        self.feed = roleio.OutputFeed(s, self.inbox, s.gen, self.clock.now)
        self.agent.start()

    @staticmethod
    def _no_spawn(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a typing test spawns nothing")

    def tell(self, message: Any) -> None:
        self.inbox.tell(message)
        self._drain()

    def output(self, data: bytes) -> None:
        """The agent's output as its reader reads it: fed, the actor told."""
        self.feed.data(data)
        self._drain()

    def inject(self, text: str, injection_id: int = 1, kind: str = "notice") -> None:
        self.tell(m.Inject(m.Injection(injection_id, "coder", text, kind)))

    def run(self, seconds: float) -> None:
        """Let ``seconds`` pass: every timer due meanwhile fires, in order."""
        end = self.clock.t + seconds
        while (fn := self.timers.pop_due(end)) is not None:
            fn()
            self._drain()
        self.clock.t = end

    def run_until(self, done: Callable[[], Any], limit: float = 120.0) -> float:
        """Run until ``done()``; the fake seconds it took."""
        start = self.clock.t
        while not done():
            if self.clock.t - start > limit or not self.timers.heap:
                raise AssertionError(f"not done after {self.clock.t - start:.2f} fake s")
            nxt = self.timers.heap[0][0]
            self.run(max(0.0, nxt - self.clock.t))
        return self.clock.t - start

    def _drain(self) -> None:
        while self.inbox.waiting:
            self.actor.handle(self.inbox.waiting.popleft())

    def writes_of(self, data: bytes) -> list[float]:
        """When ``data`` was written, each time it was."""
        return [t for t, sent in self.agent.writes if data in sent]
