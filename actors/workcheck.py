"""Work-done that is checked, not trusted: the core's side of the aftercare.

A policy of the session core (it runs on the core's thread).  After a
work-done the report to the orchestrator is held while the aftercare actor
measures what changed since the task's checkpoint and runs the role's
``verify`` command.  The changes go on the board, into the event log (which
``report`` reads) and into the orchestrator's report line; a done with no
change at all is flagged (for a role with ``writes = false``, any change
is).  A failed check sends the task back to its worker with the output's
tail, up to ``verify_rounds`` times; the orchestrator hears only the pass,
or that the rounds ran out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from choragos import statedir
from choragos.actors.coreport import CorePort
from choragos.actors.holds import Holds
from choragos.actors.judging import JudgeLoop
from choragos.actors.latemessages import CheckWork, WorkChecked
from choragos.actors.mergeflow import MergeFlow
from choragos.actors.policystate import CheckState
from choragos.board.tasks import Task, TaskState
from choragos.gitstore import changes, worktrees
from choragos.plural import counted
from choragos.roles import briefs, ownership
from choragos.roles.verify import VerifyResult

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

# A done (or failed, blocked) whose report waits on its changes being measured:
# in the task's record, so a server killed meanwhile measures again on resume
# rather than never passing the report on (the wait itself is in memory).
MEASURING = "measuring its changes"
# A done that counts once its checks pass (verify, judge, owned files): its
# work-done is acked and the task stays delivered meanwhile.  A resume checks
# it again rather than hand the task back to its worker, who is done with it.
VERIFYING = "verifying"
CHECKED_AGAIN = (MEASURING, VERIFYING)
NO_CHANGE = "no files changed: the task claims done without touching the tree"
READ_ONLY_CHANGED = "{headline} although the role is read-only (writes = false)"


@dataclass
class HeldReport:
    """A report line waiting for its checks."""

    parts: tuple  # briefs.report_line's arguments
    outcome: str


def fingerprint_owned(s: CoreState, task: Task) -> dict:
    """The owned files as the task finds them at its turn (the delivery's
    call, as it types the task), as the board change that keeps them: a
    change to them is the task's only if made after, not one by a task before
    it in its queue.  On the board, they are journaled before the line goes,
    so a session resumed after a kill checks the task's work-done too."""
    owned = ownership.owners(s.config)
    if not owned:
        return {}
    return {"owned": ownership.fingerprint(s.trees.get(task.role, s.workdir), owned)}


