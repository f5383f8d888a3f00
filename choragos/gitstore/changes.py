"""What a task actually changed: the files between two work-tree snapshots.

Both sides are git trees written by the checkpoint store (tracked and
untracked, non-ignored files; never ``.choragos/``), compared with ``git
diff`` so the counts are exactly what ``git diff --stat`` shows.  git is run
with an argv list, never through a shell.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from choragos import safeexec

_KINDS = {"A": "added", "M": "modified", "D": "deleted", "T": "modified"}

# A task keeps this many file entries (the first by path) and counts the
# rest in its totals: a code generator's ten thousand files would otherwise
# ride in every journal record, board listing and news of that task.
LISTED = 200


class ChangesError(Exception):
    """git could not compare the two trees; the message says why."""


@dataclass(frozen=True)
class FileChange:
    """One file a change touched: added, modified or deleted, and the lines it gained and lost."""

    path: str
    kind: str                 # added | modified | deleted
    added: int | None         # lines; None for a binary file
    deleted: int | None

    def as_dict(self) -> dict:
        return asdict(self)


def diff_trees(root: Path, base: str, head: str) -> list[FileChange]:
    """Every file that differs between tree-ish ``base`` and ``head``, by path."""
    if base == head:
        return []  # one object, so nothing differs: no git to run (a task that wrote nothing)
    kinds = _name_status(_git(root, "-z", "--name-status", base, head))
    counts = _numstat(_git(root, "-z", "--numstat", base, head))
    return [FileChange(path, kind, *counts.get(path, (None, None)))
            for path, kind in sorted(kinds.items())]


def unified(root: Path, base: str, head: str, context_lines: int = 3) -> str:
    """The patch between two tree-ish, for the deck and the merge gate."""
    return _git(root, "--no-color", f"-U{context_lines}", base, head).decode(
        "utf-8", "replace")


def since_checkpoint(workdir: Path, ref: str) -> str:
    """The patch from checkpoint ``ref`` to its work tree now (untracked files
    too): the main tree's, or the worktree's for a checkpoint taken there."""
    from choragos.gitstore.checkpointtrees import open_for  # the store pulls in dulwich
    with open_for(workdir, ref) as store:
        base = store.resolve(ref).tree
        return unified(store.root, base, store.tree_now())


def branch_diff(workdir: Path, branch: str) -> str:
    """What ``branch`` holds beyond the main checkout's HEAD: what a merge would bring."""
    from choragos.gitstore.worktrees import merge_base
    return unified(workdir, merge_base(workdir, branch), branch)


def totals(found: list[dict] | tuple[dict, ...]) -> dict[str, int]:
    """How many files changed, and the lines added and deleted in all of them."""
    return {"files": len(found), "added": sum(c.get("added") or 0 for c in found),
            "deleted": sum(c.get("deleted") or 0 for c in found)}


def headline(counted: dict[str, int]) -> str:
    """``3 files changed (+12 -4)``, as the orchestrator reads it."""
    if not counted["files"]:
        return "no files changed"
    files = "1 file" if counted["files"] == 1 else f"{counted['files']} files"
    return f"{files} changed (+{counted['added']} -{counted['deleted']})"


def changed_count(task: dict) -> int | None:
    """How many files ``task`` changed, ``None`` when not measured.  A journal
    from before totals were kept has only the list, which was then whole."""
    counted = task.get("changed")
    if isinstance(counted, dict) and isinstance(counted.get("files"), int):
        return counted["files"]
    found = task.get("changes")
    return len(found) if isinstance(found, list | tuple) else None


def files_cell(task: dict) -> str:
    """A board row's FILES cell: how many files the task changed, ``-`` when
    not measured, a ``!`` after the count when it is flagged (``0!``: a done
    that changed nothing; ``2!``: a read-only role that changed files)."""
    count = changed_count(task)
    if count is None:
        return "-"
    flagged = task.get("flagged")
    if flagged is None:  # measured before the flag was kept: a done with no change
        flagged = not count and task.get("state") == "done"
    return f"{count}!" if flagged else f"{count}"


def _git(root: Path, *args: str) -> bytes:
    """``git diff ARGS`` in ``root``; the last two arguments are the trees."""
    argv = safeexec.git_argv(root, "-c", "core.quotepath=off", "diff", "--no-renames",
                             "--no-ext-diff", "--no-textconv", *args)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=60, check=False,
                              stdin=subprocess.DEVNULL,
                              env=safeexec.trusted_env(None, safeexec.workspace_of(root)))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ChangesError(f"could not run git diff: {exc}") from None
    if done.returncode != 0:
        raise ChangesError("git diff failed: " + done.stderr.decode(errors="replace").strip())
    return done.stdout


def _name_status(out: bytes) -> dict[str, str]:
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    kinds = {}
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        if status:
            kinds[path] = _KINDS.get(status[:1], "modified")
    return kinds


def _numstat(out: bytes) -> dict[str, tuple[int | None, int | None]]:
    counts = {}
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        added, _, rest = entry.partition("\t")
        deleted, _, path = rest.partition("\t")
        if path:
            counts[path] = (_count(added), _count(deleted))
    return counts


def _count(text: str) -> int | None:
    return int(text) if text.isdigit() else None
