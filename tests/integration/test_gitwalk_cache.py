"""The walk when its cache names what is no longer there, and git's index
with a path too long for the index's name-length field.

A file or directory that vanishes between a directory's listing and its
``lstat`` is a race; here the cache's listing names one that never existed,
which the walk meets the same way: it trusts the cached listing (the
directory's stat data is unchanged) and finds the entry gone."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from choragos.gitstore import treewatch
from choragos.gitstore.checkpoints import CheckpointStore
from choragos.gitstore.ignore import RuleStack
from choragos.gitstore.objects import ObjectWriter
from choragos.gitstore.walk import Records, Scan, UserIndex, Walker, read_user_index
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    age_tree,
    git,
    git_tree,
    init_repo,
    isolated_git,
    settle,
    write,
)
from tests.integration.test_rollback_hazards import committed_nested


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, "a.txt", "a\n")
    write(root, "sub/b.txt", "b\n")
    age_tree(root)
    return root


def walk(root: Path, cache: Records, racy_from_ns: int | None = None) -> Scan:
    writer = ObjectWriter(str(root / ".git/objects"), [])
    try:
        return Walker(str(root), RuleStack.root([b"", b""]), writer, cache=cache,
                      racy_from_ns=time.time_ns() if racy_from_ns is None else racy_from_ns,
                      user_index=lambda: UserIndex([], {}, 0), write=True).run()
    finally:
        writer.close()


def with_ghost(scan: Scan, name: bytes, kind: bytes, key: tuple | None) -> Records:
    """The scan's records, with the root's listing naming ``name`` as well."""
    stat, rules, oid, names, kinds, keys, ids, modes = scan.records[b""]
    at = sorted((*names, name)).index(name)
    record = (stat, rules, oid, (*names[:at], name, *names[at:]),
              kinds[:at] + kind + kinds[at:], (*keys[:at], key, *keys[at:]),
              (*ids[:at], b"\1" * 20, *ids[at:]), (*modes[:at], 0o100644, *modes[at:]))
    return Records(decoded={**scan.records, b"": record})


def test_a_cached_file_that_is_gone_is_left_out_and_the_listing_read_again(
        repo: Path) -> None:
    first = walk(repo, Records())
    assert first.records[b""][0] is not None  # the root's stat data is trusted
    assert first.stats.listed == 2  # the root and sub/
    ghost = with_ghost(first, b"gone.txt", b"f", (1, 2, 3, 4, 0o100644))
    second = walk(repo, ghost)
    assert second.tree == first.tree == bytes.fromhex(git_tree(repo))
    assert b"gone.txt" not in second.files()
    assert second.changed and second.records[b""][0] is None
    assert second.stats.skipped == []
    third = walk(repo, Records(decoded=second.records))
    assert third.stats.listed == 1 and third.tree == first.tree


def test_a_cached_directory_that_is_gone_is_left_out_and_the_listing_read_again(
        repo: Path) -> None:
    first = walk(repo, Records())
    ghost = with_ghost(first, b"gone", b"d", None)
    second = walk(repo, ghost)
    assert second.tree == first.tree
    assert not any(path.startswith(b"gone") for path in second.files())
    assert second.changed and second.records[b""][0] is None
    assert second.stats.skipped == [] and b"gone/" not in second.records


def test_a_work_tree_that_cannot_be_read_is_an_error(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    with pytest.raises(OSError, match=f"cannot read the work tree at {gone}/"):
        walk(gone, Records())


def test_an_index_path_longer_than_its_length_field_is_read_whole(repo: Path) -> None:
    long = "/".join(["d" * 200] * 24) + "/f.txt"  # 4829 bytes: the field says 0xFFF
    blob = git(repo, "hash-object", "-w", "a.txt").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{long}")
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},zz.txt")
    for version in ("2", "3"):
        git(repo, "update-index", "--index-version", version)
        index = read_user_index(str(repo / ".git/index"))
        assert index.paths == [long.encode(), b"zz.txt"]
        assert index.entries[b"zz.txt"][5].hex() == blob


# ---- git's racy rule at its boundary, for files and directories ---------------------

def file_key(scan: Scan) -> tuple | None:
    record = scan.records[b"sub/"]
    return record[5][record[3].index(b"b.txt")]


@pytest.mark.parametrize("which", ["file", "dir"])
def test_a_change_time_equal_to_the_walk_clock_is_racy(repo: Path, which: str) -> None:
    """The file's or directory's modification time is old; only its change
    time reaches the clock."""
    target = repo / ("sub/b.txt" if which == "file" else "sub")
    ctime = target.stat().st_ctime_ns
    at, after = walk(repo, Records(), ctime), walk(repo, Records(), ctime + 1)
    if which == "file":
        assert file_key(at) is None and file_key(after) is not None
    else:
        assert (at.records[b"sub/"][0], after.records[b"sub/"][0]) == \
            (None, (target.stat().st_mtime_ns, ctime, target.stat().st_ino))


@pytest.mark.parametrize("which", ["file", "dir"])
def test_a_modification_time_equal_to_the_walk_clock_is_racy(repo: Path, which: str) -> None:
    """The modification time set ahead of the change time, to exactly the clock."""
    target = repo / ("sub/b.txt" if which == "file" else "sub")
    clock = time.time_ns() + 60 * 10**9
    os.utime(target, ns=(clock, clock))
    assert target.stat().st_ctime_ns < clock
    at, after = walk(repo, Records(), clock), walk(repo, Records(), clock + 1)
    if which == "file":
        assert file_key(at) is None and file_key(after) is not None
    else:
        assert at.records[b"sub/"][0] is None and after.records[b"sub/"][0] is not None


# ---- what the cache must not hide ---------------------------------------------------

def test_changed_ignore_rules_reclassify_an_unchanged_directory(repo: Path) -> None:
    write(repo, ".gitignore", "*.o\n")
    write(repo, "sub/x.o", "object\n")
    age_tree(repo)
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "one")
        (repo / ".gitignore").write_text("*.tmp\n")  # same listings, other rules
        settle(repo)
        second = store.snapshot("T2", "coder", "two")
    assert first.tree == git_tree_of(repo, "*.o\n") and second.tree == git_tree(repo)
    assert "sub/x.o" in git(repo, "ls-tree", "-r", "--name-only", second.ref).split()


def git_tree_of(repo: Path, rules: str) -> str:
    """git's tree of the work tree as it was under ``rules``."""
    now = (repo / ".gitignore").read_text()
    (repo / ".gitignore").write_text(rules)
    try:
        return git_tree(repo)
    finally:
        (repo / ".gitignore").write_text(now)


