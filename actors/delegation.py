"""Delegation: new tasks, the approve gate, and a task's way to its queue.

A policy of the session core: it owns the approve gate's queue (the
delegations waiting for the operator, ``CoreState.gates``).  A delegation
is written all or none (the tasks, their files, the journal and the event
log); each task then waits at the gate when its role has ``approve``, or
goes on: its line is queued for its role (the delivery checkpoints the
workspace for it when its turn comes, see :mod:`~choragos.actors.delivery`).  The ``gate``
command decides delegations, merge gates and held work, each by the policy
that owns it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from choragos import namedfile, statedir
from choragos.actors.corejournal import CoreJournal
from choragos.actors.coreport import CorePort, not_recorded, unknown_roles
from choragos.actors.guardrails import Guardrails
from choragos.actors.holds import Holds
from choragos.actors.limitflow import LimitFlow
from choragos.actors.mergeflow import MergeFlow
from choragos.board.tasks import Task, TaskState
from choragos.control import wire
from choragos.roles import briefs
from choragos.session import news

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

def _not_cancellable(task: Task, typing: str) -> str:
    if typing:
        return (f"{task.id} is being typed into {typing} now: it cannot be taken back; "
                f"wait for its report, or pause or restart {typing}")
    if task.state is TaskState.DELIVERED:
        return (f"{task.id} is already with {task.role}: it cannot be taken back; wait for "
                f"its report, or pause or restart {task.role}")
    return f"{task.id} is {task.state}, not waiting to be typed in: there is nothing to cancel"


class Delegation:
    def __init__(self, port: CorePort, s: CoreState, journaling: CoreJournal,
                 guard: Guardrails, limits: LimitFlow, merges: MergeFlow, holds: Holds) -> None:
        self.port, self.s, self.journaling = port, s, journaling
        self.guard, self.limits = guard, limits
        self.merges, self.holds = merges, holds

    def command(self, request: dict) -> dict:
        targets = list(dict.fromkeys(request["to"]))
        unknown = [name for name in targets if name not in self.s.seats]
        if unknown:
            return wire.error(unknown_roles(unknown, self.s.seats))
        down = self.guard.down_roles(targets)
        if down and request.get("require_live"):
            return wire.error("; ".join(down.values()) + "; nothing was delegated")
        brief_text, refusal = self._brief_for_hosts(targets, request.get("brief"))
        if refusal:
            return wire.error(refusal)
        try:
            created = self.record_tasks(targets, request, brief_text)
        except OSError as exc:
            return wire.error(not_recorded(exc, "delegation"))
        created = [self.route_task(task) for task in created]
        extra = {"warnings": [f"{why}; the task waits for it" for why in down.values()]}
        return wire.ok(tasks=[{"id": t.id, "role": t.role, "state": str(t.state)}
                              for t in created], **(extra if down else {}))

    def _brief_for_hosts(self, targets: list[str], brief: str | None) -> tuple[str | None, str]:
        """The brief's text when the team has roles on other hosts (they cannot
        read the operator's file: each task gets a copy), or why a target
        there cannot have it; ``(None, "")`` when no copy is wanted."""
        if not brief or not any(spec.host for spec in self.s.config.roles):
            return None, ""
        remote = [name for name in targets if self.s.config.role(name).host]
        try:
            data = namedfile.read_regular(brief, briefs.BRIEF_COPY_LIMIT + 1)
        except OSError as exc:
            why = f"the brief {brief} cannot be read ({exc.strerror or exc})"
        else:
            if len(data) <= briefs.BRIEF_COPY_LIMIT:
                return data.decode("utf-8", errors="replace"), ""
            why = f"the brief {brief} is bigger than 1 MiB"
        if not remote:
            return None, ""  # only roles here, which read the file itself
        return None, (f"{why}, and {', '.join(remote)} runs on another host, which gets a "
                      "copy of it; put the details in a smaller file or in --task; "
                      "nothing was delegated")

    def record_tasks(self, targets: list[str], request: dict,
                     brief_text: str | None = None) -> list[Task]:
        """Journal every task (in one write: all or none) with its file, then
        its event; on a failure the board forgets them all and their files go,
        so a refused delegation leaves nothing behind."""
        created: list[Task] = []
        try:
            with self.journaling.batch():
                for role in targets:
                    created.append(self.s.board.create(role, request["task"],
                                                       request.get("brief")))
                    if brief_text is not None:
                        statedir.write_text(self.s.workdir / briefs.brief_copy(created[-1].id),
                                            brief_text)
                    self.write_task_file(created[-1])
            records = [self.s.events.append("delegate", task=t.id, role=t.role, label=t.label,
                                            brief=t.brief, text=t.text) for t in created]
        except OSError:
            self._unrecord(created)
            raise
        for record in records:
            self.port.publish(news.EventLogged.of(record))
        for task in created:  # on every board at once, queued behind a busy role as well
            self.port.publish(news.TaskChanged(task))
        return created

    def _unrecord(self, tasks: list[Task]) -> None:
        ids = [task.id for task in tasks]
        self.s.board.forget(ids)
        for task_id in ids:
            for path in (self.s.state_dir / "tasks" / f"{task_id}.md",
                         self.s.workdir / briefs.brief_copy(task_id)):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def route_task(self, task: Task) -> Task:
        role = task.role
        if self.s.config.role(role).approve:
            task = self.port.move(task.id, TaskState.GATED)
            self.s.gates[task.id] = task
            self.port.event("delegate gated", task=task.id, role=role, label=task.label)
            self.port.publish(news.GateOpened(news.GateView(task)))
            self.port.alert("on_gate", role, task)
        else:
            self.queue_task(task)
        return task

    def cancel_command(self, request: dict) -> dict:
        """The operator takes back a task not yet typed into its role: one at
        its approve gate is rejected; one queued leaves its role's queue,
        ends ``rejected`` and the orchestrator is told.  A task already typed
        in is the role's: it cannot be taken back unseen by its agent."""
        task_id, reason = request["id"], request.get("reason") or ""
        if task_id in self.s.gates:
            return self.gate_command({"action": "reject", "id": task_id, "reason": reason})
        task = self.s.board.lookup(task_id)
        if task is None:
            return wire.error(f"no task {task_id} is on the board")
        typing = next((seat.name for seat in self.s.seats.values()
                       if seat.in_flight is not None and seat.in_flight.task_id == task_id), "")
        if task.state is not TaskState.QUEUED or typing:
            return wire.error(_not_cancellable(task, typing))
        note = "cancelled by the operator" + (f": {reason}" if reason.strip() else "")
        # All or none: a kill between them must not leave it queued with no line.
        with self.journaling.batch():
            for seat in self.s.seats.values():
                self.limits.unqueue(seat, task_id)
            task = self.port.move(task_id, TaskState.REJECTED, note=note)
            self.port.enqueue(self.s.start_role, briefs.cancelled_line(task, reason), "notice",
                              task_id)
        self.s.snapped.pop(task_id, None)
        self.port.event("task cancelled", task=task_id, role=task.role, reason=reason)
        return wire.ok(id=task_id, state=str(task.state))

    def write_task_file(self, task: Task) -> None:
        path = self.s.state_dir / "tasks" / f"{task.id}.md"
        statedir.write_text(path, briefs.document_for(task, self.s.config.role(task.role)))

    def queue_task(self, task: Task) -> None:
        task = self.limits.around_limit(task)
        line = briefs.task_line(task, f".choragos/tasks/{task.id}.md")
        self.port.enqueue(task.role, line, "task", task.id)

    # -- the gate command ---------------------------------------------------------

    def gate_command(self, request: dict) -> dict:
        action = request["action"]
        if action == "list":
            now = self.s.board.clock()
            return wire.ok(gates=[{"id": t.id, "role": t.role, "label": t.label,
                                   "brief": t.brief, "age": round(now - t.created, 1),
                                   "file": str(self.s.state_dir / "tasks" / f"{t.id}.md")}
                                  for t in self.s.gates.values()] + self.merges.listing()
                           + self.holds.listing())
        task_id = request["id"]
        if task_id in self.s.merging.gates:
            return self.merges.decision(request)
        if task_id in self.s.holds:
            return self.holds.decision(request)
        if task_id not in self.s.gates:
            return wire.error(f"no delegation {task_id} is waiting at a gate")
        task = self.s.gates.pop(task_id)
        if action == "approve":
            self.port.event("gate approved", task=task_id, role=task.role)
            task = self.port.move(task_id, TaskState.QUEUED)
            self.queue_task(task)
        else:
            reason = request.get("reason") or ""
            task = self.port.move(task_id, TaskState.REJECTED, note=reason)
            self.port.event("gate rejected", task=task_id, role=task.role, reason=reason)
            self.port.enqueue(self.s.start_role, briefs.rejection_line(task, reason), "notice",
                              task_id)
        return wire.ok(id=task_id, state=str(task.state))
