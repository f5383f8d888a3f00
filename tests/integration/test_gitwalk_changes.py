"""One store, one kind of change after another: every checkpoint holds what
`git add -A` would (its private index must never hide a change), and an
unchanged tree costs no reading at all.

This is the fixed counterpart of the randomised workspace test: each step
is a change the cache has its own path for (same listing, new listing,
new rules, a file turned into a directory and back)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    age_tree,
    git,
    init_repo,
    isolated_git,
    settle,
    write,
)


def _replace(path: Path, data: str) -> None:
    path.unlink()
    path.write_text(data)


def _file_to_dir(root: Path) -> None:
    (root / "a" / "two.txt").unlink()
    write(root, "a/two.txt/inside.txt", "now a directory\n")


def _dir_to_file(root: Path) -> None:
    shutil.rmtree(root / "a" / "two.txt")
    write(root, "a/two.txt", "a file again\n")


def _retarget(root: Path) -> None:
    (root / "link").unlink()
    (root / "link").symlink_to("a/one.txt")


def _file_to_link(root: Path) -> None:
    (root / "b" / "deep" / "three.txt").unlink()
    (root / "b" / "deep" / "three.txt").symlink_to("../../top.txt")


# Each step changes the tree in one way the walk has to notice.
STEPS: list[tuple[str, Callable[[Path], None]]] = [
    ("a file's content, same size", lambda r: _replace(r / "a" / "one.txt", "ONE\n")),
    ("a file made executable", lambda r: (r / "top.txt").chmod(0o755)),
    ("a file made plain again", lambda r: (r / "top.txt").chmod(0o644)),
    ("a symlink pointed elsewhere", _retarget),
    ("a file in a deep directory removed", lambda r: (r / "b" / "deep" / "four.txt").unlink()),
    ("a file turned into a directory", _file_to_dir),
    ("that directory turned back into a file", _dir_to_file),
    ("a file turned into a symlink", _file_to_link),
    ("a new directory with a file", lambda r: write(r, "c/d/new.txt", "new\n")),
    ("an ignored file added", lambda r: write(r, "b/noise.log", "ignored\n")),
    ("a tracked ignored file changed", lambda r: _replace(r / "kept.log", "tracked, edited\n")),
    # The listing and the rules stay the same; only git's index says otherwise.
    ("an ignored file taken into git", lambda r: git(r, "add", "-f", "b/noise.log")),
    ("a tracked ignored file let go", lambda r: git(r, "rm", "-q", "--cached", "kept.log")),
    ("a tracked ignored directory let go",
     lambda r: git(r, "rm", "-r", "-q", "--cached", "build")),
    ("a rule ignoring a kept file", lambda r: write(r, "a/.gitignore", "one.txt\n")),
    ("the rule dropped", lambda r: (r / "a" / ".gitignore").unlink()),
    ("a whole directory removed", lambda r: shutil.rmtree(r / "c")),
    ("an empty directory added", lambda r: (r / "empty").mkdir()),
    ("a file renamed", lambda r: os.rename(r / "a" / "one.txt", r / "a" / "uno.txt")),
]


def git_tree(root: Path) -> str:
    """What `git add -A` makes of the tree, from an empty index: a copy of the
    user's index would let git trust stat data that a change made within the
    same clock tick leaves equal, and the oracle, not the walk, would be wrong."""
    index = root.parent / "oracle-index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    tracked_ignored = git(root, "ls-files", "-z", "-c", "-i", "--exclude-standard").split("\0")
    git(root, "add", "-A", env=env)
    kept = [p for p in tracked_ignored if p and os.path.lexists(root / p)]
    if kept:
        git(root, "add", "-f", "--", *kept, env=env)
    tree = git(root, "write-tree", env=env).strip()
    index.unlink()
    return tree


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, ".gitignore", "*.log\nbuild/\n")
    write(root, "top.txt", "top\n")
    write(root, "a/one.txt", "one\n")
    write(root, "a/two.txt", "two\n")
    write(root, "b/deep/three.txt", "three\n")
    write(root, "b/deep/four.txt", "four\n")
    write(root, "kept.log", "tracked though ignored\n")
    (root / "link").symlink_to("top.txt")
    git(root, "add", "-A")
    write(root, "build/out/bin.txt", "built\n")
    git(root, "add", "-f", "kept.log", "build")
    git(root, "commit", "-q", "-m", "start")
    age_tree(root)
    return root


def test_each_change_is_in_the_next_checkpoint(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        assert store.snapshot("T0", "coder", "start").tree == git_tree(repo)
        for i, (what, change) in enumerate(STEPS, start=1):
            change(repo)
            settle(repo)
            checkpoint = store.snapshot(f"T{i}", "coder", what)
            assert checkpoint.tree == git_tree(repo), what


def test_an_unchanged_tree_is_walked_without_reading(repo: Path) -> None:
    files = len(git(repo, "ls-files", "-c", "-o", "--exclude-standard").split())
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "first")
        assert (store.last_stats.hashed, store.last_stats.files) == (files, files)
        assert store.last_stats.dirs == 6  # the root, a, b, b/deep, build, build/out
        again = store.snapshot("T2", "coder", "again")
        stats = store.last_stats
    assert again.tree == first.tree
    assert (stats.hashed, stats.listed, stats.written) == (0, 0, 0)
    assert (stats.files, stats.dirs, stats.skipped) == (files, 6, [])


def test_a_new_store_trusts_the_private_index_of_the_last(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "first")
    write(repo, "b/deep/three.txt", "THREE\n")
    os.utime(repo / "b" / "deep" / "three.txt", (1, 1))  # an old mtime hides nothing
    settle(repo)
    with CheckpointStore(repo) as store:
        second = store.snapshot("T2", "coder", "second")
        stats = store.last_stats
    assert second.tree != first.tree and second.tree == git_tree(repo)
    assert (stats.hashed, stats.listed) == (1, 0)
    assert stats.files == len(git(repo, "ls-files", "-c", "-o", "--exclude-standard").split())


def test_big_files_changed_together_are_all_in_the_checkpoint(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "first")
        for i in range(3):  # big enough to be hashed on threads, and a small one
            write(repo, f"b/big{i}.bin", bytes([i]) * 300_000)
        write(repo, "b/small.txt", "small\n")
        settle(repo)
        checkpoint = store.snapshot("T2", "coder", "big files")
        stats = store.last_stats
    assert checkpoint.tree == git_tree(repo)
    assert (stats.hashed, stats.hashed_bytes) == (4, 900_006)
