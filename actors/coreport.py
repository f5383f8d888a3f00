"""What a policy of the session core may ask of the core: its effects port.

The core actor is an executor of small policies (delivery, work checks,
holds, merges and judging, guardrails, limits, budgets, admission, fresh
contexts, restore after resume).  Each policy owns its slice of state and
reads the core's shared facts (the board, the config, the seats); whatever
it wants done outside its own state goes through this port, which the core
implements: an event in the log, an item for the subscribers, a journal
record, a line queued for a role, a task moved on the board, a hook rung,
a message to itself later.  A policy never calls another object's
privates, and a test can hand it a recording port instead of an actor.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from choragos import statedir
from choragos.actors.timers import Timer
from choragos.board.tasks import Task, TaskState


class CorePort(Protocol):
    """The effects the core carries out for its policies."""

    def event(self, event: str, **fields: Any) -> None:
        """Write an event-log record and publish it."""

    def publish(self, item: Any) -> None:
        """Give a news item to every subscriber (the deck, the web view)."""

    def journal(self, kind: str, **fields: Any) -> None:
        """Append a journal record (a full disk is said in the ack, not raised)."""

    def alert(self, hook: str, role: str, task: Task | None) -> None:
        """A human is needed about ``task``: the bell and the hook."""

    def ring(self, hook: str, role: str, text: str, task_id: str = "",
             extra: dict[str, str] | None = None) -> None:
        """The bell and the hook, with a text of the policy's own."""

    def mark(self, role: str, mark: str, on: bool) -> None:
        """Set or clear a mark on the role's card (published when it changes)."""

    def enqueue(self, role: str, text: str, kind: str, task_id: str | None = None,
                front: bool = False) -> None:
        """Queue a line for ``role``; it is typed when the role is ready."""

    def move(self, task_id: str, state: TaskState, **changes: Any) -> Task:
        """Move a task on the board (published, guardrails told)."""

    def settle(self, task: Task, state: TaskState, **changes: Any) -> Task:
        """Move or annotate a task; what it waited on is over unless said again."""

    def annotate(self, task_id: str, **changes: Any) -> Task:
        """Change a task's fields on the board, without a move (published)."""

    def fail_task(self, task: Task, reason: str) -> None:
        """Fail a task and tell the orchestrator."""

    def record_tasks(self, targets: list[str], request: dict) -> list[Task]:
        """Create and journal tasks as a delegation does (raises OSError)."""

    def route_task(self, task: Task) -> Task:
        """Send a new task on: to its gate, or to its queue."""

    def queue_task(self, task: Task) -> None:
        """Queue a task's delivery line (checkpointed when its turn comes)."""

    def write_task_file(self, task: Task) -> None:
        """Write the task's file under .choragos/tasks/."""

    def later(self, seconds: float, message: Any) -> Timer | None:
        """Tell the core ``message`` after ``seconds`` (None without timers)."""

    def tell_when_synced(self, target: Any, message: Any) -> None:
        """Tell ``target`` once the journal holds everything appended so far."""


def unknown_roles(names: list[str], team: Iterable[str]) -> str:
    """The refusal for a request naming roles the team does not have."""
    return f"unknown role {', '.join(names)}; this team has: {', '.join(team)}"


def not_recorded(exc: OSError, what: str) -> str:
    """The error a caller sees when a write failed: "no space left on device:
    the delegation was not recorded"."""
    reason = exc.strerror or str(exc)
    if not isinstance(exc, statedir.StateDirError):
        reason = reason[:1].lower() + reason[1:]
    return f"{reason}: the {what} was not recorded"


def note_waits(port: CorePort, tasks: Iterable[Task], note: str, prefix: str) -> None:
    """The board says why ``tasks`` wait (``note``); ``""`` clears a note that
    begins with ``prefix``.  A task at a gate keeps the gate's word."""
    for task in tasks:
        if task.state is TaskState.GATED or task.note == note:
            continue
        if note or task.note.startswith(prefix):
            port.annotate(task.id, note=note)