def test_a_symlinked_ignore_file_is_not_followed(repo: Path, tmp_path: Path) -> None:
    rules = write(tmp_path, "rules", "*.txt\n")
    (repo / ".gitignore").symlink_to(rules)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "one")
    assert checkpoint.tree == git_tree(repo)
    assert "a.txt" in git(repo, "ls-tree", "-r", "--name-only", checkpoint.ref).split()


def test_an_ignored_directory_keeps_only_its_tracked_files(repo: Path) -> None:
    write(repo, ".gitignore", "build/\n")
    write(repo, "build/tracked.txt", "tracked\n")
    git(repo, "add", "-f", "build/tracked.txt")
    write(repo, "build/untracked.txt", "ignored\n")
    write(repo, "build/deeper/untracked.txt", "ignored\n")
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "one")
    assert checkpoint.tree == git_tree(repo)
    names = git(repo, "ls-tree", "-r", "--name-only", checkpoint.ref).split()
    assert [n for n in names if n.startswith("build/")] == ["build/tracked.txt"]


def test_only_the_owners_execute_bit_makes_a_file_executable(repo: Path) -> None:
    write(repo, "others.sh", "#!/bin/sh\n", 0o645)
    write(repo, "owner.sh", "#!/bin/sh\n", 0o744)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "one")
    assert checkpoint.tree == git_tree(repo)
    modes = git(repo, "ls-tree", checkpoint.ref, "others.sh", "owner.sh").split()
    assert (modes[0], modes[4]) == ("100644", "100755")


def test_an_empty_work_tree_is_the_empty_tree(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "empty")
    with CheckpointStore(root) as store:
        checkpoint = store.snapshot("T1", "coder", "nothing")
    assert checkpoint.tree == git_tree(root) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert git(root, "cat-file", "-t", checkpoint.tree).strip() == "tree"


def loose_objects(root: Path) -> set[str]:
    return {p.parent.name + p.name for p in (root / ".git/objects").glob("??/*")}


def test_planning_a_rollback_stores_no_object_for_a_new_link(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one")
        (repo / "link").symlink_to("somewhere/new")
        before = loose_objects(repo)
        plan = store.plan_rollback("T1")
    assert plan.delete == ["link"] and loose_objects(repo) == before


def test_a_snapshot_of_an_unchanged_tree_leaves_the_private_index_alone(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one")
        cache = repo / ".git/choragos/index"
        written = cache.stat().st_ino
        store.snapshot("T2", "coder", "two")
        assert (store.last_stats.listed, store.last_stats.hashed) == (0, 0)
    assert cache.stat().st_ino == written


def test_a_nested_repository_listed_again_is_remembered(repo: Path) -> None:
    nested = committed_nested(repo)
    age_tree(repo)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one")
        write(nested, "untracked-inside.txt", "not ours\n")  # only nested/ changes
        settle(repo)
        store.snapshot("T2", "coder", "two")
        assert store.last_stats.listed == 1
        store.snapshot("T3", "coder", "three")
        assert store.last_stats.listed == 0


@pytest.mark.skipif(treewatch._libc() is None, reason="needs Linux inotify")
def test_a_reused_walk_reports_what_the_walk_it_reuses_found(repo: Path) -> None:
    with CheckpointStore(repo, watch=True) as store:
        first = store.snapshot("T1", "coder", "one")
        walked = store.last_stats
        second = store.snapshot("T2", "coder", "two")
        reused = store.last_stats
    assert (walked.walked, reused.walked) == (True, False)
    assert (reused.files, reused.dirs) == (walked.files, walked.dirs) == (2, 2)
    assert second.tree == first.tree
