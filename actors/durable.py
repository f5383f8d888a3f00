"""The core's side of the journal: what it records, and a resumed session's restore.

The core journals next to its events (``CoreActor.journal``); the board
records every task change itself (:class:`JournaledBoard`), so no state
transition can be forgotten.  :func:`restore_into` runs on the core's thread
once, before any role is spawned, and rebuilds the board, the gates, the
delivery queues and the clocks from a journal image.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from dataclasses import asdict, dataclass, fields
from typing import Any

from choragos import briefs
from choragos.actors.clocks import PauseClocks, StartClock
from choragos.board import ARCHIVABLE, Board, Task, TaskState
from choragos.journal import Image
from choragos.rolestatus import RoleStatus

log = logging.getLogger("choragos.durable")

_TASK_FIELDS = frozenset(f.name for f in fields(Task))
_DELIVERED = (TaskState.DELIVERED, TaskState.TIMED_OUT)


HEARTBEAT = 1.0  # seconds between "alive" records while a timeout clock runs


@dataclass(frozen=True)
class Heartbeat:
    """To the core: note the time while clocks run, so a crash's moment is known."""


@dataclass(frozen=True)
class SaveLayout:
    """To the core: the deck's tiling changed; journal it for a resume."""

    layout: dict


@dataclass(frozen=True)
class Restore:
    """To the core: rebuild from a journal image before the roles are spawned."""

    image: Image


@dataclass
class JournaledBoard(Board):
    """A board that journals each task as it is created, moved or annotated.

    A creation that cannot be journaled raises, so the request that made it
    is refused and undone; a later change that cannot be (a full disk) is
    live but not durable, and ``on_unsaved`` is told, so the ack says so.
    """

    journal: Any = None
    on_unsaved: Any = None  # Callable[[OSError], None]

    def create(self, role: str, text: str, brief: str | None = None) -> Task:
        task = super().create(role, text, brief)
        try:
            return self._record(task)
        except OSError:
            super().forget([task.id])  # never on the board, its id free again
            raise

    def move(self, task_id: str, state: TaskState, **changes: object) -> Task:
        return self._lenient(super().move(task_id, state, **changes))

    def annotate(self, task_id: str, **changes: object) -> Task:
        return self._lenient(super().annotate(task_id, **changes))

    def _lenient(self, task: Task) -> Task:
        try:
            return self._record(task)
        except OSError as exc:
            if self.on_unsaved is None:
                raise
            self.on_unsaved(exc)
            return task

    def put_back(self, task: Task) -> None:
        """A refused request's undo is journaled too, so a resume does not redo it."""
        super().put_back(task)
        self._record(task, undo=True)

    def forget(self, task_ids: list[str]) -> None:
        """Undo :meth:`create`, in the journal too when a creation reached it
        (a batch that was not written left nothing there to undo)."""
        super().forget(task_ids)
        if self.journal is not None and any(t in self.journal.image.tasks for t in task_ids):
            self._undo("forget", ids=task_ids, next_number=self.next_number)

    def restore(self, tasks: list[Task]) -> None:
        """Load a journal's tasks; the oldest resolved ones go to the archive as live."""
        for task in tasks:
            self.tasks[task.id] = task
        resolved = sorted((t for t in tasks if t.state in ARCHIVABLE),
                          key=lambda t: t.finished or 0.0)
        self.resolved.extend(t.id for t in resolved)
        self._compact()

    def _record(self, task: Task, undo: bool = False) -> Task:
        if undo:
            self._undo("task", task=task_record(task))
        elif self.journal is not None:
            self.journal.append("task", task=task_record(task))
        return task

    def _undo(self, kind: str, **fields: object) -> None:
        # An undo follows a failed write; when the journal itself failed, the
        # record being undone never reached it either.
        if self.journal is not None:
            with contextlib.suppress(OSError):
                self.journal.append(kind, **fields)


def task_record(task: Task) -> dict:
    data = asdict(task)
    data["state"] = str(task.state)
    return data


def task_from(data: dict) -> Task:
    known = {k: v for k, v in data.items() if k in _TASK_FIELDS}
    return Task(**{**known, "state": TaskState(known["state"])})


