"""Timeout clocks as a real actor, with a controllable clock."""

from __future__ import annotations

import itertools
import threading

import pytest

from choragos.actors.clocks import (
    ClockActor,
    ClockState,
    PauseClocks,
    ResumeClocks,
    StartClock,
    StopClock,
    TimedOut,
)
from choragos.actors.handle import Handle
from choragos.actors.timers import Timers
from tests.conftest import Told, wait_until


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


class Clocks(Handle):
    """The clock actor's handle, with what a test reads of the actor's state."""

    markers = itertools.count()

    def __init__(self, state: ClockState, fake: FakeTime) -> None:
        super().__init__("clocks")
        self.state, self.fake = state, fake

    def settled(self) -> None:
        """Every message told so far is handled: the actor takes its mail in
        order, so once a marker clock told after them has started, they are
        done.  (The marker stops with the next message handled.)"""
        marker = f"marker {next(self.markers)}"
        self.tell(StartClock(marker, "marker", 1e9))
        wait_until(lambda: marker in self.state.clocks, 5, message="the clock actor")
        self.tell(StopClock(marker))

    def left(self) -> dict[str, float]:
        """Seconds left per running clock, after :meth:`settled`."""
        self.settled()
        now = self.fake()
        return {c.task_id: (c.remaining if c.remaining is not None else c.deadline - now)
                for c in list(self.state.clocks.values()) if c.role != "marker"}


@pytest.fixture
def rig():
    fake, core = FakeTime(), Told()
    timers = Timers(clock=fake)
    state = ClockState({})
    handle = Clocks(state, fake)
    ref = ClockActor.start(state, core, timers, handle, clock=fake)
    handle.attach(ref)
    yield fake, core, handle, timers
    ref.stop()
    timers.stop()


class Probe:
    def __init__(self) -> None:
        self.told = threading.Event()

    def tell(self, message) -> None:
        self.told.set()


def expire(fake, timers, seconds, handle) -> None:
    """Move the fake clock on, then wait until the timer thread has told
    everything now due and the clock actor has handled it: a probe due now
    fires after every earlier timer, and the actor handles its mail in
    order.  So "nothing told" below is a real answer."""
    fake.advance(seconds)
    probe = Probe()
    timers.after(0, probe, "probe")
    assert probe.told.wait(5), "the timer thread never reached the probe"
    handle.settled()


def test_expires_after_its_time(rig):
    fake, core, handle, timers = rig
    handle.tell(StartClock("T1", "coder", 60))
    assert handle.left() == {"T1": 60}
    expire(fake, timers, 59, handle)
    assert handle.left()["T1"] == pytest.approx(1)
    assert core.told == []
    expire(fake, timers, 2, handle)
    wait_until(lambda: core.told, 5, message="TimedOut")
    assert core.told == [TimedOut("T1", "coder", 60)]


def test_paused_time_does_not_count(rig):
    fake, core, handle, timers = rig
    handle.tell(StartClock("T1", "coder", 60))
    handle.settled()  # the start is done
    expire(fake, timers, 30, handle)
    handle.tell(PauseClocks("coder"))
    handle.settled()
    expire(fake, timers, 600, handle)
    assert handle.left() == {"T1": 30}
    assert core.told == []
    handle.tell(ResumeClocks("coder"))
    handle.settled()
    expire(fake, timers, 29, handle)
    assert handle.left()["T1"] == pytest.approx(1)
    expire(fake, timers, 2, handle)
    wait_until(lambda: core.told, 5, message="TimedOut after resume")


def test_stop_cancels_and_other_roles_are_not_paused(rig):
    fake, core, handle, timers = rig
    handle.tell(StartClock("T1", "coder", 10))
    handle.tell(StartClock("T2", "reviewer", 10))
    handle.tell(StopClock("T1"))
    handle.tell(PauseClocks("coder"))
    handle.settled()
    expire(fake, timers, 11, handle)
    wait_until(lambda: core.told, 5, message="T2 to expire")
    assert core.told == [TimedOut("T2", "reviewer", 10)]
    assert handle.left() == {}


def test_a_role_held_for_its_host_keeps_its_task_clock_stopped(rig, tmp_path):
    """A long outage of a remote role's host is no time spent on its task:
    the clock stops at the hold, as for a limit, and runs on when it is back."""
    from choragos.actors.messages import HostBack, HostHeld
    from choragos.actors.roleexits import RoleExits
    from tests.unit.policyport import RecordingPort, core_state

    fake, core, handle, timers = rig
    state = core_state(tmp_path)
    state.clocks = handle
    exits = RoleExits(RecordingPort(state), state)
    handle.tell(StartClock("T1", "coder", 60))
    handle.settled()
    expire(fake, timers, 30, handle)
    exits.outage(HostHeld("coder", "gpu (me@gpu-box)", False, "timed out", "12:00:00", True))
    exits.outage(HostHeld("coder", "gpu (me@gpu-box)", False, "timed out", "12:05:00", False))
    handle.settled()  # the clock actor has the hold before the fake clock moves on
    expire(fake, timers, 3600, handle)
    assert handle.left() == {"T1": 30}
    assert core.told == []
    exits.outage(HostBack("coder", "gpu (me@gpu-box)", 3600.0))
    handle.settled()
    expire(fake, timers, 29, handle)
    assert handle.left()["T1"] == pytest.approx(1)
    expire(fake, timers, 2, handle)
    wait_until(lambda: core.told, 5, message="TimedOut after the host is back")
    assert core.told == [TimedOut("T1", "coder", 60)]
