"""Starting what the session runs itself, from where no agent can plant a program.

Every role's PATH starts with ``.choragos/bin``, and a workspace may hold a
``.venv/bin`` the user's PATH names: agents write both.  A program the
session starts, for a role (its ``verify``) or for itself (git), is looked
up on the PATH it was given minus every folder inside the workspace and
every relative entry (``.``, or an empty one, is whatever the current
directory is).  The session's own git runs start no hooks and no
filesystem monitor: a worker can commit hook files and set
``core.hooksPath`` in the repository's shared config.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

GIT_QUIET = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def trusted_path(value: str | None, workspace: Path) -> str:
    """``value`` (a PATH) without the folders an agent can write."""
    top = os.path.realpath(workspace)
    kept = []
    for entry in (os.defpath if value is None else value).split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
            kept.append(entry)
    return os.pathsep.join(kept)


def trusted_env(env: Mapping[str, str] | None, workspace: Path) -> dict[str, str]:
    """``env`` (None: ours) with its PATH made :func:`trusted_path`."""
    base = dict(os.environ if env is None else env)
    return {**base, "PATH": trusted_path(base.get("PATH"), workspace)}


def which(command: str, env: Mapping[str, str], workspace: Path) -> str | None:
    """Where ``command`` is on ``env``'s PATH outside ``workspace``, if anywhere."""
    return shutil.which(command, path=trusted_path(env.get("PATH"), workspace))


def git_argv(cwd: Path, *args: str) -> list[str]:
    """A git command line for the session's own use in ``cwd``: no hooks run."""
    return ["git", "-C", str(cwd), *GIT_QUIET, *args]


def workspace_of(tree: Path) -> Path:
    """The workspace a tree belongs to: a role's worktree lives in its
    ``.choragos/worktrees/``; any other tree is its own."""
    parts = Path(tree).parts
    if len(parts) > 3 and parts[-3:-1] == (".choragos", "worktrees"):
        return Path(*parts[:-3])
    return Path(tree)
