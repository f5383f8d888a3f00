"""The ``work-done`` command: a role's report on its task.

A policy of the session core, with no state of its own.  The report closes
the task's board entry (or says why it matches none), is written to the
event log, and goes to the orchestrator, at once or, when the work is
checked (changes, verify, judge, owned files), once the work checks'
policy has seen it.  A role may only report its own tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from choragos import statedir
from choragos.actors.coreport import CorePort, not_recorded
from choragos.actors.timeouts import Timeouts
from choragos.actors.workcheck import VERIFYING, WorkChecks
from choragos.board.tasks import BoardError, TaskState
from choragos.control import wire
from choragos.roles import briefs
from choragos.session import news

if TYPE_CHECKING:
    from choragos.actors.core import CoreState


class WorkDone:
    def __init__(self, port: CorePort, s: CoreState, checks: WorkChecks,
                 timeouts: Timeouts) -> None:
        self.port, self.s, self.checks, self.timeouts = port, s, checks, timeouts

    def command(self, request: dict) -> dict:
        task_id, summary = request["id"], request["task"]
        report = request.get("report")
        before = self.s.board.lookup(task_id)
        caller = request.get(wire.CALLER)
        if caller and before is not None and caller not in (before.role, self.s.start_role):
            reason = (f"task {task_id} belongs to {before.role}, not to {caller}; "
                      "a role may only report its own tasks")
            self.port.event("request refused", cmd="work-done", caller=caller, reason=reason)
            return wire.error(reason)
        if request.get("report_text") and before is not None:
            report = self._keep_report(task_id, request["report_text"]) or report
        outcome = request.get("outcome", "done")
        note, role = self._resolve(task_id, summary, report, request.get("done", False),
                                   outcome)
        try:
            record = self.s.events.append("work-done", task=task_id, role=role,
                                          summary=summary, report=report,
                                          done=request.get("done", False), outcome=outcome,
                                          note=note or None, by=caller or "operator")
        except OSError as exc:
            if before is not None:  # write-behind rolled back: the board is as it was
                self.s.board.put_back(before)
                self.port.publish(news.TaskChanged(before))
            return wire.error(not_recorded(exc, "work-done"))
        self.port.publish(news.EventLogged.of(record))
        parts = (task_id, role, summary, report, note, outcome)
        if not self.checks.hold_for_checks(task_id, parts, outcome, note):
            self.port.enqueue(self.s.start_role, briefs.report_line(*parts), "report", task_id)
        ack = {"id": task_id, "state": outcome if not note else "unmatched"}
        if role == "unknown":
            ack["unknown"] = True  # the verb exits non-zero: the id matched no task
        if note:
            ack["warning"] = f"{note}; the report was still passed to the orchestrator"
        return wire.ok(**ack)

    def _keep_report(self, task_id: str, text: str) -> str | None:
        """A report that came with its work-done (from a role on another
        machine), kept where local reports go; None if it cannot be written."""
        path = self.s.state_dir / "reports" / f"{task_id}.md"
        try:
            statedir.make_dir(path.parent)
            statedir.write_text(path, text)
        except OSError as exc:
            self.port.event("report not kept", task=task_id, error=exc.strerror or str(exc))
            return None
        return str(path)

    def _resolve(self, task_id: str, summary: str, report: str | None,
                 done: bool, outcome: str = "done") -> tuple[str, str]:
        """Close the board entry; a note explains a report that matches none."""
        try:
            task = self.s.board.get(task_id)
        except BoardError:
            return f"unknown task id {task_id}", "unknown"
        if task.state in (TaskState.DONE, TaskState.REJECTED):
            return f"task {task_id} was already {task.state}", task.role
        if task.state is TaskState.GATED:
            return f"task {task_id} is still waiting at the gate", task.role
        if task.state is TaskState.QUEUED:
            # The worker acted on the task before our confirmation came back.
            self.port.move(task_id, TaskState.DELIVERED)
            self.port.event("delivered", task=task_id, role=task.role, by="work-done")
        self.timeouts.stop(task_id)
        changes = {"summary": summary, "report": report,
                   "note": "" if done or outcome != "done" else "reported without --done"}
        target = TaskState(outcome)
        if self.checks.verifies(task, outcome):  # it counts as done once its verify passes
            changes["checks"] = VERIFYING
            self.port.annotate(task_id, **changes)
            return "", task.role
        if task.state is target:  # e.g. "failed" said again after its worker died on it
            self.port.annotate(task_id, **changes)
        else:
            self.port.move(task_id, target, **changes)
        return "", task.role
