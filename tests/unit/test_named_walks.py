"""A watched store's walk looks only at the entries the watch named.

Real repositories, real inotify.  A long-lived store (the checkpointer's,
the aftercare's) keeps its last walk in memory and, when its watch can
account for every change since that walk began, looks again only at the
entries the events named: a directory of many files that gained one costs
one look, not a listing and an ``lstat`` of each, and the private index on
disk (which the other store rewrites) is not read.  Every case checks the
tree against the one git writes; a lost event falls back to a full walk.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import time
from pathlib import Path

import pytest

from choragos.gitstore import checkpoints, treewatch, walk
from choragos.gitstore.checkpoints import CheckpointStore
from tests.unit.test_checkpoints import git
from tests.unit.test_report_walks import FILES, flat_repo
from tests.unit.test_treewatch import git_tree

pytestmark = [pytest.mark.skipif(treewatch._libc() is None, reason="needs Linux inotify"),
              pytest.mark.timeout(60)]



@pytest.fixture
def repo(tmp_path: Path) -> Path:
    flat_repo(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("a = 1\n")
    return tmp_path


class Counted:
    """``os.lstat`` calls, the walks' directory listings, and the private
    index's bytes read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lstat = self.listings = self.index_bytes = 0
        real_lstat, real_listing, real_load = os.lstat, walk._listing, walk.load_cache

        def lstat(path, *args, **kwargs):
            self.lstat += 1
            return real_lstat(path, *args, **kwargs)

        def listing(path):
            self.listings += 1
            return real_listing(path)

        def load(path):
            with contextlib.suppress(OSError):
                self.index_bytes += os.path.getsize(path)
            return real_load(path)

        monkeypatch.setattr(os, "lstat", lstat)
        monkeypatch.setattr(walk, "_listing", listing)
        monkeypatch.setattr("choragos.gitstore.checkpoints.load_cache", load)


def snap(store: CheckpointStore, task: str) -> str:
    checkpoint = store.snapshot(task, "coder", "x")
    return store._repo.object_store[checkpoint.commit.encode()].tree.decode()


def test_a_new_file_in_a_big_directory_is_one_look_and_no_index_read(repo, monkeypatch):
    """Counted, two stores taking turns as the checkpointer and the aftercare
    do: a new file in a directory of 200 made each store list the directory
    and ``lstat`` each of its files (200 and more) and read the private index
    the other had just written; now a few ``lstat`` calls, no listing and no
    index read, and the tree is git's."""
    first = CheckpointStore(repo, watch=True)
    second = CheckpointStore(repo, watch=True)
    try:
        snap(first, "T1")
        snap(second, "done-T1")
        counted = Counted(monkeypatch)
        for n in range(2, 6):
            (repo / f"new{n}.txt").write_text(f"new {n}\n")
            with open(repo / "r7.txt", "a") as f:
                f.write("more\n")
            for store, task in ((first, f"T{n}"), (second, f"done-T{n}")):
                before = counted.lstat
                tree = snap(store, task)
                assert tree == git_tree(repo)
                assert counted.lstat - before < 20, counted.lstat - before
        assert counted.listings == 0 and counted.index_bytes == 0
    finally:
        first.close()
        second.close()


def check(store: CheckpointStore, repo: Path, task: str, *, named: bool = True,
          new_dirs: int = 0) -> None:
    """The checkpoint is git's tree; ``named``: only the named entries and
    the ``new_dirs`` new directories were looked at, no other listed."""
    assert snap(store, task) == git_tree(repo), task
    stats = store.last_stats
    assert stats.walked
    if named:
        assert stats.looked >= 1 and stats.listed == new_dirs, (task, stats)


