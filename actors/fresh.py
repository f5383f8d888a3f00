"""Fresh contexts: a ``fresh = true`` role gets a new process for each task.

A mixin of the session core.  Before a task is typed into a fresh role
that has already had one since it last started, the role is restarted
(clean process, clean conversation), briefed again at boot like any new
process, and only then given the task, which waits at the front of its
queue meanwhile.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from choragos.actors import messages as m


class FreshContexts:
    s: Any  # CoreState

    def _restart_first(self, seat: Any, injection: m.Injection) -> bool:
        """True when the role was restarted instead (the task goes back in front)."""
        spec = self.s.config.role(seat.name)
        if injection.kind != "task" or spec is None or not spec.fresh:
            return False
        if seat.name not in self.s.used:
            self.s.used.add(seat.name)
            return False
        self.s.used.discard(seat.name)
        seat.queue.appendleft(injection)
        seat.view = replace(seat.view, ready=False)  # until the new process is briefed
        seat.handle.tell(m.Restart())
        self.event("fresh restart", role=seat.name, task=injection.task_id)
        return True
