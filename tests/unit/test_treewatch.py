"""Unchanged trees reuse the last walk only when a watch vouches for it.

Real repositories in temp dirs, real inotify.  Every case checks both sides:
after a change the snapshot walks and holds the change (the tree git would
write), and when nothing changed it did not walk.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from choragos.gitstore import treewatch
from choragos.gitstore.checkpoints import CheckpointStore
from tests.unit.test_checkpoints import git

pytestmark = pytest.mark.skipif(treewatch._libc() is None, reason="needs Linux inotify")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f.txt").write_text(f"file {i}\n")
    (tmp_path / "top.txt").write_text("top\n")
    return tmp_path


@pytest.fixture
def store(repo: Path):
    made = CheckpointStore(repo, watch=True)
    yield made
    made.close()


def git_tree(root: Path) -> str:
    """The tree ``git add -A`` makes (choragos's own state left out), on a
    throwaway index."""
    index = root / ".git" / "bench-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index), "HOME": str(root)}
    subprocess.run(["git", "add", "-A", "--", ".", ":(exclude).choragos"], cwd=root, env=env,
                   check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=root, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    index.unlink()
    return tree


def snap(store: CheckpointStore, n: int) -> tuple[str, bool]:
    """(tree id, whether it walked)."""
    checkpoint = store.snapshot(f"T{n}", "r", "x")
    tree = store._repo.object_store[checkpoint.commit.encode()].tree.decode()
    return tree, store.last_stats.walked


def test_nothing_changed_reuses_the_walk_and_any_change_walks(repo, store):
    first, walked = snap(store, 1)
    assert walked and first == git_tree(repo)
    assert snap(store, 2) == (first, False)
    # Written in place: no directory changes, only the watch sees it.
    with open(repo / "d1" / "f.txt", "a") as f:
        f.write("more\n")
    changed, walked = snap(store, 3)
    assert walked and changed != first and changed == git_tree(repo)
    assert snap(store, 4) == (changed, False)


def test_a_change_in_a_directory_first_seen_by_the_last_walk_is_caught(repo, store):
    snap(store, 1)
    (repo / "new").mkdir()
    (repo / "new" / "a.txt").write_text("a\n")
    snap(store, 2)  # walks, and watches new/ before reading it
    assert snap(store, 3)[1] is False
    (repo / "new" / "a.txt").write_text("b\n")
    tree, walked = snap(store, 4)
    assert walked and tree == git_tree(repo)


def test_a_moved_directory_drops_every_watch(repo, store):
    snap(store, 1)
    (repo / "d0").rename(repo / "moved")
    (repo / "d0").mkdir()
    (repo / "d0" / "g.txt").write_text("new d0\n")
    assert snap(store, 2)[1]  # walks, watching the new d0/
    assert snap(store, 3)[1] is False
    (repo / "d0" / "g.txt").write_text("changed\n")  # the old watch would have missed this
    tree, walked = snap(store, 4)
    assert walked and tree == git_tree(repo)
    (repo / "moved" / "f.txt").write_text("changed too\n")
    tree, walked = snap(store, 5)
    assert walked and tree == git_tree(repo)


def test_a_deleted_directory_and_the_state_dir(repo, store):
    snap(store, 1)
    (repo / ".choragos").mkdir()
    (repo / ".choragos" / "board.json").write_text("{}")  # never checkpointed
    assert snap(store, 2)[1] is False
    shutil.rmtree(repo / "d2")
    tree, walked = snap(store, 3)
    assert walked and tree == git_tree(repo)


def test_ignore_rules_and_the_users_index_are_outside_the_watch(repo, store):
    (repo / "build.log").write_text("log\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    snap(store, 1)
    (repo / ".git" / "info" / "exclude").write_text("*.log\n")
    tree, walked = snap(store, 2)
    assert walked and tree == git_tree(repo)
    git(repo, "add", "-f", "build.log")  # tracked although ignored: only the index says so
    tree, walked = snap(store, 3)
    assert walked and "build.log" in git(repo, "ls-tree", "-r", "--name-only", tree)


def test_a_nested_repository_always_walks(repo, store):
    inner = repo / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    (inner / "x").write_text("x")
    git(inner, "add", "x")
    git(inner, "commit", "-qm", "one")
    snap(store, 1)
    assert snap(store, 2)[1]  # its HEAD moves inside .git, where no watch looks


def test_without_inotify_every_snapshot_walks(repo, monkeypatch):
    monkeypatch.setattr(treewatch, "_libc", lambda: None)
    with CheckpointStore(repo, watch=True) as store:
        snap(store, 1)
        assert snap(store, 2)[1]
        (repo / "top.txt").write_text("changed\n")
        tree, walked = snap(store, 3)
        assert walked and tree == git_tree(repo)


def test_when_a_watch_cannot_be_placed_every_snapshot_walks(repo, monkeypatch):
    libc = treewatch._libc()

    class OutOfWatches:
        inotify_init1 = staticmethod(libc.inotify_init1)

        @staticmethod
        def inotify_add_watch(fd: int, path: bytes, mask: int) -> int:
            return -1 if path.endswith(b"d1/") else libc.inotify_add_watch(fd, path, mask)

    monkeypatch.setattr(treewatch, "_libc", lambda: OutOfWatches)
    with CheckpointStore(repo, watch=True) as store:
        snap(store, 1)
        assert snap(store, 2)[1]
        (repo / "d1" / "f.txt").write_text("unwatched change\n")
        tree, walked = snap(store, 3)
        assert walked and tree == git_tree(repo)


def test_a_full_kernel_queue_is_a_change():
    watch = treewatch.TreeWatch("/")
    try:
        watch.trusted = True
        overflow = struct.pack("iIII", -1, treewatch.IN_Q_OVERFLOW, 0, 0)
        assert watch._parse(overflow)
        ignored_name = b".choragos".ljust(16, b"\0")
        event = struct.pack("iIII", 1, treewatch.IN_CREATE, 0, len(ignored_name))
        assert not watch._parse(event + ignored_name)
    finally:
        watch.close()


def test_a_store_without_watch_walks_every_time(repo):
    with CheckpointStore(repo) as store:
        snap(store, 1)
        assert snap(store, 2)[1]
