"""Restore after resume: a resumed session's board, queues and clocks.

A policy of the session core.  It runs on the core's thread once, before
any role is spawned, and rebuilds the board, the gates, the delivery
queues and the clocks from a journal image; the merge gates, held work and
verdicts pending come back from the board through their own policies
(:class:`~choragos.actors.isolationrestore.IsolationRestore`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import TYPE_CHECKING

from choragos.actors.coreport import CorePort
from choragos.actors.durable import task_from
from choragos.actors.guardrails import rang
from choragos.actors.isolationrestore import IsolationRestore
from choragos.actors.latemessages import PauseClocks, StartClock
from choragos.actors.workcheck import CHECKED_AGAIN
from choragos.board.journal import Image
from choragos.board.tasks import Task, TaskState
from choragos.roles import briefs

if TYPE_CHECKING:
    from choragos.actors.core import CoreState
    from choragos.actors.workcheck import WorkChecks

log = logging.getLogger("choragos.durable")

_DELIVERED = (TaskState.DELIVERED, TaskState.TIMED_OUT)


class Resume:
    """Has no state of its own: it fills the core's from the image."""

    def __init__(self, port: CorePort, s: CoreState, isolation: IsolationRestore,
                 checks: WorkChecks) -> None:
        self.port, self.s, self.isolation, self.checks = port, s, isolation, checks

    def restore(self, image: Image) -> None:
        s = self.s
        s.board.restore([task_from(data) for data in image.tasks.values()])
        s.board.next_number = max(s.board.next_number, image.next_number)
        s.next_injection = max(s.next_injection, image.next_injection)
        self._retire_dropped()
        if image.handoff:
            self.port.journal("handoff", done=True)
        s.gates = OrderedDict((t.id, t) for t in s.board.tasks.values()
                              if t.state is TaskState.GATED)
        s.tokens = s.flushed = dict(image.tokens)
        rang(s, image.rang)
        # The old queues are rebuilt below, hand-backs first: drop them all before
        # anything is queued, or a drop would discard what was just queued.
        for role in image.queues:
            self.port.journal("drop queue", role=role)
        handed = self._hand_back(image)
        requeued = self._requeue(image, handed)
        self._queue_undelivered(requeued | handed)
        self._restart_clocks(image)
        self.isolation.restore()  # merge gates, held work, verdicts pending (on the board)
        self.checks.measure_again([t["id"] for t in image.tasks.values()
                                   if t.get("checks") in CHECKED_AGAIN])
        # The board as restored: the event log then tells what the journal tells.
        every = [*s.board.archive.values(), *s.board.tasks.values()]
        self.port.event("session resumed", from_pid=image.pid, tasks=len(every),
                        board={t.id: str(t.state) for t in every},
                        handed_back=sorted(handed), gates=list(s.gates),
                        queued={name: len(seat.queue) for name, seat in s.seats.items()})

    def _retire_dropped(self) -> None:
        """After a handoff, open tasks of roles the new team dropped end as history."""
        for task in list(self.s.board.tasks.values()):
            if task.is_open and task.role not in self.s.seats:
                state = TaskState.REJECTED if task.state is TaskState.GATED else TaskState.FAILED
                reason = f"{task.role} is not in the team after a handoff"
                self.port.move(task.id, state, note=reason)
                # Said in the log as any other end of a task, so the report
                # counts it as the board does.
                self.port.event("gate rejected" if state is TaskState.REJECTED else "task failed",
                                task=task.id, role=task.role, reason=reason)

    def _hand_back(self, image: Image) -> set[str]:
        """Tasks that may have reached their worker go back to it, marked as such."""
        handed = set()
        sent = {i["task"] for queue in image.queues.values() for i in queue
                if i.get("sent") and i["what"] == "task"}
        for task in self.s.board.tasks.values():
            if (task.role not in self.s.seats or not task.is_open or task.waiting
                    or task.checks in CHECKED_AGAIN):
                continue  # (work waiting at a gate, on its judge or its checks is not the
                # worker's now: its work-done was acked)
            if task.state in _DELIVERED or (task.id in sent and task.state is TaskState.QUEUED):
                self.port.enqueue(task.role, briefs.handback_line(task, _task_file(task)),
                                  "task", task.id)
                handed.add(task.id)
        return handed

    def _requeue(self, image: Image, handed: set[str]) -> set[str]:
        """Every queued line goes back in its order, as the board tells it: the
        journal's own text is never typed, since whoever can write the journal
        could have written it (see :meth:`_line_from_board`).  A line maybe typed
        is marked repeated."""
        requeued = set()
        for role, queue in image.queues.items():
            if role not in self.s.seats:
                continue
            for injection in queue:
                task_id, what = injection["task"], injection["what"]
                if what == "task":
                    task = self.s.board.tasks.get(task_id)
                    if task is None or task.id in handed or task.state is not TaskState.QUEUED:
                        continue
                    requeued.add(task_id)
                    text = _task_line(task, injection["text"])
                else:
                    text = self._line_from_board(role, injection)
                    if text is None:
                        continue
                    if injection.get("sent"):
                        text = briefs.repeated_line(text)
                self.port.enqueue(role, text, what, task_id)
        return requeued

    def _line_from_board(self, role: str, injection: dict) -> str | None:
        """A queued report or notice written afresh from its task on the board:
        a report as the worker's work-done gave it, any other notice as where
        its task stands.  One about no task (a budget or team notice, a handoff
        request) was about the session that stopped: it is logged, not typed."""
        task = self.s.board.lookup(injection["task"]) if injection["task"] else None
        if task is None:
            self.port.event("queued line not restored", role=role, kind=injection["what"],
                            task=injection["task"], text=injection["text"])
            log.warning("a %s queued for %s before the restart is not typed again (it "
                        "names no task on the board); it is in the event log",
                        injection["what"], role)
            return None
        if injection["what"] == "report" and task.summary is not None:
            return briefs.report_line(task.id, task.role, task.summary, task.report,
                                      outcome=str(task.state))
        if injection["what"] == "fix" and task.state is TaskState.FAILED and task.rounds:
            # Its worker must still fix it: a notice would leave the task failed
            # for good, the orchestrator never told.
            return briefs.resumed_fix_line(task, _task_file(task))
        return briefs.resumed_notice_line(task)

    def _queue_undelivered(self, queued: set[str]) -> None:
        """Tasks acknowledged but not yet queued (the kill came between the two
        records); one not yet checkpointed is, when its turn comes."""
        for task in list(self.s.board.tasks.values()):
            if (task.state is TaskState.QUEUED and task.id not in queued
                    and task.role in self.s.seats):
                self.port.queue_task(task)

    def _restart_clocks(self, image: Image) -> None:
        clocks = self.s.clocks
        if clocks is None:
            return
        for task_id, clock in image.clocks.items():
            task = self.s.board.tasks.get(task_id)
            if task is None or task.state is not TaskState.DELIVERED:
                continue
            left = image.clock_left(task_id)
            clocks.tell(StartClock(task_id, clock["role"], clock["seconds"], left))
            self.port.journal("clock", action="start", task=task_id, role=clock["role"],
                              seconds=clock["seconds"], left=left)
        for role, state in image.roles.items():
            if state.get("paused"):
                clocks.tell(PauseClocks(role))


def _task_line(task: Task, journalled: str) -> str:
    """The task's line as the session writes it: handed back when that is
    what was queued (an earlier resume's), else the plain delivery."""
    lines = (briefs.task_line(task, _task_file(task)),
             briefs.handback_line(task, _task_file(task)))
    return journalled if journalled in lines else lines[0]


def _task_file(task: Task) -> str:
    return f".choragos/tasks/{task.id}.md"