def settle(core: Any, result: Any, unsaved: list[str]) -> Any:
    """After a message: say what could not be journaled, in the log and in an ok ack."""
    if not unsaved:
        return result
    core.event("journal write failed", error=unsaved[0])
    return unsaved_ack(result, unsaved[0])


def unsaved_ack(ack: Any, reason: str) -> Any:
    if not isinstance(ack, dict) or ack.get("status") != "ok":
        return ack
    note = (f"not saved to disk ({reason}): the session took it, but it would not "
            f"survive a restart of the server")
    return {**ack, "warning": "; ".join(filter(None, [ack.get("warning"), note]))}


def when_synced(core: Any, action: Any) -> None:
    """Run ``action`` once the journal holds everything appended so far."""
    journal = core.s.journal
    if journal is None:
        action()
        return
    try:
        journal.after_sync(action)
    except OSError as exc:  # a synchronous journal that could not sync
        core._note_unsaved(exc)
        action()


def durable_ack(journal: Any, ack: Any) -> Any:
    """Hold an ack until its changes are on disk; say so when they could not be."""
    if journal is None or not isinstance(ack, dict):
        return ack
    error = journal.wait_synced()
    return unsaved_ack(ack, error) if error else ack


def arm_heartbeat(core: Any) -> None:
    """While a timeout clock runs, an "alive" record every HEARTBEAT seconds;
    with none running nothing is armed, so an idle session never wakes for it.
    Called whenever a clock record is journaled."""
    s = core.s
    journal, timers = s.journal, s.timers
    if journal is None or timers is None or s.me is None or not journal.image.clocks:
        return
    pending = s.heartbeat
    # One that should have fired a beat ago was lost with a crashed core's
    # mailbox: arm another.
    if pending is not None and pending.due > timers.clock() - HEARTBEAT:
        return
    s.heartbeat = timers.after(HEARTBEAT, s.me, Heartbeat())


def heartbeat(core: Any) -> None:
    core.s.heartbeat = None
    journal = core.s.journal
    if journal is not None and journal.image.clocks:
        # The time left on a clock is counted up to the last record, so a quiet
        # session that dies must still have written one lately.
        core.journal("alive")
        arm_heartbeat(core)


def journal_role(core: Any, view: Any) -> None:
    """Record a role's restart budget and pause state when either changed."""
    journal = core.s.journal
    if journal is None:
        return
    known = journal.image.roles.get(view.name, {})
    now = {"restarts_used": view.budget_used, "restarts_total": view.restarts}
    if view.status in (RoleStatus.PAUSED, RoleStatus.IDLE, RoleStatus.WORKING,
                       RoleStatus.WAITING):
        # booting, exited and failed say nothing about an operator's pause
        now["paused"] = view.status == RoleStatus.PAUSED
    if any(known.get(key) != value for key, value in now.items()):
        core.journal("role", role=view.name, **now)


# -- restore ------------------------------------------------------------------------

def restore_into(core: Any, image: Image) -> None:
    s = core.s
    s.board.restore([task_from(data) for data in image.tasks.values()])
    s.board.next_number = max(s.board.next_number, image.next_number)
    s.next_injection = max(s.next_injection, image.next_injection)
    _retire_dropped(core)
    if image.handoff:
        core.journal("handoff", done=True)
    s.gates = OrderedDict((t.id, t) for t in s.board.tasks.values()
                          if t.state is TaskState.GATED)
    s.tokens = s.flushed = dict(image.tokens)
    # The old queues are rebuilt below, hand-backs first: drop them all before
    # anything is queued, or a drop would discard what was just queued.
    for role in image.queues:
        core.journal("drop queue", role=role)
    handed = _hand_back(core, image)
    requeued = _requeue(core, image, handed)
    _queue_undelivered(core, image, requeued | handed)
    _restart_clocks(core, image)
    core.isolation.restore()  # merge gates, held work, verdicts pending (on the board)
    # The board as restored: the event log then tells what the journal tells.
    every = [*s.board.archive.values(), *s.board.tasks.values()]
    core.event("session resumed", from_pid=image.pid, tasks=len(every),
               board={t.id: str(t.state) for t in every},
               handed_back=sorted(handed), gates=list(s.gates),
               queued={name: len(seat.queue) for name, seat in s.seats.items()})


