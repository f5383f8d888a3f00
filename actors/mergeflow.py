"""Bringing a worktree role's work back: merge gates, auto and manual merges.

A policy of the session core.  Once a worktree role's work-done has passed
its checks (its work is committed on ``choragos/<role>``), the role's
``merge`` decides: ``gate`` holds it at a merge gate showing the diff,
``auto`` merges when clean, ``manual`` (or ``never``) leaves the branch.
A gate is pinned to the commit its diff was made from, and an approval
merges exactly that commit: a branch the worker moved since reopens the
gate with the new diff, and nothing is merged until the operator has seen it.
The merging itself runs in the aftercare actor, after a checkpoint of the
main tree; a conflict or a dirty main tree changes nothing and both the
orchestrator and the worker are told.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from choragos import statedir
from choragos.actors.coreport import CorePort
from choragos.actors.latemessages import MergeDone, MergeWork
from choragos.actors.policystate import MergeState
from choragos.board.tasks import Board, Task
from choragos.control import wire
from choragos.gitstore import changes, worktrees
from choragos.gitstore.worktrees import MergeResult
from choragos.roles import briefs
from choragos.session import news

if TYPE_CHECKING:
    from choragos.actors.core import CoreState


@dataclass
class MergeGate:
    """A worktree role's checked work held at a merge gate, pinned to its diff's commit."""

    task_id: str
    role: str
    branch: str
    diff: str       # the patch, as a file under .choragos/reports/
    created: float
    commit: str = ""  # the branch's head the diff shows: what an approval merges


G = TypeVar("G")  # a merge gate or a hold


def close_gate(port: CorePort, board: Board, gates: dict[str, G], task_id: str) -> tuple[G, Task]:
    """Take a merge gate or hold off its queue; the deck closes its dialog."""
    gate = gates.pop(task_id)
    port.publish(news.GateClosed(task_id))
    return gate, board.get(gate.task_id)


class MergeFlow:
    """A policy of the core: owns the merge gates and the commit each
    work's checks saw (what a merge takes)."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s
        self.state: MergeState = s.merging

    def checks_saw(self, task_id: str, commit: str) -> None:
        """The branch commit the work's checks (verify, judge) saw."""
        self.state.checked[task_id] = commit

    def commit_failed(self, task_id: str, failed: bool) -> None:
        """Whether the work's last commit failed: its report line says so
        already, and nothing more about merging is added to it."""
        if failed:
            self.state.uncommitted.add(task_id)
        else:
            self.state.uncommitted.discard(task_id)

    def checked_commit(self, task_id: str) -> str:
        return self.state.checked.get(task_id, "")

    def pass_on(self, task: Task, line: str, unmerged: bool, outcome: str) -> None:
        """The checks are through: the orchestrator hears, and a worktree's work comes back."""
        if outcome == "done" and self._worktree_role(task.role):
            self._bring_back(task, line, unmerged)
        else:
            self.port.enqueue(self.s.start_role, line, "report", task.id)

    def restore(self, task: Task, waiting: dict, now: float) -> None:
        """A merge gate the board says the work waited at before the restart."""
        gate = MergeGate(task.id, task.role, waiting["branch"], waiting["diff"], now,
                         waiting.get("commit", ""))
        self.state.gates[task.id] = gate
        self.port.publish(news.GateOpened(merge_gate_view(task, gate)))

    def resume(self, task: Task, waiting: dict) -> None:
        """A merge approved (or begun by ``merge = auto``) before the restart:
        report it if it went in before the session died, else run it now."""
        branch, commit = waiting["branch"], waiting.get("commit", "")
        try:
            merged = not worktrees.unmerged(self.s.workdir, commit or branch)
            tree = self.s.trees.get(task.role)
            if merged and tree is not None:
                worktrees.catch_up(tree, self.s.workdir)
        except worktrees.WorktreeError as exc:
            self.done(MergeDone(task.id, MergeResult(False, why=str(exc))))
            return
        if not merged:  # (a kill inside `git merge` may have left its lock or state)
            self._start_merge(task, commit, f"merging {branch} (again, after a restart)",
                              since=time.time())
            return
        result = MergeResult(True, commit=worktrees.merged_by(self.s.workdir, commit or branch))
        self.done(MergeDone(task.id, result, worktrees.checkpoint_of(self.s.workdir,
                                                                     f"merge-{task.id}")))

    def _worktree_role(self, role: str) -> bool:
        spec = self.s.config.role(role)
        return spec is not None and bool(spec.worktree or spec.host) and role in self.s.trees

    def _merge_mode(self, role: str) -> str:
        mode = self.s.config.role(role).merge
        return "manual" if mode == "never" else mode

    def _bring_back(self, task: Task, line: str, unmerged: bool) -> None:
        """The report line goes on with what happens to the branch."""
        branch = worktrees.branch_of(task.role)
        mode = self._merge_mode(task.role)
        checked = self.state.checked.pop(task.id, "")
        if not unmerged:
            said = task.id in self.state.uncommitted  # "...; nothing will be merged."
            self.state.uncommitted.discard(task.id)
            self.port.enqueue(self.s.start_role, line if said else f"{line} Nothing to merge.",
                              "report", task.id)
            return
        if mode == "manual":
            self.port.event("merge left", task=task.id, role=task.role, branch=branch)
            self.port.enqueue(self.s.start_role, f"{line} Its work is on branch {branch}, not "
                              f"merged (merge = manual): merge it with git when you want it.",
                              "report", task.id)
            return
        if mode == "auto":
            self.port.enqueue(self.s.start_role, f"{line} Merging {branch} (merge = auto); you "
                              "will hear how it went.", "report", task.id)
            self._start_merge(task, checked, f"merging {branch} (merge = auto)")
            return
        self._open_merge_gate(task, branch, commit=checked)
        self.port.enqueue(self.s.start_role, f"{line} Its branch {branch} waits at a merge gate "
                          "for the operator; you will hear the decision.", "report", task.id)

    def _open_merge_gate(self, task: Task, branch: str, event: str = "merge gated",
                         commit: str = "", **fields: str) -> None:
        gate = self._pin(task, branch, commit)
        self.state.gates[task.id] = gate
        task = self.port.settle(task, task.state, checks=f"merge of {branch} waits at a gate",
                                waiting={"kind": "merge", "branch": branch, "diff": gate.diff,
                                     "commit": gate.commit})
        self.port.event(event, task=task.id, role=task.role, branch=branch, diff=gate.diff,
                        commit=gate.commit or None, **fields)
        self.port.publish(news.GateOpened(merge_gate_view(task, gate)))
        self.port.alert("on_gate", task.role, task)

    def _pin(self, task: Task, branch: str, commit: str = "") -> MergeGate:
        """A gate for ``commit`` (the one the work's checks saw), else the
        branch's head now, with the diff of exactly that commit."""
        diff_file = self.s.state_dir / "reports" / f"{task.id}.merge.diff"
        try:
            commit = commit or worktrees.tip(self.s.workdir, branch)
            patch = changes.branch_diff(self.s.workdir, commit)
            statedir.make_dir(diff_file.parent)
            statedir.write_text(diff_file, patch)
        except (changes.ChangesError, worktrees.WorktreeError, OSError) as exc:
            self.port.event("merge diff failed", task=task.id, error=str(exc))
            commit = ""  # nothing shown, nothing pinned: an approval reopens the gate
        return MergeGate(task.id, task.role, branch, str(diff_file), self.s.board.clock(),
                         commit)

    def listing(self) -> list[dict]:
        now = self.s.board.clock()
        return [{"id": g.task_id, "role": g.role, "kind": "merge",
                 "label": f"merge {g.branch}: {self.s.board.get(g.task_id).label}",
                 "brief": g.diff, "age": round(now - g.created, 1), "file": g.diff,
                 "commit": g.commit}
                for g in self.state.gates.values()]

    def decision(self, request: dict) -> dict:
        if request["action"] == "approve":
            gate = self.state.gates[request["id"]]
            if self._in_already(gate):
                return wire.ok(id=gate.task_id, state="merged")
            moved = self._moved(gate)
            if moved:
                return moved
        gate, task = close_gate(self.port, self.s.board, self.state.gates, request["id"])
        if request["action"] == "approve":
            self.port.event("merge approved", task=task.id, role=task.role, branch=gate.branch,
                            commit=gate.commit)
            self._start_merge(task, gate.commit, f"merging {gate.branch}")
            return wire.ok(id=task.id, state="merging")
        reason = request.get("reason") or ""
        self.port.event("merge declined", task=task.id, role=task.role, branch=gate.branch,
                        reason=reason)
        self.port.settle(task, task.state, checks=f"merge declined; {gate.branch} kept")
        self.port.enqueue(self.s.start_role, briefs.merge_declined_line(task, gate.branch, reason),
                          "notice", task.id)
        return wire.ok(id=task.id, state="declined")

    def _in_already(self, gate: MergeGate) -> bool:
        """An older gate of the role approved after a newer one merged: the
        commit it shows went in with that merge (the branch has moved on to
        the merge since, which is no news).  Done, said so, nothing merged."""
        try:
            if not gate.commit or worktrees.unmerged(self.s.workdir, gate.commit):
                return False
            result = worktrees.already_merged(self.s.workdir, gate.commit)
        except worktrees.WorktreeError:
            return False  # the approval goes the usual way, and says what git said
        task = close_gate(self.port, self.s.board, self.state.gates, gate.task_id)[1]
        self.port.event("merge approved", task=task.id, role=task.role, branch=gate.branch,
                        commit=gate.commit)
        self._merged_before(task, gate.branch, result)
        return True

    def _moved(self, gate: MergeGate) -> dict | None:
        """An approval of a diff that is no longer the branch's head merges
        nothing: the gate reopens with the new diff (the refusal, or None)."""
        try:
            now = worktrees.tip(self.s.workdir, gate.branch)
        except worktrees.WorktreeError as exc:
            return wire.error(f"{gate.branch} cannot be read, so nothing was merged: {exc}")
        if gate.commit and now == gate.commit:
            return None
        task = close_gate(self.port, self.s.board, self.state.gates, gate.task_id)[1]
        self._open_merge_gate(task, gate.branch, "merge gate reopened",
                              was=gate.commit or "unknown")
        return wire.error(f"{gate.branch} moved since the diff you approved "
                          f"({gate.commit[:10] or 'unknown'} is now {now[:10]}); nothing was "
                          f"merged, and the gate shows the new diff ({gate.diff}): read it "
                          "and decide again")

    def _start_merge(self, task: Task, commit: str, checks: str, since: float = 0.0) -> None:
        """Merge ``commit`` (a gate's pinned one), else the branch's head now.
        The board says so until the merge's outcome is in, and the board is
        journaled: a merge the session died before (or during) is taken up
        again by the resumed session, not lost with the approval."""
        branch = worktrees.branch_of(task.role)
        self.port.settle(task, task.state, checks=checks,
                         waiting={"kind": "merging", "branch": branch, "commit": commit})
        message = f"Merge {branch}: {task.id} {briefs.one_line(task.summary or task.label, 200)}"
        # A role a handoff dropped has no worktree any more: its branch still merges.
        self.s.aftercare.tell(MergeWork(task.id, task.role, task.label, branch,
                                        self.s.trees.get(task.role), message, commit, since))

    def done(self, msg: MergeDone) -> None:
        task = self.s.board.lookup(msg.task_id)
        if task is None:
            return
        branch = worktrees.branch_of(task.role)
        result = msg.result
        if result.cleared:  # said, whatever comes of the merge: files were removed
            self.port.event("merge leftovers cleared", task=task.id, files=list(result.cleared))
        if result.already:
            self._merged_before(task, branch, result)
            return
        if result.merged:
            self.port.event("merged", task=task.id, role=task.role, branch=branch,
                            commit=result.commit, checkpoint=msg.checkpoint or None,
                            checkpoint_error=msg.checkpoint_error or None)
            self.port.settle(task, task.state, checks=f"merged ({result.commit[:10]})")
            self.port.enqueue(self.s.start_role, briefs.merged_line(
                task, branch, result.commit, bool(msg.checkpoint)), "notice", task.id)
            return
        self.port.event("merge refused", task=task.id, role=task.role, branch=branch,
                        why=result.why, conflicts=list(result.conflicts))
        self.port.settle(task, task.state, checks=f"not merged: {result.why}"[:200])
        line = briefs.merge_refused_line(task, branch, result.why)
        # Approved from a phone, or merged by itself overnight: the person who
        # counts on it hears that it did not go in (the bell, on_gate, [notify]).
        self.port.ring("on_gate", task.role, briefs.one_line(f"not merged: {result.why}", 400),
                       task.id)
        self.port.enqueue(self.s.start_role, line, "notice", task.id)
        if task.role in self.s.seats and task.role != self.s.start_role:
            self.port.enqueue(task.role, line, "notice", task.id)

    def _merged_before(self, task: Task, branch: str, result: MergeResult) -> None:
        """Its work went in before this merge (an older gate of the role
        approved after a newer one, or merged by hand): done, not refused."""
        self.port.event("merged", task=task.id, role=task.role, branch=branch,
                        commit=result.commit, already=True, earlier=result.earlier or None)
        with_ = f" with {result.earlier}" if result.earlier and result.earlier != task.id else ""
        self.port.settle(task, task.state, checks=f"merged{with_} ({result.commit[:10]})")
        self.port.enqueue(self.s.start_role, briefs.merged_before_line(
            task, branch, result.commit, result.earlier), "notice", task.id)


def merge_gate_view(task: Task, gate: MergeGate) -> news.GateView:
    """What the deck's gate dialog shows for a merge gate."""
    return news.GateView(task, "merge", diff=gate.diff, branch=gate.branch, commit=gate.commit,
                         label=f"merge {gate.branch}: {task.label}", created=gate.created)