def test_every_kind_of_change_makes_gits_tree(repo):
    """Named changes of every kind, each checkpoint compared with git's tree."""
    with CheckpointStore(repo, watch=True) as store:
        snap(store, "T1")
        (repo / "r1.txt").unlink()
        check(store, repo, "T2")
        (repo / "r2.txt").chmod(0o755)
        check(store, repo, "T3")
        os.symlink("r3.txt", repo / "link")
        check(store, repo, "T4")
        (repo / "link").unlink()
        (repo / "link").mkdir()  # a symlink turned directory
        (repo / "link" / "inside.txt").write_text("inside\n")
        check(store, repo, "T5", new_dirs=1)
        shutil.rmtree(repo / "link")
        (repo / "link").write_text("a file again\n")
        check(store, repo, "T6")
        os.rename(repo / "r4.txt", repo / "r4-renamed.txt")
        check(store, repo, "T7")
        (repo / "src" / "deep").mkdir()
        (repo / "src" / "deep" / "b.py").write_text("b = 2\n")
        check(store, repo, "T8", new_dirs=1)
        (repo / "src" / "deep" / "b.py").write_text("b = 3\n")
        check(store, repo, "T9")
        # A name that continues a directory's name: git's order is not the listing's.
        (repo / "src" / "deep.txt").write_text("after deep/ in git's order\n")
        (repo / "src" / "deep-1").write_text("before it\n")
        check(store, repo, "T10")
        shutil.rmtree(repo / "src" / "deep")
        check(store, repo, "T11")
        os.mkfifo(repo / "pipe")  # git skips it, and so does a named look
        check(store, repo, "T12")


def test_ignore_rules_changed_in_a_directory_list_it_again(repo):
    with CheckpointStore(repo, watch=True) as store:
        (repo / "src" / "build.log").write_text("log\n")
        snap(store, "T1")
        (repo / "src" / ".gitignore").write_text("*.log\n")
        check(store, repo, "T2", named=False)  # the rules changed: classified again
        (repo / "src" / "other.log").write_text("ignored too\n")
        (repo / "kept.log").write_text("not ignored up here\n")
        check(store, repo, "T3")
        (repo / ".gitignore").write_text("r1*.txt\n")  # the root's rules: everything below
        check(store, repo, "T4", named=False)


def test_a_lost_event_walks_everything(repo, monkeypatch):
    """A full kernel queue: the watch's account of changes is no longer
    whole, so the next walk looks at every file again (and is git's)."""
    with CheckpointStore(repo, watch=True) as store:
        snap(store, "T1")
        (repo / "src" / "a.py").write_text("a = 2\n")
        overflow = struct.pack("iIII", -1, treewatch.IN_Q_OVERFLOW, 0, 0)
        store._watch._parse(overflow)
        counted = Counted(monkeypatch)
        check(store, repo, "T2", named=False)
        assert store.last_stats.looked == 0 and counted.lstat > FILES
        (repo / "src" / "a.py").write_text("a = 3\n")
        check(store, repo, "T3")  # whole again from that walk on


def test_a_walk_that_saved_no_checkpoint_is_not_started_from(repo):
    """A rollback's plan walks without writing objects: the next snapshot
    must not take ids from that walk, so it walks as a store without a
    watch would."""
    with CheckpointStore(repo, watch=True) as store:
        snap(store, "T1")
        (repo / "src" / "a.py").write_text("planned\n")
        store.plan_rollback("T1")
        (repo / "r5.txt").write_text("changed\n")
        check(store, repo, "T2", named=False)
        git(repo, "cat-file", "-e", git_tree(repo))  # every object is there


def past_racy(path: Path, probe: Path, timeout: float = 5.0) -> None:
    """Wait until the filesystem's clock has moved past ``path``'s last
    change, so a walk from now on caches its stat data (a change in the
    walk's own clock tick is looked at again by the next walk)."""
    changed, deadline = path.stat().st_ctime_ns, time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe.write_text("tick\n")
        if probe.stat().st_mtime_ns > changed:
            return
        time.sleep(0.001)
    raise AssertionError("the filesystem's clock did not move")