def _retire_dropped(core: Any) -> None:
    """After a handoff, open tasks of roles the new team dropped end as history."""
    for task in list(core.s.board.tasks.values()):
        if task.is_open and task.role not in core.s.seats:
            state = TaskState.REJECTED if task.state is TaskState.GATED else TaskState.FAILED
            core.move(task.id, state, note=f"{task.role} is not in the team after a handoff")


def _hand_back(core: Any, image: Image) -> set[str]:
    """Tasks that may have reached their worker go back to it, marked as such."""
    handed = set()
    sent = {i["task"] for queue in image.queues.values() for i in queue
            if i.get("sent") and i["what"] == "task"}
    for task in core.s.board.tasks.values():
        if task.role not in core.s.seats or not task.is_open or task.waiting:
            continue  # (work waiting at a gate or on its judge is not the worker's now)
        if task.state in _DELIVERED or (task.id in sent and task.state is TaskState.QUEUED):
            core.enqueue(task.role, briefs.handback_line(task, _task_file(task)), "task",
                         task.id)
            handed.add(task.id)
    return handed


def _requeue(core: Any, image: Image, handed: set[str]) -> set[str]:
    """Every queued line goes back in its order, as the board tells it: the
    journal's own text is never typed, since whoever can write the journal
    could have written it (see :func:`_line_from_board`).  A line maybe typed
    is marked repeated."""
    requeued = set()
    for role, queue in image.queues.items():
        if role not in core.s.seats:
            continue
        for injection in queue:
            task_id, what = injection["task"], injection["what"]
            if what == "task":
                task = core.s.board.tasks.get(task_id)
                if task is None or task.id in handed or task.state is not TaskState.QUEUED:
                    continue
                requeued.add(task_id)
                text = _task_line(task, injection["text"])
            else:
                text = _line_from_board(core, role, injection)
                if text is None:
                    continue
                if injection.get("sent"):
                    text = briefs.repeated_line(text)
            core.enqueue(role, text, what, task_id)
    return requeued


def _task_line(task: Task, journalled: str) -> str:
    """The task's line as the session writes it: handed back when that is
    what was queued (an earlier resume's), else the plain delivery."""
    lines = (briefs.task_line(task, _task_file(task)),
             briefs.handback_line(task, _task_file(task)))
    return journalled if journalled in lines else lines[0]


def _line_from_board(core: Any, role: str, injection: dict) -> str | None:
    """A queued report or notice written afresh from its task on the board:
    a report as the worker's work-done gave it, any other notice as where
    its task stands.  One about no task (a budget or team notice, a handoff
    request) was about the session that stopped: it is logged, not typed."""
    task = core.s.board.lookup(injection["task"]) if injection["task"] else None
    if task is None:
        core.event("queued line not restored", role=role, kind=injection["what"],
                    task=injection["task"], text=injection["text"])
        log.warning("a %s queued for %s before the restart is not typed again (it "
                    "names no task on the board); it is in the event log",
                    injection["what"], role)
        return None
    if injection["what"] == "report" and task.summary is not None:
        return briefs.report_line(task.id, task.role, task.summary, task.report,
                                  outcome=str(task.state))
    return briefs.resumed_notice_line(task)


def _queue_undelivered(core: Any, image: Image, queued: set[str]) -> None:
    """Tasks acknowledged but not yet queued (their checkpoint was being taken)."""
    for task in list(core.s.board.tasks.values()):
        if (task.state is TaskState.QUEUED and task.id not in queued
                and task.role in core.s.seats):
            if task.checkpoint:  # taken before the crash: it is the workspace as it was
                core.queue_task(task)
            else:
                core._checkpoint_then_queue(task)


def _restart_clocks(core: Any, image: Image) -> None:
    clocks = core.s.clocks
    if clocks is None:
        return
    for task_id, clock in image.clocks.items():
        task = core.s.board.tasks.get(task_id)
        if task is None or task.state is not TaskState.DELIVERED:
            continue
        left = image.clock_left(task_id)
        clocks.tell(StartClock(task_id, clock["role"], clock["seconds"], left))
        core.journal("clock", action="start", task=task_id, role=clock["role"],
                      seconds=clock["seconds"], left=left)
    for role, state in image.roles.items():
        if state.get("paused"):
            clocks.tell(PauseClocks(role))


def _task_file(task: Task) -> str:
    return f".choragos/tasks/{task.id}.md"
