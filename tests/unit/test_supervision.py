"""Supervision with real pykka actors: crashes are reported and replaced."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import Any

import pykka
import pytest

from choragos.actors.base import Actor
from choragos.actors.handle import ActorCrashed, ActorGone, Handle
from choragos.actors.supervisor import (
    ChildSpec,
    StartChild,
    StartChildren,
    StopAll,
    Supervisor,
    SupervisorState,
)
from choragos.actors.timers import Timers
from tests.conftest import wait_until


@dataclass(frozen=True)
class Add:
    n: int


@dataclass(frozen=True)
class Boom:
    kind: type = RuntimeError


@dataclass(frozen=True)
class Total:
    pass


@dataclass
class Counter:
    total: int = 0
    starts: int = 0
    seen: list = field(default_factory=list)


class CounterActor(Actor):
    def __init__(self, state: Counter, supervisor: Any) -> None:
        super().__init__("counter", supervisor)
        self.state = state

    def on_start(self) -> None:
        self.state.starts += 1

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register
    def _add(self, msg: Add) -> None:
        self.state.total += msg.n
        self.state.seen.append(msg.n)

    @handle.register
    def _boom(self, msg: Boom) -> None:
        raise msg.kind("boom")

    @handle.register
    def _total(self, msg: Total) -> int:
        return self.state.total


class NamedCounter(CounterActor):
    def __init__(self, name: str, state: Counter, supervisor: Any) -> None:
        super().__init__(state, supervisor)
        self.name = name  # the child's name: what its crash report names


@pytest.fixture
def supervisor():
    events = []
    sup = Supervisor.start(on_event=lambda name, **f: events.append((name, f)))
    sup.events = events
    yield sup
    sup.ask(StopAll())
    sup.stop()
    assert not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()]


def start_counter(sup, state):
    spec = ChildSpec("counter", lambda h: CounterActor.start(state, sup))
    return sup.ask(StartChild(spec))


def test_children_started_together_are_started_in_order_and_supervised(supervisor):
    """One request for a session's roles: the starter waits once, not once a role."""
    states = [Counter() for _ in range(3)]
    made = []

    def spec(n: int) -> ChildSpec:
        def start(h):
            made.append(n)
            return NamedCounter.start(f"counter{n}", states[n], supervisor)
        return ChildSpec(f"counter{n}", start)

    given = Handle("counter2")  # a handle already handed out keeps what is sent to it
    given.tell(Add(7))
    starts = (StartChild(spec(0)), StartChild(spec(1)), StartChild(spec(2), given))
    handles = supervisor.ask(StartChildren(starts))
    assert made == [0, 1, 2]
    assert [h.name for h in handles] == ["counter0", "counter1", "counter2"]
    assert handles[2] is given and given.ask(Total(), timeout=5) == 7
    handles[1].tell(Boom())  # each one supervised as if started alone
    handles[1].tell(Add(4))
    assert handles[1].ask(Total(), timeout=5) == 4 and states[1].starts == 2


def test_crash_in_tell_is_replaced_and_state_survives(supervisor):
    state = Counter()
    handle = start_counter(supervisor, state)
    handle.tell(Add(2))
    handle.tell(Boom())
    for _ in range(10):
        handle.tell(Add(1))
    assert handle.ask(Total(), timeout=5) == 12
    assert state.starts == 2
    assert state.seen == [2] + [1] * 10  # nothing sent around the crash was lost
    assert supervisor.events[0][0] == "actor restarted"


def test_crash_in_ask_raises_to_caller_and_actor_is_replaced(supervisor):
    state = Counter()
    handle = start_counter(supervisor, state)
    with pytest.raises(ActorCrashed, match="boom"):
        handle.ask(Boom(), timeout=5)
    handle.tell(Add(5))
    assert handle.ask(Total(), timeout=5) == 5


def test_base_exception_does_not_stop_other_actors(supervisor):
    a, b = Counter(), Counter()
    first = start_counter(supervisor, a)
    spec = ChildSpec("other", lambda h: CounterActor.start(b, supervisor))
    second = supervisor.ask(StartChild(spec))
    first.tell(Boom(kind=KeyboardInterrupt))
    second.tell(Add(3))
    assert second.ask(Total(), timeout=5) == 3
    assert first.ask(Total(), timeout=5) == 0
    assert supervisor.is_alive()


def test_intensity_limit_at_the_top_closes_the_child_and_gives_up():
    events, reasons = [], []
    supervisor = Supervisor.start(SupervisorState(intensity=2), on_give_up=reasons.append,
                                  on_event=lambda name, **f: events.append((name, f)))
    supervisor.events = events
    try:
        _intensity_limit(supervisor)
        assert reasons and "counter failed 3 times" in reasons[0]
    finally:
        supervisor.ask(StopAll())
        supervisor.stop()


def _intensity_limit(supervisor):
    state = Counter()
    handle = start_counter(supervisor, state)

    def seen(name: str) -> int:
        return sum(e[0] == name for e in supervisor.events)

    for crash in (1, 2):  # each crash waits for its replacement to be up
        handle.tell(Boom())
        wait_until(lambda c=crash: seen("actor restarted") == c, timeout=5,
                   message=f"restart {crash}")
        assert handle.ask(Total(), timeout=5) == 0
    assert state.starts == 3
    handle.tell(Boom())  # the third within the period: more than intensity allows
    wait_until(lambda: seen("actor given up") == 1, timeout=5, message="the give-up")
    assert seen("actor restarted") == 2 and state.starts == 3
    with pytest.raises(ActorGone):
        handle.ask(Total(), timeout=5)


def test_timers_fire_in_order_and_cancel():
    received = []
    done = threading.Event()

    class Sink:
        def tell(self, message):
            received.append(message)
            if message == "last":
                done.set()

    timers = Timers()
    try:
        timers.after(0.05, Sink(), "second")
        timers.after(0.01, Sink(), "first")
        timers.after(0.02, Sink(), "cancelled").cancel()
        timers.after(0.08, Sink(), "last")
        assert done.wait(5)
        assert received == ["first", "second", "last"]
    finally:
        timers.stop()


def test_a_tick_for_an_actor_stopped_for_good_is_dropped_without_a_warning(caplog):
    # An actor's own ticks (a role's Classify, the prober's Probe) still due
    # as the session stops are moot: the stop must not read as lost messages.
    gone, done = Handle("role:coder"), threading.Event()
    gone.close()

    class Last:
        def tell(self, message):
            done.set()

    timers = Timers()
    try:
        timers.after(0.01, gone, "Classify")
        timers.after(0.02, Last(), "last")
        assert done.wait(5)
    finally:
        timers.stop()
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_a_timer_target_that_fails_is_logged_as_an_error_and_the_timers_go_on(caplog):
    # An actor gone is routine (debug); any other fault in a target's tell is
    # code that failed (the start caches' let-go runs there) and must be seen.
    done = threading.Event()

    class Broken:
        def tell(self, message):
            raise ValueError("the let-go broke")

    class Last:
        def tell(self, message):
            done.set()

    timers = Timers()
    try:
        timers.after(0.01, Broken(), "LetGo")
        timers.after(0.02, Last(), "last")
        assert done.wait(5)
    finally:
        timers.stop()
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "failed on 'LetGo'" in errors[0].getMessage()
    assert "the let-go broke" in caplog.text
