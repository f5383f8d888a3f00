"""A role actor that crashes is replaced on the same state: the agent lives on."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pykka
import pytest

from actors import messages as m
from actors.role import RoleActor, new_state
from actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
from actors.timers import Timers
from choragos.config import RoleSpec
from tests.conftest import pid_alive, wait_until
from tests.integration.harness import AGENT


class Core:
    def __init__(self) -> None:
        self.told: list = []

    def tell(self, message) -> None:
        self.told.append(message)

    def outcomes(self) -> list[m.InjectionOutcome]:
        return [x for x in self.told if isinstance(x, m.InjectionOutcome) and x.final]


@pytest.fixture
def role(tmp_path):
    spec = RoleSpec(name="coder", command=sys.executable, args=(str(AGENT),))
    env = {"PATH": "/usr/bin:/bin", "AGENT_LOG": str(tmp_path / "agent.jsonl")}
    state = new_state(spec, tmp_path, env)
    core, timers, events = Core(), Timers(), []
    sup = Supervisor.start(on_event=lambda name, **f: events.append((name, f)))
    handle = sup.ask(StartChild(ChildSpec(
        "role:coder", lambda h: RoleActor.start(state, core, timers, sup, h))))
    handle.tell(m.Spawn())
    yield SimpleNamespace(handle=handle, state=state, core=core, events=events)
    handle.ask(m.StopProcess(1.0), timeout=10)
    sup.ask(StopAll())
    sup.stop()
    timers.stop()
    assert not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()]


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
    view = role.handle.ask(m.GetView(), timeout=5)
    assert view.status == "idle" and view.pid == pid
