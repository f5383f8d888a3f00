"""Task ids unique per directory, across sessions.

A session numbers its tasks ``T1``, ``T2``…, but what a task leaves behind
outlives the session: its task file and reports under ``.choragos/``, its
checkpoints in the repository, its records in the event log.  A new session
in the same directory continues after the highest number any of these
holds, so it never overwrites an earlier session's task file or report,
and ``rollback T1`` never has two sessions' T1 to choose from.
"""

from __future__ import annotations

import re
from pathlib import Path

from choragos.events import KEEP_ROTATED, default_path

# T3.md, T3.verify.log, merge-T3.diff; and a checkpoint's <epoch>-T3,
# <epoch>-merge-T3, <epoch>-pre-rollback-T3, <epoch>-done-T3.
_FILE = re.compile(r"(?:^|-)T([0-9]{1,9})(?:\.|$)")
_LOGGED = re.compile(rb'"(?:task|id)": "T([0-9]{1,9})"')


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
        highest = max([highest, *(int(m) for m in _LOGGED.findall(data))])
    return highest


def _in_checkpoints(workdir: Path) -> int:
    # dulwich is loaded only here: the session has it anyway, a verb may not.
    from choragos.checkpoints import CheckpointError, CheckpointStore, NotARepository

    try:
        with CheckpointStore(workdir) as store:
            names = store.names_everywhere()
    except (CheckpointError, NotARepository, OSError):
        return 0  # no repository, no checkpoints: nothing to continue from
    return max([0, *(_number(name) for name in names)])


def _number(name: str) -> int:
    found = _FILE.search(name)
    return int(found.group(1)) if found else 0
