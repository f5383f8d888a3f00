"""Timeout clocks: wall-clock limits per delegation, as an actor.

A clock starts when a task is delivered (after any gate), stops at its
work-done, and does not run while its role is paused.  When one runs out
the core is told ``TimedOut``; what follows (notify or restart) is the
core's decision.  Expiry is checked with a timer message per clock, and a
generation number makes a stale timer (from before a pause) harmless.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import singledispatchmethod
from typing import Any

from choragos.actors.base import Actor
from choragos.actors.latemessages import (
    PauseClocks,
    ResumeClocks,
    StartClock,
    StopClock,
    TimedOut,
)
from choragos.actors.timers import Timers


@dataclass(frozen=True)
class CheckClock:
    """The timer's: has the clock run out? (A ``generation`` since replaced is stale.)"""

    task_id: str
    generation: int


@dataclass
class Clock:
    """One task's timeout clock: its deadline, or what it has left while its role is held."""

    task_id: str
    role: str
    seconds: float
    deadline: float
    remaining: float | None = None  # set while paused
    generation: int = 0


@dataclass
class ClockState:
    """The clock actor's state: the running clocks, by task id."""

    clocks: dict[str, Clock]


class ClockActor(Actor):
    def __init__(self, state: ClockState, core: Any, timers: Timers, me: Any,
                 supervisor: Any = None, clock=time.monotonic) -> None:
        super().__init__("clocks", supervisor)
        self.s = state
        self.core = core
        self.timers = timers
        self.me = me
        self.now = clock

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    def _arm(self, clock: Clock) -> None:
        clock.generation += 1
        self.timers.after(clock.deadline - self.now(), self.me,
                          CheckClock(clock.task_id, clock.generation))

    @handle.register(StartClock)
    def _on_start(self, msg: StartClock) -> None:
        left = msg.seconds if msg.left is None else msg.left
        clock = Clock(msg.task_id, msg.role, msg.seconds, self.now() + left)
        self.s.clocks[msg.task_id] = clock
        self._arm(clock)

    @handle.register(StopClock)
    def _on_stop(self, msg: StopClock) -> None:
        self.s.clocks.pop(msg.task_id, None)

    @handle.register(PauseClocks)
    def _on_pause(self, msg: PauseClocks) -> None:
        for clock in self._of(msg.role):
            if clock.remaining is None:
                clock.remaining = max(0.0, clock.deadline - self.now())
                clock.generation += 1  # the armed timer is now stale

    @handle.register(ResumeClocks)
    def _on_resume(self, msg: ResumeClocks) -> None:
        for clock in self._of(msg.role):
            if clock.remaining is not None:
                clock.deadline = self.now() + clock.remaining
                clock.remaining = None
                self._arm(clock)

    @handle.register(CheckClock)
    def _on_check(self, msg: CheckClock) -> None:
        clock = self.s.clocks.get(msg.task_id)
        if clock is None or clock.generation != msg.generation or clock.remaining is not None:
            return
        if self.now() < clock.deadline:
            self._arm(clock)  # woke early (timer granularity): sleep again
            return
        del self.s.clocks[msg.task_id]
        self.core.tell(TimedOut(clock.task_id, clock.role, clock.seconds))

    def _of(self, role: str) -> list[Clock]:
        return [clock for clock in self.s.clocks.values() if clock.role == role]
