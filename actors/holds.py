"""Human gates for finished work the machine checks could not pass.

A policy of the session core.  A work-done is held here when its judge gave
no usable verdict (unparseable, the judge timed out or exited), when the
judge rounds ran out, or when a role changed a file another role owns.
Nothing passes silently: the operator approves (the report goes on as if
the checks had passed) or rejects (the task fails and the orchestrator is
told), with ``choragos gate`` or the deck's gate dialog.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from choragos.actors.coreport import CorePort
from choragos.actors.mergeflow import MergeFlow, close_gate
from choragos.board.tasks import Task, TaskState
from choragos.control import wire
from choragos.roles import briefs
from choragos.session import news

if TYPE_CHECKING:
    from choragos.actors.core import CoreState


@dataclass
class Hold:
    """A task's finished work held at a judge or owner gate until the operator decides."""

    task_id: str
    role: str
    kind: str       # "judge" | "owner"
    why: str
    line: str       # the report line that goes on if the operator approves
    unmerged: bool
    created: float
    file: str = ""  # what to read: the verdict, or the task file


class Holds:
    """A policy of the core: owns the work held for a person (by task id);
    approved work goes on through the merge gates' policy."""

    def __init__(self, port: CorePort, s: CoreState, merges: MergeFlow) -> None:
        self.port, self.s, self.merges = port, s, merges
        self.held: OrderedDict[str, Hold] = s.holds

    def hold(self, task: Task, kind: str, why: str, line: str, unmerged: bool,
             file: str = "") -> None:
        hold = Hold(task.id, task.role, kind, why, line, unmerged, self.s.board.clock(),
                    file or str(self.s.state_dir / "tasks" / f"{task.id}.md"))
        self.held[task.id] = hold
        task = self.port.settle(task, task.state, checks=f"held at a {kind} gate: {why}"[:200],
                                waiting={"kind": kind, "why": why, "line": line,
                                     "unmerged": unmerged, "file": hold.file})
        self.port.event("work held", task=task.id, role=task.role, kind=kind, why=why)
        self.port.publish(news.GateOpened(hold_view(task, hold)))
        self.port.alert("on_gate", task.role, task)

    def listing(self) -> list[dict]:
        now = self.s.board.clock()
        return [{"id": h.task_id, "role": h.role, "kind": h.kind,
                 "label": f"{h.kind} gate: {h.why}"[:120], "brief": h.file,
                 "age": round(now - h.created, 1), "file": h.file}
                for h in self.held.values()]

    def decision(self, request: dict) -> dict:
        hold, task = close_gate(self.port, self.s.board, self.held, request["id"])
        if request["action"] == "approve":
            self.port.event("held work approved", task=task.id, role=task.role, kind=hold.kind)
            task = self.port.settle(task, TaskState.DONE,
                                    checks=f"approved at the {hold.kind} gate")
            self.merges.pass_on(task, f"{hold.line} (The operator approved it at the {hold.kind} "
                                f"gate: {briefs.one_line(hold.why, 200)}.)", hold.unmerged, "done")
            return wire.ok(id=task.id, state="done")
        reason = request.get("reason") or ""
        self.port.event("held work rejected", task=task.id, role=task.role, kind=hold.kind,
                        reason=reason)
        task = self.port.settle(task, TaskState.FAILED,
                                checks=f"rejected at the {hold.kind} gate")
        self.port.enqueue(self.s.start_role, briefs.held_rejected_line(task, hold.kind, hold.why,
                                                                       reason), "notice", task.id)
        return wire.ok(id=task.id, state="failed")

    def restore(self, task: Task, waiting: dict, now: float) -> None:
        """A hold the board says the work waited at before the restart."""
        kind = waiting["kind"]
        hold = Hold(task.id, task.role, kind, waiting["why"], waiting["line"],
                    waiting["unmerged"], now, waiting.get("file", ""))
        self.held[task.id] = hold
        self.port.publish(news.GateOpened(hold_view(task, hold)))


def hold_view(task: Task, hold: Hold) -> news.GateView:
    """What the deck's gate dialog shows for held work."""
    return news.GateView(task,
                         hold.kind,
                         diff=hold.file,
                         label=f"{hold.kind} gate: {hold.why}"[:120],
                         created=hold.created)
