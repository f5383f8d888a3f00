"""A role actor that crashes is replaced on the same state: the agent lives on."""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import replace
from types import SimpleNamespace

import pykka
import pytest

from choragos.actors import messages as m
from choragos.actors import typist as typist_module
from choragos.actors.role import KEYS_APART, RoleActor, new_state, spec_profile
from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
from choragos.actors.timers import Timers
from choragos.config.model import RoleSpec
from choragos.roles.launch import Launch
from choragos.terminal.ptyproc import PtyChild
from tests.conftest import pid_alive, wait_until
from tests.e2e.scenario import holds_for
from tests.integration.harness import AGENT, read_agent_log


class Core:
    def __init__(self) -> None:
        self.told: list = []

    def tell(self, message) -> None:
        self.told.append(message)

    def view(self) -> m.RoleView | None:
        """The role's view as the core last heard it (what the session publishes)."""
        reports = [x for x in self.told if isinstance(x, m.RoleReported)]
        return reports[-1].view if reports else None

    def outcomes(self) -> list[m.InjectionOutcome]:
        return [x for x in self.told if isinstance(x, m.InjectionOutcome) and x.final]


class Writes:
    """Every write into an agent's PTY, with the monotonic time it was made."""

    def __init__(self) -> None:
        self.log: list[tuple[float, bytes]] = []

    def spy(self, real):
        def write(child, data: bytes) -> bool:
            self.log.append((time.monotonic(), bytes(data)))
            return real(child, data)
        return write

    def gap_before(self, data: bytes, after: int = 0) -> tuple[bytes, float]:
        """The write before the first ``data`` (at or after index ``after``),
        and how long after it ``data`` was written."""
        i = next(i for i in range(max(after, 1), len(self.log)) if self.log[i][1] == data)
        return self.log[i - 1][1], self.log[i][0] - self.log[i - 1][0]


@pytest.fixture
def writes(monkeypatch) -> Writes:
    spy = Writes()
    monkeypatch.setattr(PtyChild, "write", spy.spy(PtyChild.write))
    return spy


@pytest.fixture
def agent_env() -> dict[str, str]:
    """Extra environment for the fixture agent (a test may override this)."""
    return {}


def start_role(tmp_path, command: str, args: tuple[str, ...],
               extra_env: dict[str, str] | None = None, name: str = "coder",
               **spec_keys) -> SimpleNamespace:
    """A role actor under a real supervisor, its agent spawned in a real PTY."""
    spec = RoleSpec(name=name, command=command, args=args, **spec_keys)
    env = {"PATH": "/usr/bin:/bin", "AGENT_LOG": str(tmp_path / "agent.jsonl"),
           **(extra_env or {})}
    state = new_state(Launch(spec, env, tmp_path, spec_profile(spec)), tmp_path)
    core, timers, events = Core(), Timers(), []
    sup = Supervisor.start(on_event=lambda name, **f: events.append((name, f)))
    handle = sup.ask(StartChild(ChildSpec(
        f"role:{name}", lambda h: RoleActor.start(state, core, timers, sup, h))))
    handle.tell(m.Spawn())
    return SimpleNamespace(handle=handle, state=state, core=core, events=events, sup=sup,
                           timers=timers)


def stop_role(role: SimpleNamespace) -> None:
    role.handle.ask(m.StopProcess(1.0), timeout=10)
    role.sup.ask(StopAll())
    role.sup.stop()
    role.timers.stop()
    assert not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()]


@pytest.fixture
def role(tmp_path, agent_env):
    started = start_role(tmp_path, sys.executable, (str(AGENT),), agent_env)
    yield started
    stop_role(started)


def test_the_agent_survives_its_actor_crashing(role):
    wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
    pid = role.state.child.pid
    role.handle.tell("not a message any handler knows")  # the handler raises
    wait_until(lambda: role.events, 5, message="the supervisor to replace the actor")
    assert role.events[0][0] == "actor restarted"
    assert pid_alive(pid) and role.state.child.pid == pid  # same process, same PTY
    role.handle.tell(m.Inject(m.Injection(1, "coder", "still listening", "notice")))
    wait_until(lambda: len(role.core.outcomes()) == 2, 10, message="an injection afterwards")
    assert role.core.outcomes()[-1].ok
    view = wait_until(lambda: role.core.view().status == "idle" and role.core.view(), 10,
                      message="idle after the injection")
    assert view.pid == pid


def submitted(role) -> list[str]:
    return [r["text"] for r in read_agent_log(role.state.workdir / "agent.jsonl", "submit")]


def test_the_enter_goes_in_its_own_write_after_the_echo_and_a_quiet_pane(writes, role):
    wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
    text, gap = writes.gap_before(b"\r")
    assert text.startswith(b"You are the coder role")
    assert gap >= role.state.profile.enter_quiet, f"Enter {gap:.3f}s after the text"
    mark = len(writes.log)
    role.handle.tell(m.TypeKeys("typed by hand", ("enter",)))  # the operator's keys too
    wait_until(lambda: "typed by hand" in submitted(role), 10, message="the operator's line")
    text, gap = writes.gap_before(b"\r", after=mark)
    assert text == b"typed by hand" and gap >= KEYS_APART, f"Enter {gap:.3f}s after the text"


