"""The judge loop: another role scores finished work before it counts.

A policy of the session core.  A role with ``judge = "reviewer"`` has each
checked work-done handed to the reviewer as a task of its own: the task
text, the worker's report and the diff, in a brief.  The judge answers with
``work-done`` and a report whose first line is ``VERDICT: n/10``.  At or
above ``judge_pass`` the work goes on to the orchestrator; below it the
worker gets the critique and tries again, up to ``judge_rounds``.  An
unparseable verdict, a judge that times out or exits, or rounds run out
fall closed to a human gate: never a silent pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from choragos import statedir
from choragos.actors.coreport import CorePort
from choragos.actors.holds import Holds
from choragos.actors.mergeflow import MergeFlow
from choragos.board.tasks import Task, TaskState
from choragos.gitstore import changes, worktrees
from choragos.plural import counted
from choragos.roles import briefs

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

VERDICT = re.compile(r"\s*VERDICT:\s*(\d{1,2})\s*/\s*10\s*")
REPORT_LIMIT = 200_000


@dataclass
class Judging:
    """A worker's task awaiting its judge's verdict, and the report line to pass on."""

    worker_task: str
    line: str       # the worker's report line, for when it passes
    unmerged: bool


class JudgeLoop:
    """A policy of the core: owns the verdicts awaited (judge task id -> the
    work it judges); what it cannot pass goes to the holds, what passes goes
    on through the merge gates' policy."""

    def __init__(self, port: CorePort, s: CoreState, holds: Holds, merges: MergeFlow) -> None:
        self.port, self.s, self.holds, self.merges = port, s, holds, merges
        self.verdicts: dict[str, Judging] = s.verdicts

    def awaits(self, task_id: str) -> bool:
        """Whether ``task_id`` is a judge's task whose verdict is awaited."""
        return task_id in self.verdicts

    def restore(self, task: Task, waiting: dict) -> None:
        """A verdict the board says the work waited for before the restart."""
        self.verdicts[waiting["judge_task"]] = Judging(task.id, waiting["line"],
                                                       waiting["unmerged"])

    def judged(self, role: str) -> bool:
        spec = self.s.config.role(role)
        return spec is not None and bool(spec.judge) and spec.judge in self.s.seats

    def send(self, task: Task, line: str, unmerged: bool) -> None:
        judge = self.s.config.role(task.role).judge
        brief = self.s.state_dir / "reports" / f"{task.id}.judge-brief.md"
        try:
            statedir.make_dir(brief.parent)
            statedir.write_text(brief, self._judge_brief(task))
            created = self.port.record_tasks([judge], {
                "task": briefs.judge_task_text(task), "brief": str(brief)})
        except OSError as exc:
            self.holds.hold(task, "judge", f"the judge's task could not be written: {exc}", line,
                            unmerged)
            return
        judge_task = created[0]
        self.verdicts[judge_task.id] = Judging(task.id, line, unmerged)
        self.port.settle(task, task.state, checks=f"judging by {judge} ({judge_task.id})",
                         waiting={"kind": "judging", "judge_task": judge_task.id, "line": line,
                              "unmerged": unmerged})
        self.port.event("judging", task=task.id, role=task.role, judge=judge,
                        judge_task=judge_task.id)
        self.port.route_task(judge_task)

    def _judge_brief(self, task: Task) -> str:
        report = _read(task.report)
        return briefs.judge_brief(task, report, self._diff_of(task),
                                  self.s.config.role(task.role).judge_pass)

    def _diff_of(self, task: Task) -> str:
        try:
            if task.role in self.s.trees:
                # the commit its checks saw, which is what a merge takes
                return changes.branch_diff(self.s.workdir, self.merges.checked_commit(task.id)
                                           or worktrees.branch_of(task.role))
            if task.checkpoint:
                return changes.since_checkpoint(self.s.workdir, task.checkpoint)
        except Exception as exc:  # the judge is told, and judges without it
            return f"(the diff could not be made: {exc})"
        return "(no checkpoint: the diff is not known)"

    def verdict(self, judge_task: Task, report: str | None, outcome: str) -> None:
        judging = self.verdicts.pop(judge_task.id)
        task = self.s.board.get(judging.worker_task)
        spec = self.s.config.role(task.role)
        text = _read(report)
        match = VERDICT.fullmatch(text.splitlines()[0]) if text.strip() else None
        score = int(match.group(1)) if match and outcome == "done" else None
        if score is None or not 0 <= score <= 10:
            why = (f"the judge {judge_task.role} reported {outcome}" if outcome != "done" else
                   f"the judge's report has no first line `VERDICT: n/10` ({judge_task.id})")
            self.port.event("verdict unusable", task=task.id, judge_task=judge_task.id, why=why)
            self.holds.hold(task, "judge", why, judging.line, judging.unmerged, report or "")
            return
        self.port.event("verdict", task=task.id, judge_task=judge_task.id, score=score,
                        passed=score >= spec.judge_pass)
        if score >= spec.judge_pass:
            task = self.port.settle(task, TaskState.DONE,
                                    checks=f"judged {score}/10 (pass {spec.judge_pass})")
            self.merges.pass_on(task, f"{judging.line} The judge {judge_task.role} scored it "
                                f"{score}/10.", judging.unmerged, "done")
            return
        self._judged_below(task, score, text, report or "", judging)

    def _judged_below(self, task: Task, score: int, critique: str, report: str,
                      judging: Judging) -> None:
        spec = self.s.config.role(task.role)
        rounds = task.rounds + 1
        if rounds >= spec.judge_rounds:
            task = self.port.settle(task, task.state, rounds=rounds)
            self.holds.hold(task, "judge", f"judged {score}/10, below {spec.judge_pass}, after "
                            f"{counted(rounds, 'round')}", judging.line, judging.unmerged, report)
            return
        task = self.port.settle(task, TaskState.FAILED, rounds=rounds,
                                checks=f"judged {score}/10 (pass {spec.judge_pass}): retrying")
        text = briefs.document_for(task, spec) + briefs.critique_section(
            score, spec.judge_pass, critique, rounds, spec.judge_rounds)
        try:
            statedir.write_text(self.s.state_dir / "tasks" / f"{task.id}.md", text)
        except OSError as exc:
            self.port.event("task file failed", task=task.id, error=exc.strerror or str(exc))
        self.port.enqueue(task.role, briefs.critique_line(task, f".choragos/tasks/{task.id}.md",
                                                          score, spec.judge_pass), "fix", task.id)

    def lost(self, judge_task: Task, why: str) -> None:
        """The judge timed out or its process went: the work waits for a person."""
        judging = self.verdicts.pop(judge_task.id, None)
        if judging is None:
            return
        task = self.s.board.get(judging.worker_task)
        self.holds.hold(task, "judge", f"the judge {judge_task.role} {why}", judging.line,
                        judging.unmerged)


def _read(path: str | None) -> str:
    if not path:
        return ""
    try:
        with open(Path(path), encoding="utf-8", errors="replace") as handle:
            return handle.read(REPORT_LIMIT)
    except OSError:
        return ""