class WorkChecks:
    """A policy of the core: owns the reports waiting for their checks (the
    owned files' fingerprints are on the tasks); a pass goes to the judge or on through the
    merge gates' policy, a trespass or an unusable verdict to the holds."""

    def __init__(self, port: CorePort, s: CoreState, holds: Holds, judge: JudgeLoop,
                 merges: MergeFlow) -> None:
        self.port, self.s = port, s
        self.holds, self.judge, self.merges = holds, judge, merges
        self.state: CheckState = s.checks

    def verifies(self, task: Task, outcome: str) -> bool:
        """Whether this done waits for the role's verify (or judge) before it counts.
        A judge's own task is a verdict, not work: done at once, whatever files
        are owned (it would otherwise stay delivered for good)."""
        if self.judge.awaits(task.id):
            return False
        spec = self.s.config.role(task.role)
        checked = spec is not None and bool(spec.verify or spec.judge
                                            or task.owned is not None)
        return outcome == "done" and checked and self.s.aftercare is not None

    def hold_for_checks(self, task_id: str, parts: tuple, outcome: str, note: str) -> bool:
        """Start the checks of a work-done; False when there is nothing to check
        (the caller passes the report on at once)."""
        task = self.s.board.lookup(task_id)
        if task is not None and self.judge.awaits(task_id):
            self.judge.verdict(task, parts[3], outcome)  # a judge's answer, not a worker's report
            return True
        if note or task is None or self.s.aftercare is None:
            return False
        spec = self.s.config.role(task.role)
        command = spec.verify if spec is not None and outcome == "done" else ""
        tree = self.s.trees.get(task.role)
        judged = spec is not None and bool(spec.judge)
        if (not task.checkpoint and not command and tree is None and not judged
                and task.owned is None):
            return False
        self.state.held[task_id] = HeldReport(parts, outcome)
        if not self.verifies(task, outcome) and task.checks != MEASURING:
            self.port.annotate(task_id, checks=MEASURING)  # journaled with the work-done
        # A worktree role's work is committed when done, and measured as what
        # its branch would bring; otherwise it is measured in the role's tree
        # against the checkpoint taken there.
        branch = worktrees.branch_of(task.role) if tree is not None and outcome == "done" else ""
        checkpoint = task.checkpoint
        body = f"Task: {task.id}\n\n{task.text.strip()}" + (
            f"\n\nBrief: {task.brief}" if task.brief else "")
        self.s.aftercare.tell(CheckWork(task_id, checkpoint, tree or self.s.workdir,
                                        command, spec.verify_timeout if spec else 600.0,
                                        branch, (parts[2], body),
                                        self.s.role_env(task.role) if command else None,
                                        task.role, task.label))
        return True

    def _checks_passed(self, task: Task, line: str, unmerged: bool, outcome: str) -> None:
        """Verified (or nothing to verify): the judge, if any, has the last word."""
        trespass = self._trespass(task) if outcome == "done" else ""
        if trespass:
            self.holds.hold(task, "owner", trespass, line, unmerged)
            return
        if outcome == "done" and self.judge.judged(task.role):
            self.judge.send(task, line, unmerged)
            return
        if outcome == "done" and self.verifies(task, outcome):
            # (a pass with no verify, its owned files checked, says nothing more)
            cleared = {"checks": ""} if task.checks == VERIFYING else {}
            task = self.port.settle(task, TaskState.DONE, **cleared)
        self.merges.pass_on(task, line, unmerged, outcome)

    def _trespass(self, task: Task) -> str:
        """Which owned files another role's task changed, as a sentence ("" for none)."""
        before = task.owned
        if before is None:
            return ""
        owned = ownership.owners(self.s.config)
        after = ownership.fingerprint(self.s.trees.get(task.role, self.s.workdir), before)
        found = ownership.trespasses(before, after, owned, task.role)
        if not found:
            return ""
        self.port.event("owned file changed", task=task.id, role=task.role,
                    files=[{"path": path, "owner": owner} for path, owner in found])
        return f"{task.role} changed " + ", ".join(f"{path} (owned by {owner})"
                                                   for path, owner in found)

    def measure_again(self, task_ids: list[str]) -> None:
        """After a resume: the reports the killed server held for their checks
        are checked and passed on now (the measuring or verifying mark says
        which; a verifying task is still delivered, its outcome done)."""
        for task_id in task_ids:
            task = self.s.board.lookup(task_id)
            if (task is None or task.checks not in CHECKED_AGAIN
                    or (task.checks == VERIFYING and task.state is TaskState.DONE)):
                continue  # (done and still marked: an older session's record)
            outcome = "done" if task.checks == VERIFYING else str(task.state)
            parts = (task.id, task.role, task.summary or "", task.report, "", outcome)
            if not self.hold_for_checks(task.id, parts, outcome, ""):
                self.port.annotate(task.id, checks="")
                self.port.enqueue(self.s.start_role, briefs.report_line(*parts), "report",
                                  task.id)

    def work_checked(self, msg: WorkChecked) -> None:
        held = self.state.held.pop(msg.task_id, None)
        task = self.s.board.lookup(msg.task_id)
        if held is None or task is None:
            return
        if task.checks == MEASURING:  # cleared in the turn that passes the report on
            task = self.port.annotate(task.id, checks="")
        line = briefs.report_line(*held.parts, self._record_changes(task, msg, held.outcome))
        if msg.commit:  # what its verify and judge see is what a merge may take
            self.merges.checks_saw(task.id, msg.commit)
        self.merges.commit_failed(task.id, bool(msg.commit_error))
        if msg.commit_error:
            self.port.event("commit failed", task=task.id, role=task.role, error=msg.commit_error)
            line += (f" Its work could not be committed on {worktrees.branch_of(task.role)} "
                     f"({briefs.one_line(msg.commit_error, 300)}); nothing will be merged.")
        if msg.verify is None:
            self._checks_passed(task, line, msg.unmerged, held.outcome)
        elif msg.verify.ok:
            self._verify_passed(task, msg, line)
        else:
            self._verify_failed(task, msg.verify, line)

    def _record_changes(self, task: Task, msg: WorkChecked, outcome: str) -> str:
        if msg.changes is None:
            self.port.event("changes unknown", task=task.id, role=task.role, reason=msg.error)
            return ""
        counted = changes.totals(msg.changes)
        listed = msg.changes[:changes.LISTED]
        spec = self.s.config.role(task.role)
        writes = spec.writes if spec is not None else True
        # A writer's done that changed nothing is suspect; so is any change
        # at all by a role declared read-only.
        flagged = (outcome == "done" and not msg.changes) if writes else bool(msg.changes)
        task = self.port.annotate(task.id, changes=listed, changed=counted, flagged=flagged)
        headline = changes.headline(counted)
        self.port.event("changes", task=task.id, role=task.role, files=list(listed),
                    totals=counted, headline=headline, flagged=flagged, writes=writes)
        if not flagged:
            return headline
        return NO_CHANGE if writes else READ_ONLY_CHANGED.format(headline=headline)

    def _verify_passed(self, task: Task, msg: WorkChecked, line: str) -> None:
        result = msg.verify
        self.port.event("verify passed", task=task.id, role=task.role, seconds=result.seconds,
                    log=result.log)
        checks = "verify passed" + (f" after {counted(task.rounds, 'fix')}" if task.rounds else "")
        task = self.port.settle(task, task.state, checks=checks)
        self._checks_passed(task, f"{line} Its verify passed ({result.log}).", msg.unmerged,
                            "done")

    def _verify_failed(self, task: Task, result: VerifyResult, line: str) -> None:
        spec = self.s.config.role(task.role)
        rounds = task.rounds + 1
        limit = spec.verify_rounds if spec is not None else 0
        self.port.event("verify failed", task=task.id, role=task.role, why=result.why,
                    round=rounds, rounds=limit, log=result.log, seconds=result.seconds)
        if rounds <= limit and task.role in self.s.seats:
            task = self.port.settle(task, TaskState.FAILED, rounds=rounds,
                                checks=f"verify failed {rounds}/{limit}: fixing")
            self._send_back(task, result, rounds, limit)
            return
        self.port.settle(task, TaskState.FAILED, rounds=rounds,
                     checks=f"verify failed {rounds}/{limit}: out of rounds")
        self.port.enqueue(self.s.start_role, briefs.verify_out_of_rounds_line(
            task, result.why, result.log, limit), "notice", task.id)

    def _send_back(self, task: Task, result: VerifyResult, rounds: int, limit: int) -> None:
        """The worker gets the task file again, with the failure's tail in it."""
        task_file = self.s.state_dir / "tasks" / f"{task.id}.md"
        failed = briefs.verify_failed_section(result.why, result.tail, result.log, rounds, limit)
        text = briefs.document_for(task, self.s.config.role(task.role)) + failed
        try:
            statedir.write_text(task_file, text)
        except OSError as exc:
            self.port.event("task file failed", task=task.id, error=exc.strerror or str(exc))
        self.port.enqueue(task.role, briefs.fix_line(task, f".choragos/tasks/{task.id}.md",
                                                 result.why, rounds, limit), "fix", task.id)
