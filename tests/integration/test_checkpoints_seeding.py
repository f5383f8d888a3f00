"""Checkpoints that lean on git's own index: ids seeded from it, gitlinks of
submodules not checked out, and index v4's compressed paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from choragos.checkpoints import CheckpointStore
from choragos.gitwalk import read_user_index
from tests.integration.test_checkpoints_git import (  # noqa: F401 - the fixture is autouse
    OLD,
    age_tree,
    git,
    git_tree,
    init_repo,
    isolated_git,
    ls_tree,
    settle,
    write,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


def test_a_first_snapshot_takes_unchanged_ids_from_git_index(repo: Path) -> None:
    for i in range(64):  # exactly the fewest files worth seeding
        write(repo, f"d{i % 2}/f{i}.txt", f"{i}\n")
    age_tree(repo)
    git(repo, "add", "-A")  # the index is written after every file's last change
    settle(repo)
    write(repo, "d0/f0.txt", "X\n")  # same size, new content: git's entry no longer holds
    os.utime(repo / "d0/f0.txt", (OLD + 1, OLD + 1))
    settle(repo)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "seeded")
        assert (store.last_stats.seeded, store.last_stats.hashed) == (63, 1)
    assert checkpoint.tree == git_tree(repo)


def test_too_few_files_are_hashed_not_seeded(repo: Path) -> None:
    for i in range(63):
        write(repo, f"f{i}.txt", f"{i}\n")
    age_tree(repo)
    git(repo, "add", "-A")
    settle(repo)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "few")
        assert (store.last_stats.seeded, store.last_stats.hashed) == (0, 63)


def test_a_submodule_not_checked_out_keeps_its_recorded_commit(repo: Path,
                                                               tmp_path: Path) -> None:
    upstream = init_repo(tmp_path / "upstream")
    write(upstream, "inside.txt", "sub\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(repo, "commit", "-q", "-m", "with submodule")
    head = git(repo, "rev-parse", "HEAD:sub").strip()
    git(repo, "submodule", "deinit", "-q", "-f", "sub")  # an empty directory is left
    assert (repo / "sub").is_dir() and not any((repo / "sub").iterdir())
    settle(repo)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "deinit")
    assert ls_tree(repo, checkpoint.ref)["sub"] == "160000"
    assert git(repo, "rev-parse", f"{checkpoint.ref}:sub").strip() == head
    assert checkpoint.tree == git_tree(repo)


def test_index_v4_paths_that_drop_long_prefixes(repo: Path) -> None:
    names = ["a" * 150 + "/x", "b" * 140, "b" * 140 + "c", "c" * 200, "d"]
    for name in names:
        write(repo, name, name[-1])
    git(repo, "add", "-A")
    git(repo, "update-index", "--index-version", "4")
    index = read_user_index(str(repo / ".git" / "index"))
    assert index.paths == sorted(name.encode() for name in names)
    assert index.entries[b"d"][5].hex() == git(repo, "hash-object", "d").strip()


def test_an_entry_as_new_as_git_index_is_hashed_not_seeded(repo: Path) -> None:
    for i in range(64):
        write(repo, f"f{i}.txt", f"{i}\n")
    age_tree(repo)
    os.utime(repo / "f7.txt", (OLD + 2, OLD + 2))
    git(repo, "add", "-A")
    edge = os.stat(repo / "f7.txt").st_mtime_ns
    os.utime(repo / ".git" / "index", ns=(edge, edge))  # git's racy rule: not to be trusted
    settle(repo)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "racy entry")
        assert (store.last_stats.seeded, store.last_stats.hashed) == (63, 1)
    assert checkpoint.tree == git_tree(repo)
