"""Checkpoint and rollback edges: pruning, planning without writing, what is
in the way, permissions, symlinks, the words of each refusal, and what git's
own index lends (ids seeded from it, gitlinks of submodules not checked out,
index v4's compressed paths)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from choragos.gitstore.checkpoints import REF_PREFIX, CheckpointError, CheckpointStore, _reason
from choragos.gitstore.walk import read_user_index
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    OLD,
    add_submodule,
    age_tree,
    git,
    git_tree,
    isolated_git,
    ls_tree,
    settle,
    write,
)
from tests.integration.test_checkpoints_git import file_then_directory


def has_object(repo: Path, oid: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=repo).returncode == 0


def test_prune_refuses_a_negative_count_and_drops_reflogs(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        old = store.snapshot("T1", "coder", "old", now=1000.0)
        store.snapshot("T2", "coder", "new", now=2000.0)
        with pytest.raises(CheckpointError) as refused:
            store.prune(-1)
        assert str(refused.value) == "keep must be 0 or more"
        reflog = repo / ".git" / "logs" / old.ref
        reflog.parent.mkdir(parents=True, exist_ok=True)
        reflog.write_text("a reflog git keeps with core.logAllRefUpdates=always\n")
        assert store.prune(1) == [old.ref]
        assert not reflog.exists()
        assert [c.task_id for c in store.list()] == ["T2"]
    assert git(repo, "for-each-ref", REF_PREFIX).count("\n") == 1


def test_a_prune_reads_only_the_checkpoints_it_has_not_described(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session prunes every few snapshots: the kept checkpoints' commits are
    read once, not at every prune; a ref moved to another commit is read anew."""
    read: list[str] = []
    original = CheckpointStore._read_checkpoint

    def counting(self, name, oid):
        read.append(name)
        return original(self, name, oid)

    monkeypatch.setattr(CheckpointStore, "_read_checkpoint", counting)
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        for n in range(12):
            store.snapshot(f"T{n}", "coder", "", now=1000.0 + n)
        assert len(read) == 12  # each described as it was taken
        store.prune(10)
        assert len(read) == 12  # and not read again to be pruned
        store.snapshot("T12", "coder", "", now=2000.0)
        read.clear()
        removed = store.prune(10)
        assert read == [] and len(removed) == 1
        kept = store.list()
        moved = kept[-1]
        git(repo, "update-ref", moved.ref, kept[0].commit)
        read.clear()
        assert {c.ref: c.commit for c in store.list()}[moved.ref] == kept[0].commit
        assert read == [moved.name]
    with CheckpointStore(repo) as fresh:  # a new store reads them all, the same
        assert [c.ref for c in fresh.list()] == [c.ref for c in store.list()]


def hashed_after_the_cache_checkpoint_goes(repo: Path, change) -> int:
    """Four files, a checkpoint, ``change``, a second checkpoint (the one the
    cache then describes) deleted: what the next snapshot has to hash."""
    for i in range(4):
        write(repo, f"f{i}.txt", f"{i}\n")
    age_tree(repo)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one", now=100.0)
        change()
        settle(repo)
        second = store.snapshot("T2", "coder", "two", now=200.0)
        git(repo, "update-ref", "-d", second.ref)
        store.snapshot("T3", "coder", "three", now=300.0)
        return store.last_stats.hashed


def test_the_cache_of_a_gone_checkpoint_is_adopted_by_one_with_its_tree(repo: Path) -> None:
    def touch() -> None:  # new stat data, same content: the tree stays T1's
        os.utime(repo / "f0.txt", (OLD + 5, OLD + 5))
    assert hashed_after_the_cache_checkpoint_goes(repo, touch) == 0


def test_the_cache_of_a_gone_checkpoint_is_dropped_when_no_tree_matches(repo: Path) -> None:
    def edit() -> None:
        write(repo, "f0.txt", "changed\n")
    assert hashed_after_the_cache_checkpoint_goes(repo, edit) == 4  # nothing protects them


def test_planning_a_rollback_writes_nothing(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "new.txt", "only planned, never stored 6b1f\n")
        refs = git(repo, "for-each-ref")
        plan = store.plan_rollback("T1")
        assert (plan.restore, plan.delete, plan.conflicts) == ([], ["new.txt"], [])
        assert not plan.empty and not plan.head_moved
    blob = git(repo, "hash-object", "new.txt").strip()
    assert not has_object(repo, blob)
    assert git(repo, "for-each-ref") == refs
    assert (repo / "new.txt").exists()


