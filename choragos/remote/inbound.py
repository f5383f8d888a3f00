"""What a remote checkout sends back, checked before the mirror takes it.

The host's checkout is the remote agent's to do with as it likes: it can
commit on its branch by itself, past the ``:!.choragos`` the session's own
commit leaves out.  Git checks a fetched tree's paths (no ``..``, no
``.git``) but not two things that matter here:

- an entry under ``.choragos`` (anywhere, any case): in the mirror, the
  ff-merge would replace the link to the session's state with a folder, and
  the merge into the main checkout overwrites ignored files without a
  word, so a task file, a report or a journal of the operator's would be the
  remote agent's;
- a symbolic link that leads out of the checkout (an absolute target, or
  one that climbs above the root): the mirror, the checks and the main
  checkout would hold a way out of the workspace.

:func:`refusal` names the first such entry between the mirror's commit and
the fetched one, or says nothing.
"""

from __future__ import annotations

import posixpath
import subprocess
from pathlib import Path

from choragos import safeexec

__all__ = ["refusal"]

STATE = ".choragos"
LINK = "120000"


def refusal(mirror: Path, host: str, commit: str = "FETCH_HEAD") -> str | None:
    """Why the mirror must not take ``commit`` from ``host``, or None."""
    for mode, blob, path in _entries(mirror, commit):
        shown = path.encode("unicode_escape").decode("ascii")
        if any(part.casefold() == STATE for part in path.split("/")):
            return (f"the work from {host} changes {shown}, under .choragos, which is the "
                    "session's own state; nothing was taken (commit elsewhere there)")
        if mode == LINK and _escapes(path, _target(mirror, blob)):
            return (f"the work from {host} holds a symbolic link {shown} that leads out of "
                    "the checkout; nothing was taken (remove it there)")
    return None


def _entries(mirror: Path, commit: str) -> list[tuple[str, str, str]]:
    """(mode, blob, path) of each entry ``commit`` adds or changes beyond HEAD."""
    out = _git(mirror, "diff-tree", "-r", "-z", "--no-renames", "--diff-filter=d", "HEAD",
               commit)
    fields = out.split(b"\0")
    found = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        _, mode, _, blob, _ = meta[1:].decode("ascii").split(" ")
        found.append((mode, blob, path.decode("utf-8", "surrogateescape")))
    return found


def _target(mirror: Path, blob: str) -> str:
    return _git(mirror, "cat-file", "blob", blob).decode("utf-8", "surrogateescape")


def _escapes(path: str, target: str) -> bool:
    if target.startswith("/"):
        return True
    landed = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return landed == ".." or landed.startswith("../")


def _git(cwd: Path, *args: str) -> bytes:
    # As the session's own git runs anywhere agents write: no hooks, and no
    # `git` from a folder of the workspace on PATH.
    done = subprocess.run(safeexec.git_argv(cwd, *args), capture_output=True, timeout=60,
                          stdin=subprocess.DEVNULL,
                          env=safeexec.trusted_env(None, safeexec.workspace_of(cwd)))
    if done.returncode != 0:
        raise OSError(f"git {args[0]} failed: "
                      f"{done.stderr.decode('utf-8', 'replace').strip() or done.returncode}")
    return done.stdout
