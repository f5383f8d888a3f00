"""Human gates for finished work the machine checks could not pass.

A mixin of the session core.  A work-done is held here when its judge gave
no usable verdict (unparseable, the judge timed out or exited), when the
judge rounds ran out, or when a role changed a file another role owns.
Nothing passes silently: the operator approves (the report goes on as if
the checks had passed) or rejects (the task fails and the orchestrator is
told), with ``choragos gate`` or the deck's gate dialog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from choragos import briefs, news, wire
from choragos.board import Task, TaskState


@dataclass
class Hold:
    task_id: str
    role: str
    kind: str       # "judge" | "owner"
    why: str
    line: str       # the report line that goes on if the operator approves
    unmerged: bool
    created: float
    file: str = ""  # what to read: the verdict, or the task file


class Holds:
    s: Any  # CoreState

    def _hold(self, task: Task, kind: str, why: str, line: str, unmerged: bool,
              file: str = "") -> None:
        hold = Hold(task.id, task.role, kind, why, line, unmerged, self.s.board.clock(),
                    file or str(self.s.state_dir / "tasks" / f"{task.id}.md"))
        self.s.holds[task.id] = hold
        task = self.settle(task, task.state, checks=f"held at a {kind} gate: {why}"[:200],
                            waiting={"kind": kind, "why": why, "line": line,
                                     "unmerged": unmerged, "file": hold.file})
        self.event("work held", task=task.id, role=task.role, kind=kind, why=why)
        self.publish(news.GateOpened({**task.as_dict(), "kind": kind, "diff": hold.file,
                                "label": f"{kind} gate: {why}"[:120],
                                "created": hold.created}))
        self.alert("on_gate", task.role, task)

    def _hold_list(self) -> list[dict]:
        now = self.s.board.clock()
        return [{"id": h.task_id, "role": h.role, "kind": h.kind,
                 "label": f"{h.kind} gate: {h.why}"[:120], "brief": h.file,
                 "age": round(now - h.created, 1), "file": h.file}
                for h in self.s.holds.values()]

    def _close_gate(self, gates: dict, task_id: str) -> tuple[Any, Task]:
        """Take a merge gate or hold off its queue; the deck closes its dialog."""
        gate = gates.pop(task_id)
        self.publish(news.GateClosed(task_id))
        return gate, self.s.board.get(gate.task_id)

    def _hold_decision(self, request: dict) -> dict:
        hold, task = self._close_gate(self.s.holds, request["id"])
        if request["action"] == "approve":
            self.event("held work approved", task=task.id, role=task.role, kind=hold.kind)
            task = self.settle(task, TaskState.DONE, checks=f"approved at the {hold.kind} gate")
            self._pass_on(task, f"{hold.line} (The operator approved it at the {hold.kind} "
                          f"gate: {briefs.one_line(hold.why, 200)}.)", hold.unmerged, "done")
            return wire.ok(id=task.id, state="done")
        reason = request.get("reason") or ""
        self.event("held work rejected", task=task.id, role=task.role, kind=hold.kind,
                    reason=reason)
        task = self.settle(task, TaskState.FAILED,
                            checks=f"rejected at the {hold.kind} gate")
        self.enqueue(self.s.start_role, briefs.held_rejected_line(task, hold.kind, hold.why,
                                                                   reason), "notice", task.id)
        return wire.ok(id=task.id, state="failed")
