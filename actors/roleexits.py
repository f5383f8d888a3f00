"""What becomes of an exited role's work, and of a remote role held for its host.

When a role's process exits (:meth:`RoleExits.work_of`), the tasks it was
working on are failed and the orchestrator told, unless the role comes back
and its agent was only out of reach (a remote seat's connection dropped):
then the task is typed again into the next agent.

Host outages, the core's side (the role's is :mod:`choragos.actors.hostwait`):
a remote role whose host stopped answering is held by its actor, not
restarted under its crash budget; it says so here with :class:`HostHeld`.
The core makes the hold seen as it does a memory hold: a mark on the card
and in ``status`` (``held: host`` while the host is probed, ``held: login``
when it turned the login away and only the operator's fix and ``restart``
bring it back), a note on the tasks that wait for it,
and once per outage a line in the server log, a ``role held`` event and
the ``on_exit`` hook (so the notifier).  Its tasks' timeout clocks stop
until it is back, as for a limit.  Its tasks are not failed: the one
it was working on is typed again when it is back (the core's
``redeliver``), the rest wait in its queue.  :class:`HostBack` ends it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort, note_waits
from choragos.actors.hostwait import said
from choragos.actors.latemessages import PauseClocks, ResumeClocks
from choragos.actors.messages import (
    HOST_MARK,
    HOST_NOTE,
    HOST_REFUSED,
    HOST_UNREACHABLE,
    LOGIN_MARK,
    HostBack,
    HostHeld,
)
from choragos.board.tasks import TaskState
from choragos.roles import briefs

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

log = logging.getLogger("choragos.remote")


class RoleExits:
    """A policy of the core: an exited role's tasks, and the marks, notes and
    noise of remote roles held for their hosts."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s

    def work_of(self, msg: m.RoleExited) -> None:
        """The tasks ``msg.role`` was working on: failed, or typed again."""
        seat = self.s.seats.get(msg.role)
        if seat is None or msg.role == self.s.start_role:
            return  # the start role's reports wait in its queue for the next orchestrator
        # A line an earlier exit queued again (a start that failed since) is typed once.
        waiting = {line.task_id for line in seat.queue if line.kind == "task"}
        for task in self.s.board.open_for(msg.role):
            if task.state not in (TaskState.DELIVERED, TaskState.TIMED_OUT):
                continue
            if msg.redeliver and msg.restarting:
                if task.id in waiting:
                    continue
                self.port.event("task redelivered", task=task.id, role=msg.role,
                                reason=msg.status.describe())
                self.port.enqueue(task.role, briefs.task_line(
                    task, f".choragos/tasks/{task.id}.md"), "task", task.id, front=True)
            else:
                self.port.fail_task(task, f"{msg.role} exited ({msg.status.describe()}) "
                                          f"before reporting work-done")

    def outage(self, msg: HostHeld | HostBack) -> None:
        """A role actor's word about its host's outage."""
        if isinstance(msg, HostHeld):
            self.held(msg)
        else:
            self.back(msg)

    def held(self, msg: HostHeld) -> None:
        # Its task's clock stops as a limit's does: an outage is no time spent
        # on the work (a clock already stopped stays as it is).
        self.s.tell_clocks(PauseClocks(msg.role))
        # One mark or the other: an outage can turn into a refused login and back.
        mark, other = (LOGIN_MARK, HOST_MARK) if msg.refused else (HOST_MARK, LOGIN_MARK)
        self.port.mark(msg.role, other, False)
        self.port.mark(msg.role, mark, True)
        self._note(msg.role, f"{HOST_NOTE} ({msg.host})")
        if not msg.new:
            return
        line = said(msg)
        if msg.refused:
            log.error("%s is %s", msg.role, line)
        else:
            log.warning("%s is %s (its crash budget is untouched; its work waits)",
                        msg.role, line)
        self.port.event("role held", role=msg.role,
                        reason=HOST_REFUSED if msg.refused else HOST_UNREACHABLE,
                        host=msg.host, said=msg.why, next_try=msg.next_try)
        self.port.ring("on_exit", msg.role, line,
                       extra={"CHORAGOS_EXIT": line, "CHORAGOS_EXITED": "role"})

    def back(self, msg: HostBack) -> None:
        self.s.tell_clocks(ResumeClocks(msg.role))  # runs on from what it had left
        self.port.mark(msg.role, HOST_MARK, False)
        self.port.mark(msg.role, LOGIN_MARK, False)
        self._note(msg.role, "")
        log.warning("%s is back: its host %s answered after %.0fs", msg.role, msg.host,
                    msg.lasted)
        self.port.event("host answered", role=msg.role, host=msg.host,
                        lasted=round(msg.lasted, 3))

    def _note(self, role: str, note: str) -> None:
        """The board says why the role's tasks wait; the note goes with the hold."""
        note_waits(self.port, self.s.board.open_for(role), note, HOST_NOTE)
