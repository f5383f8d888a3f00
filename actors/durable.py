"""The session journal's records of the core: the journaled board, the task
records, the acks that wait for the disk, and the messages about them.

The core journals next to its events (:mod:`choragos.actors.corejournal`);
the board records every task change itself (:class:`JournaledBoard`), so no
state transition can be forgotten.  A resumed session's restore is
:mod:`choragos.actors.resume`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields
from typing import Any

from choragos.board.journal import Image
from choragos.board.tasks import ARCHIVABLE, Board, Task, TaskState

_TASK_FIELDS = tuple(f.name for f in fields(Task))  # in the dataclass's order
_TASK_NAMES = frozenset(_TASK_FIELDS)


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
    # The fields as they are: the record is encoded at once and a task is
    # frozen; ``asdict``'s deep copy was the core's largest cost per move.
    data = {name: getattr(task, name) for name in _TASK_FIELDS}
    data["state"] = str(task.state)
    return data


def task_from(data: dict) -> Task:
    known = {k: v for k, v in data.items() if k in _TASK_NAMES}
    return Task(**{**known, "state": TaskState(known["state"])})


def unsaved_ack(ack: Any, reason: str) -> Any:
    if not isinstance(ack, dict) or ack.get("status") != "ok":
        return ack
    note = (f"not saved to disk ({reason}): the session took it, but it would not "
            f"survive a restart of the server")
    return {**ack, "warning": "; ".join(filter(None, [ack.get("warning"), note]))}


def durable_ack(journal: Any, ack: Any) -> Any:
    """Hold an ack until its changes are on disk; say so when they could not be."""
    if journal is None or not isinstance(ack, dict):
        return ack
    error = journal.wait_synced()
    return unsaved_ack(ack, error) if error else ack


