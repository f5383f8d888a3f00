"""Fresh contexts: a ``fresh = true`` role gets a new process for each task.

A policy of the session core.  Before a task is typed into a fresh role
that has already had one since it last started, the role is restarted
(clean process, clean conversation), briefed again at boot like any new
process, and only then given the task, which waits at the front of its
queue meanwhile.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort

if TYPE_CHECKING:
    from choragos.actors.core import CoreState, Seat


class FreshContexts:
    """Owns the set of fresh roles given a task since they last started."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s
        self.used = s.used

    def restart_first(self, seat: Seat, injection: m.Injection) -> bool:
        """True when the role was restarted instead (the task goes back in front)."""
        spec = self.s.config.role(seat.name)
        if injection.kind != "task" or spec is None or not spec.fresh:
            return False
        if seat.name not in self.used:
            self.used.add(seat.name)
            return False
        self.used.discard(seat.name)
        seat.queue.appendleft(injection)
        seat.view = replace(seat.view, ready=False)  # until the new process is briefed
        seat.handle.tell(m.Restart())
        self.port.event("fresh restart", role=seat.name, task=injection.task_id)
        return True
