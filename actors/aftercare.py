"""After a work-done: measure what changed, then run the role's ``verify``.

Runs off the core's thread (a check may take minutes) and reports back with
``WorkChecked``; the core decides what the result means for the task.  It
keeps its own checkpoint store, as stores are one per thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import singledispatchmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

from choragos.actors.base import Actor
from choragos.actors.latemessages import (
    AftercareFailed,
    CheckWork,
    MergeDone,
    MergeWork,
    WorkChecked,
)
from choragos.control.authority import Behalf
from choragos.gitstore import worktrees
from choragos.gitstore.worktrees import MergeResult, WorktreeError

if TYPE_CHECKING:
    from choragos.gitstore.checkpoints import CheckpointStore

# The checkpoint store (with its walk, objects, ignore rules and dulwich:
# 0.7 MB and some 10 ms of the start) is imported where it is used: a
# session with checkpoints off never loads it.  The measure of changes and
# verify, with the first work-done: the actor starts before the roles'
# agents, which do not need them.


class AftercareActor(Actor):
    def __init__(self, workdir: Path, core: Any, supervisor: Any = None,
                 behalf: Behalf | None = None,
                 fetchers: Callable[[], Mapping[str, Callable[[str], None]]] = dict) -> None:
        super().__init__("aftercare", supervisor)
        self.workdir = workdir
        self.core = core
        self.behalf = behalf or Behalf()
        # A remote role's branch -> how its work comes back from its host first.
        self.fetchers = fetchers
        self._stores: dict[Path, CheckpointStore] = {}

    def on_shutdown(self) -> None:
        for store in self._stores.values():
            store.close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(CheckWork)
    def _check(self, msg: CheckWork) -> None:
        began = time.monotonic()
        unmerged, commit = False, ""
        if msg.branch:
            found, error, unmerged, commit = self._commit(msg)
        else:
            found, error = self._measure(msg)
        result = None
        if msg.verify:
            from choragos.roles import verify

            result = verify.run(msg.verify, msg.cwd, self.workdir, msg.task_id, msg.timeout,
                                msg.env, self.behalf.acting_for(msg.role))
        self.core.tell(WorkChecked(msg.task_id, found, error, result,
                                   round(time.monotonic() - began, 3), unmerged,
                                   error if msg.branch else "", commit))

    def _commit(self, msg: CheckWork) -> tuple[tuple[dict, ...] | None, str, bool, str]:
        """Commit the worker's tree on its branch; the changes are what that
        commit holds beyond the main checkout (what merging it would bring)."""
        from choragos.gitstore import changes
        from choragos.remote.seat import SeatError  # a remote role's: loaded with it

        try:
            fetch = self.fetchers().get(msg.branch)
            if fetch is not None:
                fetch(msg.message[0])
            worktrees.commit_work(msg.cwd, *msg.message, msg.branch)
            commit = worktrees.tip(self.workdir, msg.branch)
            unmerged = worktrees.unmerged(self.workdir, commit)
            base = worktrees.merge_base(self.workdir, commit)
            found = changes.diff_trees(self.workdir, base, commit)
        except (WorktreeError, changes.ChangesError, SeatError) as exc:
            return None, str(exc), False, ""
        if msg.checkpoint:
            from choragos.gitstore.checkpoints import CheckpointError, NotARepository

            # What this task alone changed, kept for `choragos diff` after the merge.
            try:
                self._snapshot_done(msg)
            except (CheckpointError, NotARepository, OSError) as exc:
                self.core.tell(AftercareFailed("snapshot failed", msg.task_id, str(exc)))
        return tuple(change.as_dict() for change in found), "", unmerged, commit

    def _snapshot_done(self, msg: CheckWork) -> str:
        """The tree as the task reported it, saved next to its checkpoint: the
        pair is exactly what the task changed (choragos/gitstore/taskdiff.py)."""
        from choragos.gitstore.checkpoints import done_name

        label = f"at the report of {msg.task_id}: {msg.label}"
        return self._store(msg.cwd).snapshot(done_name(msg.task_id), msg.role, label).tree

    @handle.register(MergeWork)
    def _merge(self, msg: MergeWork) -> None:
        """Checkpoint the main tree, then merge, or change nothing."""
        from choragos.gitstore.checkpoints import CheckpointError, NotARepository

        ref, error = "", ""
        try:
            ref = self._store(self.workdir).snapshot(
                f"merge-{msg.task_id}", msg.role, f"before merging {msg.branch}: {msg.label}").ref
        except (CheckpointError, NotARepository, OSError) as exc:
            error = str(exc)
        try:
            result = (self._merge_resumed(msg) if msg.since else
                      worktrees.merge(self.workdir, msg.branch, msg.message, msg.commit))
            if result.merged and msg.tree is not None:
                worktrees.catch_up(msg.tree, self.workdir)
        except WorktreeError as exc:
            result = MergeResult(False, why=str(exc))
        self.core.tell(MergeDone(msg.task_id, result, ref, error))

    def _merge_resumed(self, msg: MergeWork) -> MergeResult | None:
        """A merge the session died in: its own leftovers (git's lock, the
        merge state) are cleared first, else the refusal says what to remove."""
        cleared, why = worktrees.clear_interrupted(self.workdir, msg.commit, msg.since)
        if why:
            return MergeResult(False, why=why, cleared=cleared)
        result = worktrees.merge(self.workdir, msg.branch, msg.message, msg.commit)
        return replace(result, cleared=cleared)

    def _measure(self, msg: CheckWork) -> tuple[tuple[dict, ...] | None, str]:
        if not msg.checkpoint:
            return None, "the task has no checkpoint to compare with"
        from choragos.gitstore import changes
        from choragos.gitstore.checkpoints import CheckpointError, NotARepository

        try:
            store = self._store(msg.cwd)
            base = store.resolve(msg.checkpoint).tree
            now = self._snapshot_done(msg)
            found = changes.diff_trees(store.root, base, now)
        except (CheckpointError, NotARepository, changes.ChangesError, OSError) as exc:
            return None, str(exc)
        return tuple(change.as_dict() for change in found), ""

    def _store(self, cwd: Path) -> CheckpointStore:
        # Long-lived, so it watches its tree: the report of a task that
        # changed nothing since the last report (a review) reuses that walk's
        # tree instead of an lstat of every file, which grows with the tree.
        if cwd not in self._stores:
            from choragos.gitstore.checkpoints import CheckpointStore

            self._stores[cwd] = CheckpointStore(cwd, watch=True)
        return self._stores[cwd]
