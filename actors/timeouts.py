"""Task timeouts: the core's side of the clocks actor.

A policy of the session core, with no state of its own (the clocks actor
holds the clocks, the journal their records).  A delivered task's clock
starts when its role has a ``timeout``, stops at its work-done or failure,
and when it runs out the task is marked timed out, the bell rings,
``on_timeout`` runs, a judge's verdict awaited on it is given up, and with
``timeout_action = "restart"`` the role is killed (its exit then goes
through the restart policy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort
from choragos.actors.judging import JudgeLoop
from choragos.actors.latemessages import StartClock, StopClock, TimedOut
from choragos.board.tasks import Task, TaskState

if TYPE_CHECKING:
    from choragos.actors.core import CoreState


class Timeouts:
    def __init__(self, port: CorePort, s: CoreState, judge: JudgeLoop) -> None:
        self.port, self.s, self.judge = port, s, judge

    def start(self, task: Task) -> None:
        seconds = self.s.config.role(task.role).timeout
        if seconds and self.s.clocks is not None:
            self.s.tell_clocks(StartClock(task.id, task.role, seconds))
            self.port.journal("clock", action="start", task=task.id, role=task.role,
                         seconds=seconds, left=seconds)

    def stop(self, task_id: str) -> None:
        if self.s.clocks is not None:
            self.s.tell_clocks(StopClock(task_id))
            self.port.journal("clock", action="stop", task=task_id)

    def timed_out(self, msg: TimedOut) -> None:
        task = self.s.board.get(msg.task_id)
        if task.state is not TaskState.DELIVERED:
            return
        spec = self.s.config.role(task.role)
        action = spec.timeout_action if spec else "notify"
        task = self.port.move(task.id, TaskState.TIMED_OUT,
                         note=f"no work-done within {msg.seconds:g}s")
        self.port.journal("clock", action="stop", task=task.id)
        self.port.event("timeout", task=task.id, role=task.role, seconds=msg.seconds,
                   action=action)
        self.port.alert("on_timeout", task.role, task)
        self.judge.lost(task, f"timed out after {msg.seconds:g}s")
        if action == "restart" and task.role in self.s.seats:
            self.s.seats[task.role].handle.tell(m.Kill(f"{task.id} timed out"))
