"""The task board: every delegation, its state and its history.

The board is plain data owned by the session core actor; nothing here is
thread-safe on purpose (one owner, many readers through snapshots).

Past KEEP_RESOLVED done or rejected tasks, the oldest move to the archive:
still found by id, listed only when asked for, so what a delegation or a
board listing costs does not grow with the session's history.  (``choragos
report`` reads the event log, which holds every task.)
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum


class TaskState(StrEnum):
    QUEUED = "queued"        # created, waiting for its checkpoint and delivery
    GATED = "gated"          # held for the operator's approval
    DELIVERED = "delivered"  # typed into the worker's pane
    DONE = "done"            # the worker ran work-done
    REJECTED = "rejected"    # the operator said no at the gate, or cancelled it before it went in
    TIMED_OUT = "timed-out"  # outlived the role's timeout (may still report)
    FAILED = "failed"        # could not be delivered, the worker died on it, or said so
    BLOCKED = "blocked"      # the worker reported it cannot go on without something


# Which state may follow which.  A late work-done still resolves a task that
# timed out or whose worker died: the report is real, so it is never dropped.
TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    TaskState.QUEUED: frozenset({TaskState.GATED, TaskState.DELIVERED, TaskState.FAILED,
                                 TaskState.REJECTED}),
    TaskState.GATED: frozenset({TaskState.QUEUED, TaskState.REJECTED}),
    TaskState.DELIVERED: frozenset({TaskState.DONE, TaskState.TIMED_OUT, TaskState.FAILED,
                                    TaskState.BLOCKED}),
    TaskState.TIMED_OUT: frozenset({TaskState.DONE, TaskState.FAILED, TaskState.BLOCKED}),
    TaskState.FAILED: frozenset({TaskState.DONE, TaskState.BLOCKED}),
    TaskState.BLOCKED: frozenset({TaskState.DONE, TaskState.FAILED}),
    TaskState.DONE: frozenset(),
    TaskState.REJECTED: frozenset(),
}

# Tasks in these states never change again, so they can leave the live board.
ARCHIVABLE = frozenset({TaskState.DONE, TaskState.REJECTED})
KEEP_RESOLVED = 100

OPEN_STATES = frozenset({TaskState.QUEUED, TaskState.GATED, TaskState.DELIVERED,
                         TaskState.TIMED_OUT})
# Nothing more will happen to these without a new delegation; a blocked task
# is not among them: it waits for whatever its worker said it needs.
SETTLED_STATES = frozenset({TaskState.DONE, TaskState.FAILED, TaskState.REJECTED})


class BoardError(Exception):
    """A board operation that makes no sense (unknown id, illegal transition)."""


@dataclass(frozen=True)
class Task:
    """One delegation on the board: its text, its state and what happened to it."""

    id: str
    role: str
    text: str
    brief: str | None = None
    state: TaskState = TaskState.QUEUED
    created: float = 0.0
    delivered: float | None = None
    finished: float | None = None
    report: str | None = None
    summary: str | None = None
    checkpoint: str | None = None
    note: str = ""
    changes: tuple[dict, ...] | None = None  # files changed since the checkpoint, when measured
    changed: dict | None = None  # their totals (files, added, deleted); the list keeps the first
    flagged: bool | None = None  # the changes are suspect (none for a writer, any for a reader)
    checks: str = ""   # where its verify (or judge) stands, e.g. "verify failed 1/3"
    rounds: int = 0    # failed checks so far
    waiting: dict | None = None  # what its work waits on (a merge gate, a hold, a judge)
    # The owned files' fingerprints (path -> SHA-256, None: absent) as it found
    # them at its turn, kept until it is done or rejected: on the board, so
    # journaled, and a resumed session still checks its work-done for them.
    owned: dict | None = None

    @property
    def label(self) -> str:
        """The first line of the task text, shortened for tables."""
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        return first if len(first) <= 72 else first[:71] + "…"

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def as_dict(self, now: float | None = None) -> dict:
        # The fields as they are: a task is frozen and nothing that reads a
        # row changes what is inside it, and a deep copy (``asdict``) cost a
        # board listing of 100 tasks 2.4 ms.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["state"] = str(self.state)
        data["label"] = self.label
        now = time.time() if now is None else now
        data["age"] = round(now - self.created, 3)
        end = self.finished if self.finished is not None else now
        data["duration"] = round(end - self.delivered, 3) if self.delivered else None
        return data


class LiveTasks(dict):
    """The live board's tasks by id, with two indexes kept as tasks are put
    in and taken out: the ids of the unsettled ones (``at_work``, in the order
    they became unsettled) and how many tasks are in each state
    (``states``).  So "is every task settled?", "which tasks are at work?"
    and "how many are done?" (asked on every move, every delegation and
    every role's change) walk no board, however many settled tasks it
    keeps.  Every way of writing a dict goes through :meth:`__setitem__` or
    :meth:`pop`, so the indexes hold whoever writes."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__()
        self.at_work: dict[str, None] = {}  # an ordered set
        self.states: Counter = Counter()
        # Settled tasks whose work still waits (a merge gate, a merge under
        # way, held work): the crew is not done while one does.
        self.waits: dict[str, None] = {}
        self.update(*args, **kwargs)

    @property
    def unsettled(self) -> int:
        return len(self.at_work)

    def _count(self, task: Task | None, step: int) -> None:
        if task is None:
            return
        self.states[task.state] += step
        if task.waiting:
            if step > 0:
                self.waits[task.id] = None
            else:
                self.waits.pop(task.id, None)
        if task.state in SETTLED_STATES:
            return
        if step > 0:
            self.at_work[task.id] = None
        else:
            self.at_work.pop(task.id, None)

    def __setitem__(self, task_id: str, task: Task) -> None:
        self._count(self.get(task_id), -1)
        super().__setitem__(task_id, task)
        self._count(task, 1)

    def __delitem__(self, task_id: str) -> None:
        self._count(self.get(task_id), -1)
        super().__delitem__(task_id)

    def pop(self, task_id: str, *default: object) -> object:
        self._count(self.get(task_id), -1)
        return super().pop(task_id, *default)

    def popitem(self) -> tuple[str, Task]:
        task_id, task = super().popitem()
        self._count(task, -1)
        return task_id, task

    def setdefault(self, task_id: str, task: Task) -> Task:
        if task_id not in self:
            self[task_id] = task
        return self[task_id]

    def update(self, *args: object, **kwargs: object) -> None:
        for task_id, task in dict(*args, **kwargs).items():
            self[task_id] = task

    def __ior__(self, other: object) -> LiveTasks:
        self.update(other)
        return self

    def clear(self) -> None:
        super().clear()
        self.at_work.clear()
        self.states.clear()
        self.waits.clear()

    def unsettled_tasks(self) -> list[Task]:
        """The unsettled tasks, oldest id first, from the index (no walk)."""
        return sorted((self[task_id] for task_id in self.at_work), key=_number)


def _number(task: Task) -> int:
    return int(task.id[1:]) if task.id[1:].isdigit() else 0


@dataclass
class Board:
    """Tasks in creation order, with ids ``T1``, ``T2``…: a new session
    starts at :func:`choragos.board.taskids.first_free`, so ids are unique per
    directory across sessions."""

    tasks: LiveTasks = field(default_factory=LiveTasks)
    next_number: int = 1
    clock: object = time.time
    archive: dict[str, Task] = field(default_factory=LiveTasks)
    resolved: deque = field(default_factory=deque)  # ids, in the order they resolved
    archived_by: Counter = field(default_factory=Counter)  # (role, state) -> archived tasks

    def __post_init__(self) -> None:
        if not isinstance(self.tasks, LiveTasks):
            self.tasks = LiveTasks(self.tasks)
        if not isinstance(self.archive, LiveTasks):
            # Indexed too: a done task whose merge gate waits may be archived.
            self.archive = LiveTasks(self.archive)

    def waiting_ids(self) -> list[str]:
        """The tasks whose work waits on a gate, a merge or a verdict (no walk)."""
        return [*self.archive.waits, *self.tasks.waits]

    def create(self, role: str, text: str, brief: str | None = None) -> Task:
        task = Task(id=f"T{self.next_number}", role=role, text=text, brief=brief,
                    created=self.clock())
        self.next_number += 1
        self.tasks[task.id] = task
        return task

    def get(self, task_id: str) -> Task:
        task = self.lookup(task_id)
        if task is None:
            raise BoardError(f"no task {task_id} on the board")
        return task

    def lookup(self, task_id: str) -> Task | None:
        """The task, live or archived; None when there is no such id."""
        return self.tasks.get(task_id) or self.archive.get(task_id)

    def put_back(self, task: Task) -> None:
        """Undo a change: ``task`` as it was before (live, where changes happen)."""
        gone = self.archive.pop(task.id, None)
        if gone is not None:
            self.archived_by[(gone.role, str(gone.state))] -= 1
        self.tasks[task.id] = task

    def move(self, task_id: str, state: TaskState, **changes: object) -> Task:
        """Move a task to ``state``, refusing transitions the table forbids."""
        task = self.get(task_id)
        if state not in TRANSITIONS[task.state]:
            raise BoardError(f"task {task_id} is {task.state}; it cannot become {state}")
        stamp = self.clock()
        if state is TaskState.DELIVERED:
            changes.setdefault("delivered", stamp)
        if state not in OPEN_STATES:
            changes.setdefault("finished", stamp)
        if state in ARCHIVABLE:
            changes.setdefault("owned", None)  # never checked again: not kept in the history
        task = replace(task, state=state, **changes)
        self.tasks[task_id] = task
        if state in ARCHIVABLE:
            self.resolved.append(task_id)
            self._compact()
        return task

    def _compact(self) -> None:
        while len(self.resolved) > KEEP_RESOLVED:
            old = self.tasks.get(self.resolved.popleft())
            if old is not None and old.state in ARCHIVABLE:
                self.archive[old.id] = self.tasks.pop(old.id)
                self.archived_by[(old.role, str(old.state))] += 1

    def annotate(self, task_id: str, **changes: object) -> Task:
        task = replace(self.get(task_id), **changes)
        (self.archive if task_id in self.archive else self.tasks)[task_id] = task
        return task

    def forget(self, task_ids: list[str]) -> None:
        """Undo :meth:`create` for the tasks of a refused request, ids included."""
        for task_id in reversed(task_ids):
            self.tasks.pop(task_id, None)
            if task_id == f"T{self.next_number - 1}":
                self.next_number -= 1

    def open_for(self, role: str) -> list[Task]:
        """The role's open tasks, oldest first; an open task is unsettled, so
        this looks at the tasks at work only, not at the settled ones kept."""
        return [t for t in self.tasks.unsettled_tasks() if t.role == role and t.is_open]

    def archived_counts(self) -> list[dict]:
        """How many archived tasks each role has in each state, without listing them."""
        return [{"role": role, "state": state, "count": count}
                for (role, state), count in sorted(self.archived_by.items()) if count > 0]

    def snapshot(self, archived: bool = False) -> list[dict]:
        """The live board; with ``archived``, every task, in id order."""
        now = self.clock()
        tasks = list(self.tasks.values())
        if archived:
            tasks = sorted([*self.archive.values(), *tasks], key=lambda t: int(t.id[1:]))
        return [t.as_dict(now) for t in tasks]
