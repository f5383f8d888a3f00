"""A checkpoint's walk, and a report's, look again at no more of the tree than changed.

Real repository, real inotify, the real aftercare (driven on the test's
thread).  A task that changed nothing since the last report -- a review --
used to have every file of the tree stat'ed again at its report, a cost that
grew with the tree (in the soak, with the rounds: each wrote a file).  The
aftercare's store now watches its tree, as the checkpointer's does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from choragos.actors.aftercare import AftercareActor, CheckWork, WorkChecked
from choragos.gitstore import treewatch, walk
from choragos.gitstore.checkpoints import CheckpointStore
from tests.conftest import Told
from tests.unit.test_checkpoints import git
from tests.unit.test_treewatch import git_tree

pytestmark = [pytest.mark.skipif(treewatch._libc() is None, reason="needs Linux inotify"),
              pytest.mark.timeout(60)]

FILES = 200


def flat_repo(path: Path) -> Path:
    """A git repository with FILES files side by side in its top directory."""
    git(path, "init", "-q")
    for i in range(FILES):
        (path / f"r{i}.txt").write_text(f"round {i}\n")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return flat_repo(tmp_path)


def report(aftercare: AftercareActor, core: Told, repo: Path, task: str,
           monkeypatch: pytest.MonkeyPatch, work: str = "") -> tuple[tuple[dict, ...], int]:
    """The task's checkpoint taken, ``work`` appended to r7.txt, then its
    report measured: (changes, lstat calls)."""
    with CheckpointStore(repo) as store:
        ref = store.snapshot(task, "coder", "x").ref
    if work:
        with open(repo / "r7.txt", "a") as f:
            f.write(work)
    calls = 0
    real = os.lstat

    def counted(path, *args, **kwargs):
        nonlocal calls
        calls += 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counted)
    try:
        aftercare._check(CheckWork(task, ref, repo, role="coder", label="job"))
    finally:
        monkeypatch.setattr(os, "lstat", real)
    checked = core.told[-1]
    assert isinstance(checked, WorkChecked) and checked.error == "", checked
    return checked.changes, calls


def test_a_report_after_a_task_that_changed_nothing_stats_no_file(repo, monkeypatch):
    """Counted: the second report stat'ed every file of the tree again (200
    lstat calls and more) though nothing had changed; now none, and a change
    made in place (seen by no directory) is still measured."""
    core = Told()
    aftercare = AftercareActor(repo, core)
    try:
        report(aftercare, core, repo, "T1", monkeypatch)  # walks once, and watches
        changes, calls = report(aftercare, core, repo, "T2", monkeypatch)
        assert changes == () and calls < 10, calls
        changes, calls = report(aftercare, core, repo, "T3", monkeypatch, work="more\n")
        assert [c["path"] for c in changes] == ["r7.txt"], changes
    finally:
        aftercare.on_shutdown()


def test_a_directory_that_gained_a_file_looks_again_only_at_what_changed(repo, monkeypatch):
    """Counted: a new file in a directory of 200 made the walk look at each
    of the 200 on its own (a Python call and an lstat each, 201 calls); the
    files whose stat data is as cached now take their cached ids together,
    and only the new file and the one changed in place are looked at.  The
    tree is the one git writes."""
    calls = 0
    real = walk.Walker._file

    def counted(self, *args):
        nonlocal calls
        calls += 1
        return real(self, *args)

    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "x")
        time.sleep(0.05)  # past the first walk's racy window
        store.snapshot("T2", "coder", "x")  # the files' stat data cached
        (repo / "new.txt").write_text("new\n")
        with open(repo / "r7.txt", "a") as f:
            f.write("more\n")
        monkeypatch.setattr(walk.Walker, "_file", counted)
        checkpoint = store.snapshot("T3", "coder", "x")
        tree = store._repo.object_store[checkpoint.commit.encode()].tree.decode()
    assert calls == 2, calls
    assert tree == git_tree(repo)
