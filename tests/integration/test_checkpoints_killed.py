"""A checkpoint killed (SIGKILL) half-way leaves temporaries named for its
process, and the next checkpoint (or the next session's start) removes them:
none is left for ever in .git/objects or beside the private index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    init_repo,
    isolated_git,
    write,
)

# Runs a checkpoint and kills itself at the first rename of the kind asked
# for: the moment a temporary object (or the private index's temporary) is
# complete but not yet in place.
CHILD = r"""
import os, signal, sys
from choragos.gitstore.checkpoints import CheckpointStore

workdir, where = sys.argv[1], sys.argv[2]

def dying(real):
    def rename(src, dst, *args, **kwargs):
        if where in os.fsdecode(src):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *args, **kwargs)
    return rename

os.rename, os.replace = dying(os.rename), dying(os.replace)
CheckpointStore(workdir).snapshot("T2", "coder", "killed")
"""


def leftovers(root: Path) -> list[str]:
    """Every temporary or lock file under the repository's git directory."""
    found = []
    for folder, _dirs, files in os.walk(root / ".git"):
        found += [os.path.join(folder, name) for name in files
                  if "tmp" in name or name.endswith(".lock")]
    return sorted(found)


@pytest.mark.parametrize(("where", "change"), [("/objects/", False), ("index.tmp", True)])
def test_what_a_killed_checkpoint_leaves_goes_at_the_next_checkpoint(tmp_path, where, change):
    root = init_repo(tmp_path / "repo")
    write(root, "a.txt", "a\n")
    with CheckpointStore(root) as store:
        store.snapshot("T1", "coder", "first")  # every blob and tree stored already
    if change:
        write(root, "a.txt", "b\n")  # so the private index is written again
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root), where],
                             stderr=subprocess.PIPE, text=True)
    _, err = child.communicate(timeout=60)
    assert child.returncode == -9, err
    left = leftovers(root)
    assert left and all(str(child.pid) in os.path.basename(name) for name in left), left

    with CheckpointStore(root) as store:
        store.snapshot("T3", "coder", "next")
        assert "T3" in {c.task_id for c in store.list()}
    assert leftovers(root) == [], "a killed checkpoint's temporaries were not removed"
