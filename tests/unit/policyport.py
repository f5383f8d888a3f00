"""A recording effects port and a small core state, for the core's policies
tested with no actor, no PTY and no timers: given a state and an event, the
effects a policy asked for are the port's ``calls``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from choragos.actors import messages as m
from choragos.actors.core import CoreState, Seat
from choragos.board.events import EventLog
from choragos.board.tasks import Task, TaskState
from choragos.config.model import Config, RoleSpec, UISettings
from choragos.roles.rolestatus import RoleStatus
from tests.conftest import Told


class RecordingPort:
    """Implements :class:`~choragos.actors.coreport.CorePort`: records each
    effect as ``(name, args, fields)``; board moves are applied to the board,
    so a policy reads back what it changed, as it does under the core."""

    def __init__(self, s: CoreState) -> None:
        self.s = s
        self.calls: list[tuple[str, tuple, dict]] = []

    def _note(self, name: str, *args: Any, **fields: Any) -> None:
        self.calls.append((name, args, fields))

    def named(self, name: str) -> list[tuple[tuple, dict]]:
        return [(args, fields) for called, args, fields in self.calls if called == name]

    def kinds(self) -> list[str]:
        """The effects in order, events by their name (``event:role held``)."""
        return [f"event:{args[0]}" if name == "event" else name
                for name, args, _ in self.calls]

    def event(self, event: str, **fields: Any) -> None:
        self._note("event", event, **fields)

    def publish(self, item: Any) -> None:
        self._note("publish", item)

    def journal(self, kind: str, **fields: Any) -> None:
        self._note("journal", kind, **fields)

    def alert(self, hook: str, role: str, task: Task | None) -> None:
        self._note("alert", hook, role, task.id if task else None)

    def ring(self, hook: str, role: str, text: str, task_id: str = "",
             extra: dict[str, str] | None = None) -> None:
        self._note("ring", hook, role, text)

    def mark(self, role: str, mark: str, on: bool) -> None:
        self._note("mark", role, mark, on)

    def enqueue(self, role: str, text: str, kind: str, task_id: str | None = None,
                front: bool = False) -> None:
        self._note("enqueue", role, text, kind, task_id, front=front)

    def move(self, task_id: str, state: TaskState, **changes: Any) -> Task:
        self._note("move", task_id, state, **changes)
        return self.s.board.move(task_id, state, **changes)

    def annotate(self, task_id: str, **changes: Any) -> Task:
        self._note("annotate", task_id, **changes)
        return self.s.board.annotate(task_id, **changes)

    def settle(self, task: Task, state: TaskState, **changes: Any) -> Task:
        self._note("settle", task.id, state, **changes)
        changes.setdefault("waiting", None)
        if task.state is state:
            return self.s.board.annotate(task.id, **changes)
        return self.s.board.move(task.id, state, **changes)

    def fail_task(self, task: Task, reason: str) -> None:
        self._note("fail_task", task.id, reason)
        self.s.board.move(task.id, TaskState.FAILED, note=reason)

    def record_tasks(self, targets: list[str], request: dict) -> list[Task]:
        self._note("record_tasks", targets, request["task"])
        return [self.s.board.create(role, request["task"], request.get("brief"))
                for role in targets]

    def route_task(self, task: Task) -> Task:
        self._note("route_task", task.id)
        return task

    def queue_task(self, task: Task) -> None:
        self._note("queue_task", task.id, task.role)

    def write_task_file(self, task: Task) -> None:
        self._note("write_task_file", task.id)

    def later(self, seconds: float, message: Any) -> Any:
        self._note("later", seconds, message)
        return ("timer", message)

    def tell_when_synced(self, target: Any, message: Any) -> None:
        self._note("tell_when_synced", message)
        target.tell(message)


def core_state(tmp_path: Path, *workers: RoleSpec, status: str = "idle",
               ui: UISettings | None = None, **config: Any) -> CoreState:
    """An orchestrator ("lead") and ``workers`` (a "coder" by default), each
    seated with a handle that records what it is told."""
    roles = (RoleSpec(name="lead", command="x", start=True),
             *(workers or (RoleSpec(name="coder", command="x"),)))
    state = CoreState(config=Config(roles=roles, ui=ui or UISettings(), **config),
                      workdir=tmp_path, events=EventLog(tmp_path / "events.jsonl"))
    for spec in roles:
        state.seats[spec.name] = Seat(spec.name, Told(),
                                      m.RoleView(spec.name, RoleStatus(status),
                                                 ready=status == "idle"))
    return state


def delivered(state: CoreState, role: str = "coder", text: str = "do it") -> Task:
    """A task on the board that ``role`` holds."""
    return state.board.move(state.board.create(role, text).id, TaskState.DELIVERED)
