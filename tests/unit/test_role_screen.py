"""A role's emulated screen is made by its actor right after the agent is
spawned and before its reader starts, so the emulator's import runs beside
the agents' start and every byte the agent writes reaches the screen; who
asks for it earlier gets a blank screen of the role's size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from choragos.actors import messages as m
from choragos.actors.role import RoleActor, RoleState, new_state, spec_profile
from choragos.actors.rolehost import RoleHost
from choragos.config.model import RoleSpec
from choragos.roles.launch import Launch
from tests.fakehost import Core, FakeClock, FakeTimers, Inbox


class Agent:
    """What the actor asks of a spawned process, recorded."""

    pid = 4242

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.sizes: list[tuple[int, int]] = []

    def write(self, data: bytes) -> bool:
        self.written.append(data)
        return True

    def poll(self) -> None:
        return None

    def resize(self, cols: int, rows: int) -> None:
        self.sizes.append((cols, rows))


class Machine:
    """A host whose spawn and reader note whether the role's screen was made."""

    def __init__(self, state: RoleState) -> None:
        self.state, self.agent, self.seen = state, Agent(), []
        self.feed: Any = None
        self.host = RoleHost(now=FakeClock().now, spawn=self.spawn, reader=self.reader)

    def spawn(self, argv: list[str], cwd: Path, env: dict, cols: int, rows: int) -> Agent:
        self.seen.append(("spawned", self.state.screen_made is not None, (cols, rows)))
        return self.agent

    def reader(self, child: Agent, data: Any, exited: Any, name: str, on_lull: Any) -> Any:
        machine = self

        class Reader:
            def start(self) -> None:
                machine.seen.append(("reading", machine.state.screen_made is not None))
                machine.feed = data

        return Reader()


def _role(tmp_path: Path, cols: int = 100, rows: int = 30) -> tuple[RoleActor, Machine]:
    spec = RoleSpec(name="coder", command="agent", args=())
    state = new_state(Launch(spec, {}, tmp_path, spec_profile(spec)), tmp_path, cols, rows)
    machine = Machine(state)
    timers = FakeTimers(FakeClock())
    return RoleActor(state, Core(), timers, None, Inbox(), machine.host), machine


def test_the_screen_is_made_after_the_spawn_and_before_the_reader(tmp_path: Path) -> None:
    actor, machine = _role(tmp_path)
    actor.on_start()
    assert actor.s.screen_made is None  # the actor's start loads no emulator
    actor.handle(m.Spawn())
    assert machine.seen == [("spawned", False, (100, 30)), ("reading", True)]
    machine.feed(b"hello \x1b[6n")  # the agent's first bytes, and a cursor report asked
    term = actor.s.terminal
    assert (term.cols, term.rows) == (100, 30)
    assert term.display()[0].rstrip() == "hello"
    assert machine.agent.written == [b"\x1b[1;7R"]  # the terminal's answer reached the agent
    # Its transcript has the spawn's header: made with the screen.
    log = tmp_path / ".choragos" / "logs" / "coder.log"
    assert "pid 4242" in log.read_text()


def test_a_screen_asked_for_before_the_spawn_is_blank_and_is_the_one_fed(tmp_path: Path) -> None:
    actor, machine = _role(tmp_path)
    actor.handle(m.Resize(140, 50))  # the deck's tile, before the agent runs
    early = actor.s.terminal
    assert (early.cols, early.rows) == (140, 50)
    assert all(not line.strip() for line in early.display())
    actor.handle(m.Spawn())
    assert machine.seen[0] == ("spawned", True, (140, 50))
    machine.feed(b"ready")
    assert actor.s.terminal is early
    assert early.display()[0].rstrip() == "ready"


def test_a_resize_before_the_screen_is_made_sizes_the_agent_s_terminal(tmp_path: Path) -> None:
    actor, machine = _role(tmp_path)
    actor.handle(m.Resize(90, 60))
    assert actor.s.screen_made is None
    actor.handle(m.Spawn())
    assert machine.seen[0] == ("spawned", False, (90, 60))
    actor.handle(m.Resize(110, 60))  # once it runs: the screen and the agent's PTY follow
    assert (actor.s.terminal.cols, actor.s.terminal.rows) == (110, 60)
    assert machine.agent.sizes == [(110, 60)]