def test_a_rollback_that_changes_nothing_saves_nothing(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        result = store.rollback("T1")
        assert result.saved is None and (result.restored, result.deleted) == ([], [])
        assert [c.task_id for c in store.list()] == ["T1"]


@pytest.mark.parametrize("count, shown", [
    (5, "d0, d1, d2, d3, d4"),
    (6, "d0, d1, d2, d3, d4 and 1 more"),
    (7, "d0, d1, d2, d3, d4 and 2 more"),
])
def test_many_things_in_the_way_are_named_five_at_a_time(repo: Path, count: int,
                                                         shown: str) -> None:
    write(repo, ".gitignore", "*.log\n")
    names = [f"d{i}" for i in range(count)]
    for name in names:
        write(repo, name, "file\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        for name in names:
            (repo / name).unlink()
            write(repo, f"{name}/keep.log", "ignored\n")
        with pytest.raises(CheckpointError) as refused:
            store.rollback("T1")
    assert str(refused.value) == (
        f"rollback would overwrite ignored, unreadable or untracked content in the way: "
        f"{shown}; move it aside (or make it readable) and try again (nothing was changed)")


def test_a_directory_holding_only_what_rollback_deletes_is_not_in_the_way(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        file_then_directory(repo, store, "deep/made.txt", ignore="")
        plan = store.plan_rollback("T1")
        assert plan.conflicts == [] and plan.delete == ["thing/deep/made.txt"]
        store.rollback("T1")
    assert (repo / "thing").read_text() == "a file\n"


def test_a_directory_with_ignored_content_deep_down_is_in_the_way(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        file_then_directory(repo, store, "deep/down/keep.log", "made.txt")
        assert store.plan_rollback("T1").conflicts == ["thing"]


@pytest.mark.parametrize(("now", "executable", "expected"), [
    (0o640, True, 0o750), (0o600, True, 0o700), (0o755, False, 0o644), (0o711, False, 0o600)])
def test_rollback_sets_the_executable_bit_git_records_keeping_the_rest(
        repo: Path, now: int, executable: bool, expected: int) -> None:
    write(repo, "tool", "#!/bin/sh\n", 0o755 if executable else 0o644)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "tool", "changed\n", now)
        store.rollback("T1")
    assert stat.S_IMODE((repo / "tool").stat().st_mode) == expected


def test_a_symlink_replaced_by_a_file_comes_back_as_the_same_link(repo: Path) -> None:
    write(repo, "target.txt", "t\n")
    os.symlink("target.txt", repo / "link")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        (repo / "link").unlink()
        write(repo, "link", "now a file\n")
        assert store.rollback("T1").restored == ["link"]
    assert os.readlink(repo / "link") == "target.txt"


def test_a_file_turned_into_empty_directories_comes_back(repo: Path) -> None:
    write(repo, "x", "file\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        (repo / "x").unlink()
        (repo / "x" / "a" / "b").mkdir(parents=True)
        assert store.rollback("T1").restored == ["x"]
    assert (repo / "x").read_text() == "file\n"


def test_a_checkpoint_missing_its_content_is_refused_before_anything_changes(
        repo: Path) -> None:
    write(repo, "a.txt", "precious 1c9e\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "changed\n")
        oid = subprocess.run(["git", "rev-parse", f"{store.list()[0].ref}:a.txt"], cwd=repo,
                             capture_output=True, text=True, check=True).stdout.strip()
        loose = repo / ".git" / "objects" / oid[:2] / oid[2:]
        loose.chmod(0o600)
        loose.unlink()  # gone: a damaged repository
        with pytest.raises(CheckpointError) as refused:
            store.rollback("T1")
        assert str(refused.value) == ("the checkpoint is damaged: the content of a.txt is "
                                      "missing from the repository; nothing was changed")
        assert [c.task_id for c in store.list()] == ["T1"]
    assert (repo / "a.txt").read_text() == "changed\n"


def test_failure_reasons_name_the_file() -> None:
    assert _reason(FileNotFoundError(2, "No such file or directory", "/w/x")) == (
        "No such file or directory (/w/x)")
    assert _reason(PermissionError(13, "Permission denied")) == "Permission denied"
    assert _reason(ValueError("bad tree")) == "bad tree"
    assert _reason(KeyError()) == "KeyError"


def test_a_checkpoint_as_json_has_every_field(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "label", now=1234.0)
    data = checkpoint.to_json()
    assert data == {"ref": checkpoint.ref, "task_id": "T1", "role": "coder", "label": "label",
                    "created": 1234.0, "head": "unborn", "commit": checkpoint.commit,
                    "tree": checkpoint.tree, "worktree": ""}


# ---- what git's own index lends: seeded ids, gitlinks, v4 paths ----------------------

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
    add_submodule(repo, tmp_path / "upstream")
    head = git(repo, "rev-parse", "HEAD:sub").strip()
    git(repo, "submodule", "deinit", "-q", "-f", "sub")  # an empty directory is left
    assert (repo / "sub").is_dir() and not any((repo / "sub").iterdir())
    settle(repo)
    with CheckpointStore(repo) as store:
        _assert_gitlink(repo, store.snapshot("T1", "coder", "deinit"), "sub", head)


def _assert_gitlink(repo: Path, checkpoint, path: str, commit: str) -> None:
    """``checkpoint`` holds ``path`` as a gitlink to ``commit``, as git would."""
    assert ls_tree(repo, checkpoint.ref)[path] == "160000"
    assert git(repo, "rev-parse", f"{checkpoint.ref}:{path}").strip() == commit
    assert checkpoint.tree == git_tree(repo)


@pytest.mark.parametrize("inside", ["nothing", "files"])
def test_a_gitlink_with_no_gitmodules_is_kept_for_any_directory_at_its_path(
        repo: Path, inside: str) -> None:
    """An embedded repository recorded without a .gitmodules and not cloned: git
    keeps its gitlink whatever the directory holds, and never its files."""
    write(repo, "a.txt", "a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},emb")
    git(repo, "commit", "-qm", "an embedded repository")
    (repo / "emb").mkdir()
    if inside == "files":
        write(repo, "emb/stray.txt", "not in any repository\n")
    settle(repo)
    with CheckpointStore(repo) as store:
        _assert_gitlink(repo, store.snapshot("T1", "coder", "gitlink"), "emb", head)
        (repo / "emb" / "stray.txt").unlink(missing_ok=True)
        (repo / "emb").rmdir()  # the path gone: git drops the gitlink, and so do we
        settle(repo)
        gone = store.snapshot("T2", "coder", "gitlink gone")
    assert "emb" not in ls_tree(repo, gone.ref)
    assert gone.tree == git_tree(repo)


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


@pytest.mark.parametrize("name", [b"..", b".", b"a/b", b".git", b".Git", b""])
def test_a_checkpoint_naming_a_path_outside_the_tree_is_refused(repo: Path,
                                                                name: bytes) -> None:
    """A crafted checkpoint (anyone who can write refs can make one) must
    never make rollback write outside the work tree or into .git."""
    write(repo, "a.txt", "mine\n")
    with CheckpointStore(repo) as store:
        good = store.snapshot("T1", "coder", "genuine")
    with Repo(str(repo)) as raw:
        blob = Blob.from_string(b"written outside\n")
        tree = Tree()
        tree.add(name, 0o100644, blob.id)
        commit = Commit()
        commit.tree, commit.parents = tree.id, []
        commit.author = commit.committer = b"t <t@example.invalid>"
        commit.commit_time = commit.author_time = 2000
        commit.commit_timezone = commit.author_timezone = 0
        commit.message = raw[good.commit.encode()].message.replace(b"T1", b"T2")
        for obj in (blob, tree, commit):
            raw.object_store.add_object(obj)
        raw.refs[f"{REF_PREFIX}2000-T2".encode()] = commit.id
    with CheckpointStore(repo) as store, pytest.raises(CheckpointError) as refused:
        store.rollback("T2")
    assert str(refused.value) == f"the checkpoint holds an unsafe path name {name!r}"
    assert (repo / "a.txt").read_text() == "mine\n"
    assert not (repo.parent / "b").exists() and not (repo / ".git" / "b").exists()
