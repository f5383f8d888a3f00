"""Exactly what one task changed: its checkpoint against the snapshot taken
when it reported.

Before a task goes out its tree is checkpointed (``<epoch>-T3``); when the
worker reports, the aftercare snapshots the same tree again
(``<epoch>-done-T3``).  The patch between the two is the task's own work,
whatever happened in the tree later, and it stays readable after a
worktree role's branch is merged and its worktree removed: both snapshots
live in the repository, not in the tree.  A task that has not reported
yet shows its tree now against its checkpoint, and says so.

Used by ``choragos diff`` and the deck's board (``d``); git runs with an
argv list, never through a shell.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from choragos.gitstore import changes
from choragos.gitstore.checkpoints import done_name

_REFS = "refs/choragos/"


class TaskDiffError(Exception):
    """The task's diff cannot be shown; the message says why."""


@dataclass(frozen=True)
class TaskDiff:
    """What one task changed, as a patch to show under a title."""

    title: str
    patch: str
    reported: bool  # False: the task has not reported; the patch runs to the tree now


@dataclass(frozen=True)
class _Point:
    """A checkpoint ref as the task diff finds it: its epoch and its task's id."""

    ref: str
    epoch: int
    task: str

    @property
    def namespace(self) -> str:
        return self.ref.rpartition("/")[0]


def task_diff(workdir: Path, task_id: str) -> TaskDiff:
    """The patch of ``task_id``'s own changes (see the module's docstring)."""
    points = _points(Path(workdir))
    after = _newest(p for p in points if p.task == done_name(task_id))
    if after is None:
        return _so_far(workdir, task_id, _newest(p for p in points if p.task == task_id))
    before = _newest(p for p in points if p.task == task_id and p.namespace == after.namespace
                     and p.epoch <= after.epoch)
    if before is None:
        raise TaskDiffError(f"{task_id}'s checkpoint is gone (pruned), so there is nothing "
                            "to compare its report with")
    patch = _unified(workdir, before.ref, after.ref)
    return TaskDiff(f"what {task_id} changed (its checkpoint to its report)", patch, True)


def _so_far(workdir: Path, task_id: str, before: _Point | None) -> TaskDiff:
    if before is None:
        raise TaskDiffError(f"no checkpoint for {task_id}: it never went out, checkpoints "
                            "were off, or it was pruned; `choragos checkpoints` lists them")
    try:
        patch = changes.since_checkpoint(workdir, before.ref)
    except Exception as exc:  # the store's errors, a tree that is gone
        raise TaskDiffError(f"cannot read the tree of {task_id}: {exc}") from None
    return TaskDiff(f"{task_id} has not reported yet: its tree now against its checkpoint",
                    patch, False)


def _unified(workdir: Path, base: str, head: str) -> str:
    try:
        return changes.unified(workdir, base, head)
    except changes.ChangesError as exc:
        raise TaskDiffError(str(exc)) from None


def _points(workdir: Path) -> list[_Point]:
    argv = ["git", "-C", str(workdir), "for-each-ref", "--format=%(refname)", _REFS]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TaskDiffError(f"could not run git: {exc}") from None
    if done.returncode != 0:
        raise TaskDiffError(f"{workdir} is not a git repository, so it has no checkpoints")
    found = []
    for ref in done.stdout.decode("utf-8", "replace").split():
        parent, _, name = ref.rpartition("/")
        epoch, _, task = name.partition("-")
        if parent.endswith("/checkpoints") and epoch.isdigit() and task:
            found.append(_Point(ref, int(epoch), task))
    return found


def _newest(points: object) -> _Point | None:
    return max(points, key=lambda p: p.epoch, default=None)  # type: ignore[call-overload]