def test_hostile_operator_input_reaches_the_agent_inert(writes, role):
    wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
    mark = len(writes.log)
    hostile = "ls\x1b[2J\x1b]0;pwned\x07\rrm -rf ~\x1b]52;c;ZXZpbA==\x07 done"
    role.handle.tell(m.TypeKeys(hostile, ("enter",)))
    wait_until(lambda: len(submitted(role)) == 2, 10, message="the operator's line")
    assert submitted(role)[-1] == "ls rm -rf ~ done"
    typed = b"".join(data for _, data in writes.log[mark:])
    assert typed == b"ls rm -rf ~ done\r"  # no escape, no early Enter


def test_an_exited_role_is_not_ready(role):
    wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
    wait_until(lambda: role.core.view().ready, 10, message="ready after the boot brief")
    os.kill(role.state.child.pid, signal.SIGKILL)
    wait_until(lambda: role.core.view().status == "exited", 10, message="the exit")
    view = role.core.view()
    assert not view.ready and view.pid is None


@pytest.fixture
def slow_confirm(monkeypatch) -> None:
    """The Enter's confirmation polled after the reply was classified, as a
    loaded machine may order them: the reply's screen is read while booting."""
    monkeypatch.setattr(typist_module, "CONFIRM_POLL", 0.4)
    monkeypatch.setattr(typist_module, "FAST_POLL", 0.4)  # the first looks too


@pytest.mark.parametrize("agent_env", [{"AGENT_PROMPT": "ready: "}])  # no prompt we know
def test_an_unknown_prompt_turns_idle_after_the_boot_reply_goes_quiet(slow_confirm, role):
    wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
    assert role.core.outcomes()[0].ok
    wait_until(lambda: role.core.view().status == "idle", 10,
               message="idle once the screen has been quiet")
    assert role.core.view().ready


def test_output_held_for_another_roles_echo_is_fed_once_it_is_drawn(tmp_path):
    """A real reader holds what it read while another role's echo is awaited,
    then feeds all of it: nothing is dropped."""
    from choragos.actors import roleio
    from choragos.terminal.echowait import EchoWait

    started = start_role(tmp_path, sys.executable, (str(AGENT),))
    try:
        wait_until(lambda: started.core.outcomes(), 15, message="the boot brief")
        wait = started.state.echo_wait = EchoWait(hold=60)
        wait.expect("orchestrator")  # the operator typed at another role
        roleio.type_keys(started.state, b"held line", started.handle.tell)
        wait_until(lambda: wait.waiting == 1, 10, message="the reader holding the echo")
        assert "held line" not in started.state.terminal.text()
        wait.fed("orchestrator", 1)  # the awaited echo, whole
        wait.drawn("orchestrator")
        wait_until(lambda: "held line" in started.state.terminal.text(), 10,
                   message="the held output fed")
        assert wait.held >= 1
    finally:
        stop_role(started)


def test_a_small_tile_never_shrinks_the_agents_terminal_below_its_floor(role):
    wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")

    def sizes() -> tuple[tuple[int, int], tuple[int, int]]:
        seen = role.state.child.size()  # what the agent sees
        return seen, (role.state.terminal.cols, role.state.terminal.rows)
    role.handle.ask(m.Resize(22, 4), timeout=5)
    assert sizes() == ((80, 24), (80, 24))  # the default floor, whatever the tile
    role.handle.ask(m.Resize(130, 10), timeout=5)
    assert sizes() == ((130, 24), (130, 24))  # each direction on its own
    spec = role.state.spec
    role.handle.ask(m.UpdateSpec(replace(spec, min_terminal=(150, 40)), role.state.env),
                    timeout=5)
    assert sizes() == ((150, 40), (150, 40))  # a reload moves the floor at once
    role.handle.tell(m.Inject(m.Injection(7, "coder", "x" * 300, "notice")))
    wait_until(lambda: len(role.core.outcomes()) == 2, 15, message="a long notice")
    assert role.core.outcomes()[-1].ok, role.core.outcomes()[-1]


def test_a_role_limited_while_booting_is_briefed_once_the_limit_is_over(tmp_path):
    role = start_role(tmp_path, sys.executable, (str(AGENT), "--boot", "1.5"))
    try:
        wait_until(lambda: (v := role.core.view()) and v.status == "booting", 10,
                   message="booting")
        role.handle.tell(m.Limited(time.time() + 60, "rate limit until later"))
        view = wait_until(lambda: (v := role.core.view()) and v.status == "limited" and v, 5,
                          message="limited")
        assert view.ready is False and view.detail == "rate limit until later"
        # Past the boot's quiet a brief would have been typed by now: none is.
        assert holds_for(lambda: role.core.outcomes() == [] and submitted(role) == [], 3)
        role.handle.tell(m.Limited(None))
        wait_until(lambda: role.core.outcomes(), 15, message="the boot brief after the limit")
        assert role.core.outcomes()[0].ok
        assert submitted(role)[0].startswith("You are the coder role")
    finally:
        stop_role(role)


def test_a_stopped_role_lets_go_of_its_transcript(tmp_path):
    log = str(tmp_path / ".choragos" / "logs" / "coder.log")

    def held() -> int:
        fds = os.listdir("/proc/self/fd")
        return sum(1 for fd in fds if _link(f"/proc/self/fd/{fd}") == log)

    role = start_role(tmp_path, sys.executable, (str(AGENT),))
    try:
        wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
        assert held() == 1
    finally:
        stop_role(role)
    assert held() == 0  # closed by the stop, not left to the garbage collector


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:  # an fd closed since the listing
        return None
