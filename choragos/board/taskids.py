"""Task ids unique per directory, across sessions.

A session numbers its tasks ``T1``, ``T2``…, but what a task leaves behind
outlives the session: its task file and reports under ``.choragos/``, its
checkpoints in the repository, its records in the event log.  A new session
in the same directory continues after the highest number any of these
holds, so it never overwrites an earlier session's task file or report,
and ``rollback T1`` never has two sessions' T1 to choose from.
"""

from __future__ import annotations

import os
from pathlib import Path

from choragos import onuse
from choragos.board.events import KEEP_ROTATED, default_path

# T3.md, T3.verify.log, merge-T3.diff; and a checkpoint's <epoch>-T3,
# <epoch>-merge-T3, <epoch>-pre-rollback-T3, <epoch>-done-T3.
_FILE = onuse.pattern(r"(?:^|-)T([0-9]{1,9})(?:\.|$)")
_LOGGED = onuse.pattern(rb'"(?:task|id)": "T([0-9]{1,9})"')


def first_free(workdir: Path) -> int:
    """The number the next session's first task takes in ``workdir``."""
    return max(_in_files(workdir), _in_log(workdir), _in_checkpoints(workdir)) + 1


def _in_files(workdir: Path) -> int:
    highest = 0
    for folder in ("tasks", "reports"):
        try:
            names = [p.name for p in (workdir / ".choragos" / folder).iterdir()]
        except OSError:
            continue
        highest = max([highest, *(_number(name) for name in names)])
    return highest


def _in_log(workdir: Path) -> int:
    live = default_path(workdir)
    highest = 0
    for path in (live, *(Path(f"{live}.{n}") for n in range(1, KEEP_ROTATED + 1))):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        highest = max([highest, *(int(m) for m in _LOGGED().findall(data))])
    return highest


def _in_checkpoints(workdir: Path) -> int:
    if not _may_hold_checkpoints(workdir):
        return 0
    # dulwich is loaded only here (10 MB of the server's memory): a session
    # with checkpoints off in a repository that never had any skips it.
    from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore, NotARepository

    try:
        with CheckpointStore(workdir) as store:
            names = store.names_everywhere()
    except (CheckpointError, NotARepository, OSError):
        return 0  # no repository, no checkpoints: nothing to continue from
    return max([0, *(_number(name) for name in names)])


def _may_hold_checkpoints(workdir: Path) -> bool:
    """False only when plainly no checkpoint ref can exist: no repository
    above ``workdir``, or one whose refs (loose or packed) have nothing
    under ``refs/choragos``.  Anything unusual answers True, and the
    checkpoint store reads the refs as git does."""
    try:
        common = _common_dir(workdir)
        if common is None:
            return False
        loose = common / "refs" / "choragos"  # git leaves its folders when it packs
        if any(files for _, _, files in os.walk(loose)) or (common / "reftable").exists():
            return True
        packed = common / "packed-refs"
        return packed.exists() and b" refs/choragos/" in packed.read_bytes()
    except (OSError, ValueError):
        return True


def _common_dir(workdir: Path) -> Path | None:
    """The git directory holding the refs of the repository ``workdir`` is in."""
    for folder in (workdir, *workdir.parents):
        dot = folder / ".git"
        if dot.is_dir():
            git_dir = dot
        elif dot.is_file():
            pointer = dot.read_text().strip()
            if not pointer.startswith("gitdir:"):
                raise ValueError(f"{dot} is not a gitdir pointer")
            git_dir = (folder / pointer.removeprefix("gitdir:").strip()).resolve()
        else:
            continue
        common = git_dir / "commondir"  # a linked worktree's: the main tree's
        return (git_dir / common.read_text().strip()).resolve() if common.exists() else git_dir
    return None


def _number(name: str) -> int:
    found = _FILE().search(name)
    return int(found.group(1)) if found else 0
