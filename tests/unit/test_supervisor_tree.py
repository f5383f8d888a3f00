"""The supervision tree with real pykka actors: restart types, strategies,
nested supervisors, escalation to the top, and messages to a stopped actor."""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatchmethod
from typing import Any

import pykka
import pytest

from choragos.actors.handle import ActorGone
from choragos.actors.supervisor import (
    PERMANENT,
    REST_FOR_ONE,
    TEMPORARY,
    TRANSIENT,
    ChildSpec,
    SetIntensity,
    StartChild,
    StopAll,
    Supervisor,
    SupervisorState,
    supervisor_spec,
)
from tests.conftest import wait_until
from tests.unit.test_supervision import Add, Boom, Counter, CounterActor, Total


@dataclass(frozen=True)
class Finish:
    pass


class Worker(CounterActor):
    def __init__(self, name: str, state: Counter, supervisor: Any) -> None:
        super().__init__(state, supervisor)
        self.name = name

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register
    def _finish(self, msg: Finish) -> None:
        self.finish()


class Tree:
    """A top supervisor that records its events and its give-up."""

    def __init__(self, **state: Any) -> None:
        self.events: list[tuple[str, dict]] = []
        self.gave_up: list[str] = []
        self.ref = Supervisor.start(SupervisorState(**state), on_event=self.event,
                                    on_give_up=self.gave_up.append)

    def event(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))

    def seen(self, kind: str) -> int:
        return sum(e[0] == kind for e in self.events)

    def add(self, name: str, state: Counter, restart: str = PERMANENT, under=None):
        sup = under or self.ref
        spec = ChildSpec(name, lambda h: Worker.start(name, state, sup), restart=restart)
        return sup.ask(StartChild(spec), timeout=10)

    def nested(self, name: str, intensity: int, state: Counter):
        """A supervisor ``name`` under the top, with one worker under it."""
        tree = SupervisorState(name=name, intensity=intensity, period=60)
        sub = self.ref.ask(StartChild(supervisor_spec(tree, self.ref, self.event)), timeout=10)
        return sub, self.add("w", state, under=sub)

    def close(self) -> None:
        self.ref.ask(StopAll(), timeout=30)
        self.ref.stop()
        wait_until(lambda: not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()],
                   timeout=10, message="every actor stopped")


@pytest.fixture
def tree():
    made = []

    def make(**state: Any) -> Tree:
        made.append(Tree(**state))
        return made[-1]

    yield make
    for t in made:
        t.close()


def test_permanent_child_comes_back_after_a_normal_exit(tree):
    t, state = tree(), Counter()
    handle = t.add("w", state, PERMANENT)
    handle.tell(Finish())
    wait_until(lambda: state.starts == 2, timeout=5, message="the second start")
    handle.tell(Add(4))
    assert handle.ask(Total(), timeout=5) == 4


def test_transient_child_is_restarted_after_a_crash_but_not_after_a_normal_exit(tree):
    t, state = tree(), Counter()
    handle = t.add("w", state, TRANSIENT)
    handle.tell(Boom())
    handle.tell(Add(1))
    assert handle.ask(Total(), timeout=5) == 1 and state.starts == 2
    handle.tell(Finish())
    wait_until(lambda: t.seen("actor exited") == 1, timeout=5, message="the normal exit")
    assert state.starts == 2
    with pytest.raises(ActorGone, match="transient child not restarted"):
        handle.tell(Add(1))


def test_temporary_child_is_never_restarted_and_a_tell_to_it_is_an_error(tree, caplog):
    t, state = tree(), Counter()
    handle = t.add("w", state, TEMPORARY)
    handle.tell(Boom())
    wait_until(lambda: t.seen("actor exited") == 1, timeout=5, message="the crash seen")
    assert state.starts == 1
    with pytest.raises(ActorGone, match="w is gone"):
        handle.tell(Add(1))
    with pytest.raises(ActorGone):
        handle.ask(Total(), timeout=5)
    assert "w is gone" in caplog.text  # the refusal is logged, not only raised


def test_one_for_one_restarts_only_the_crashed_child(tree):
    t = tree()
    first, second = Counter(), Counter()
    a, b = t.add("a", first), t.add("b", second)
    a.tell(Boom())
    a.tell(Add(1))
    assert a.ask(Total(), timeout=5) == 1
    assert (first.starts, second.starts) == (2, 1)
    assert b.ask(Total(), timeout=5) == 0


def test_rest_for_one_restarts_the_later_children_keeping_their_mail(tree):
    t = tree(strategy=REST_FOR_ONE)
    states = [Counter(), Counter(), Counter()]
    a, b, c = (t.add(name, s) for name, s in zip("abc", states, strict=True))
    b.tell(Boom())
    for handle in (a, b, c):
        handle.tell(Add(2))
    assert [h.ask(Total(), timeout=5) for h in (a, b, c)] == [2, 2, 2]
    assert [s.starts for s in states] == [1, 2, 2]  # a is before b: untouched


def test_a_nested_supervisor_over_its_intensity_is_a_crash_its_parent_restarts(tree):
    t, state = tree(intensity=5), Counter()
    _, worker = t.nested("roles", 1, state)
    worker.tell(Boom())
    wait_until(lambda: state.starts == 2, timeout=5, message="the first restart")
    worker.tell(Add(1))
    worker.tell(Boom())  # the second within the period: roles gives up
    wait_until(lambda: t.seen("actor given up") == 1, timeout=5, message="escalation")
    worker.tell(Add(3))  # buffered while the subtree is replaced
    assert worker.ask(Total(), timeout=5) == 4
    wait_until(lambda: any(e == "actor restarted" and f["actor"] == "roles"
                           for e, f in t.events), timeout=5, message="roles restarted")
    assert state.starts == 3 and t.gave_up == []


def test_escalation_reaches_the_top_which_gives_up_once(tree):
    t, state = tree(intensity=0), Counter()
    sub, worker = t.nested("roles", 0, state)
    worker.tell(Boom())
    wait_until(lambda: t.gave_up, timeout=5, message="the top gave up")
    assert "supervisor session gave up: roles failed" in t.gave_up[0]
    assert t.seen("actor given up") == 2  # roles, then the session
    with pytest.raises(ActorGone, match="gave up"):
        sub.tell(StopAll())
    assert t.ref.is_alive()  # the top stays up so the session can stop cleanly


def test_a_raised_intensity_lets_the_next_crash_be_restarted(tree):
    t, state = tree(intensity=5), Counter()
    sub, worker = t.nested("roles", 0, state)  # no restart allowed yet
    sub.tell(SetIntensity(1))
    worker.tell(Boom())
    wait_until(lambda: state.starts == 2, timeout=5, message="the restart")
    assert t.seen("actor given up") == 0