def test_entries_that_came_and_went_write_no_private_index(repo, monkeypatch):
    """Codex makes and removes scratch directories in the workspace's top
    directory on every turn: a walk that finds them gone again changes
    nothing, so it writes no private index (a whole file, re-encoded, the
    size of the directory's record: every walk of both stores in the soak
    wrote one before, twice a round for nothing).  The checkpoint is git's
    tree, and so are the next ones, with the watch and without it."""
    saves = []
    real_save = checkpoints.save_cache
    monkeypatch.setattr(checkpoints, "save_cache",
                        lambda path, cache: (saves.append(path), real_save(path, cache)))
    with CheckpointStore(repo, watch=True) as store:
        snap(store, "T1")
        (repo / "r3.txt").write_text("changed\n")
        past_racy(repo / "r3.txt", repo / ".git" / "probe")
        check(store, repo, "T2")
        assert len(saves) == 2
        for n in range(3, 6):
            for scratch in (".codex", ".aws", ".agents"):
                (repo / scratch).mkdir()
                (repo / scratch / "x").write_text("scratch\n")
                shutil.rmtree(repo / scratch)
            check(store, repo, f"T{n}")
            assert store.last_stats.looked == 3
        assert len(saves) == 2, "a walk that changed nothing wrote the private index"
        (repo / "r4.txt").write_text("changed too\n")
        check(store, repo, "T6")
        assert len(saves) == 3
    with CheckpointStore(repo) as unwatched:  # another process: the index on disk
        (repo / "r5.txt").write_text("changed as well\n")
        assert snap(unwatched, "T7") == git_tree(repo)


def test_two_stores_write_the_private_index_once_a_round(repo, monkeypatch):
    """The soak's round, counted: the checkpointer's store checkpoints the
    coder's task, Codex makes its scratch directories, writes a file and
    reports (the aftercare's store takes the report's snapshot), they are
    gone again by the review's checkpoint and its report.  Both stores
    wrote the private index (the whole file, its top record re-encoded,
    both growing with the files) at three of those four walks, all for one
    new file; now once a round, by the store that saw the new tree first.
    And each walk formatted and hashed the top directory's tree again,
    also when only the scratch directories (in no tree) had come or gone:
    now the two walks that meet the new file do.
    Every checkpoint is git's tree, and a store without the watch (a
    shell's) starts from the index and makes git's tree too, also once the
    checkpoint the index names is pruned."""
    saves = []
    real_save = checkpoints.save_cache
    monkeypatch.setattr(checkpoints, "save_cache",
                        lambda path, cache: (saves.append(path), real_save(path, cache)))
    trees = []
    real_tree = walk.Walker._tree
    monkeypatch.setattr(walk.Walker, "_tree", lambda self, node: (
        trees.append(node.rel), real_tree(self, node))[1])
    scratch = [repo / name for name in (".agents", ".aws", ".codex")]
    checkpointer = CheckpointStore(repo, watch=True)
    aftercare = CheckpointStore(repo, watch=True)
    try:
        snap(checkpointer, "T0")
        snap(aftercare, "done-T0")
        saves.clear()
        trees.clear()
        for n in range(1, 6):
            assert snap(checkpointer, f"T{2 * n - 1}") == git_tree(repo)
            for path in scratch:
                path.mkdir()
            (repo / f"round{n}.txt").write_text(f"round {n}\n")
            past_racy(repo / f"round{n}.txt", repo / ".git" / "probe")
            assert snap(aftercare, f"done-T{2 * n - 1}") == git_tree(repo)
            assert snap(checkpointer, f"T{2 * n}") == git_tree(repo)
            for path in scratch:
                path.rmdir()
            assert snap(aftercare, f"done-T{2 * n}") == git_tree(repo)
        assert len(saves) == 5, f"{len(saves)} index writes in 5 rounds"
        top = trees.count(b"")  # (an empty directory's: no tree, nothing formatted)
        assert top == 10, f"the top directory's tree built {top} times in 5 rounds"
        checkpointer.prune(0)  # the checkpoint the index names goes too
    finally:
        checkpointer.close()
        aftercare.close()
    with CheckpointStore(repo) as shell:
        (repo / "round2.txt").write_text("changed in a shell\n")
        assert snap(shell, "T99") == git_tree(repo)
