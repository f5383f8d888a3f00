"""A checkpoint operation that fails says which one failed and why, and a
broken ref of someone else's does not stop the store; the names of undo
points; the work tree's tree without a checkpoint."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from choragos.gitstore import checkpoints
from choragos.gitstore.checkpoints import (
    REF_PREFIX,
    CheckpointError,
    CheckpointStore,
    is_undo_point,
    undo_name,
)
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    git,
    git_tree,
    init_repo,
    isolated_git,
    write,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, "a.txt", "a\n")
    return root


def broken(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.EIO, "Input/output error")


def test_a_failing_listing_is_named(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with CheckpointStore(repo) as store:
        monkeypatch.setattr(store._repo.refs, "as_dict", broken)
        with pytest.raises(CheckpointError) as failed:
            store.list()
    assert str(failed.value) == "listing checkpoints failed: Input/output error"


def test_a_failing_prune_is_named(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one")
        monkeypatch.setattr(store._repo.refs, "remove_if_equals", broken)
        with pytest.raises(CheckpointError) as failed:
            store.prune(0)
    assert str(failed.value) == "pruning checkpoints failed: Input/output error"


@pytest.mark.parametrize(("call", "doing"), [
    (lambda store: store.plan_rollback("T1"), "planning the rollback"),
    (lambda store: store.rollback("T1"), "rollback"),  # before any change: says so
    (lambda store: store.tree_now(), "reading the work tree"),
    (lambda store: store.snapshot("T2", "coder", "two"), "checkpoint for T2"),
])
def test_a_failing_walk_is_named_for_what_it_was_for(
        repo: Path, monkeypatch: pytest.MonkeyPatch, call, doing: str) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one")
        write(repo, "a.txt", "changed\n")
        monkeypatch.setattr(checkpoints, "ObjectWriter", broken)
        with pytest.raises(CheckpointError) as failed:
            call(store)
    told = f"{doing} failed: Input/output error"
    if doing == "rollback":
        told += "; nothing was changed"
    assert str(failed.value) == told
    assert (repo / "a.txt").read_text() == "changed\n"


def test_a_checkpoint_whose_commit_is_gone_cannot_be_rolled_back_to(repo: Path) -> None:
    missing = REF_PREFIX + "100-GONE"
    write(repo, f".git/{missing}", "1" * 40 + "\n")
    with CheckpointStore(repo) as store:
        target = store.resolve("GONE")
        assert (target.commit, target.tree) == ("1" * 40, "")
        with pytest.raises(CheckpointError) as failed:
            store.plan_rollback(target)
    assert str(failed.value) == "the checkpoint's commit cannot be read"


def test_refs_to_missing_or_malformed_commits_do_not_stop_a_snapshot(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "one")
    git(repo, "update-ref", "-d", first.ref)  # the private index's checkpoint is gone
    write(repo, f".git/{REF_PREFIX}100-GONE", "1" * 40 + "\n")
    write(repo, f".git/{REF_PREFIX}101-JUNK", "z" * 40 + "\n")
    with CheckpointStore(repo) as store:
        second = store.snapshot("T2", "coder", "two")
        assert store.last_stats.hashed == 1  # no checkpoint vouches for the cache
    assert second.tree == git_tree(repo)


def test_tree_now_stores_the_tree_and_adds_no_checkpoint(repo: Path) -> None:
    write(repo, "b/c.txt", "c\n")
    with CheckpointStore(repo) as store:
        tree = store.tree_now()
        assert store.list() == []
    assert tree == git_tree(repo)
    assert git(repo, "cat-file", "-t", tree).strip() == "tree"


def test_undo_points_name_what_they_undo_without_stacking() -> None:
    assert undo_name("T3") == "pre-rollback-T3"
    assert undo_name("pre-rollback-T3") == "pre-undo-T3"
    assert undo_name("pre-undo-T3") == "pre-rollback-T3"
    assert [is_undo_point(t) for t in ("pre-rollback-T3", "pre-undo-T3", "T3", "x-pre-undo-")] \
        == [True, True, False, False]


def test_a_checkpoint_moved_by_another_process_while_pruning_stays(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with CheckpointStore(repo) as store:
        old = store.snapshot("T1", "coder", "one")
        write(repo, "a.txt", "changed\n")
        other = store.snapshot("T2", "coder", "two")
        listed = store.list

        def list_then_move() -> list:
            found = listed()
            git(repo, "update-ref", old.ref, other.commit)  # another process, meanwhile
            return found

        monkeypatch.setattr(store, "list", list_then_move)
        store.prune(0)
    assert git(repo, "for-each-ref", "--format=%(refname) %(objectname)", REF_PREFIX) \
        == f"{old.ref} {other.commit}\n"


def test_what_resolve_says_when_it_finds_nothing(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one")
        with pytest.raises(CheckpointError) as unknown:
            store.resolve("T9")
        with pytest.raises(CheckpointError) as no_ref:
            store.resolve(REF_PREFIX + "1-T9")
        monkeypatch.setattr(store._repo.refs, "as_dict", broken)
        with pytest.raises(CheckpointError) as failed:
            store.resolve("T1")
    assert str(unknown.value) == ("no checkpoint for 'T9'; "
                                  "`choragos checkpoints` lists the ones there are")
    assert str(no_ref.value) == f"no checkpoint ref named {REF_PREFIX}1-T9"
    assert str(failed.value) == "reading checkpoints failed: Input/output error"


def test_a_cache_whose_checkpoint_was_moved_elsewhere_is_not_trusted(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "one")
        write(repo, "b.txt", "b\n")
        other = git(repo, "commit-tree", git_tree(repo), "-m", "someone else's").strip()
        git(repo, "update-ref", first.ref, other)  # another process, meanwhile
        store.snapshot("T2", "coder", "two")
        assert store.last_stats.hashed == 2  # nothing vouches for the cached ids


def test_an_index_that_cannot_be_parsed_costs_only_what_it_would_tell(repo: Path) -> None:
    write(repo, ".gitignore", "*.o\n")
    write(repo, "build.o", "ignored\n")
    for i in range(70):  # enough misses to look for ids in git's index
        write(repo, f"many/f{i}.txt", f"{i}\n")
    write(repo, ".git/index", b"DIRC\0\0\0\x63\0\0\0\0")  # version 99
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "one")
        assert store.last_stats.seeded == 0
    names = git(repo, "ls-tree", "-r", "--name-only", checkpoint.ref).split()
    assert names == [".gitignore", "a.txt", *sorted(f"many/f{i}.txt" for i in range(70))]


def test_checkpoints_of_one_second_sort_by_epoch_whatever_the_task_is_called(
        repo: Path) -> None:
    with CheckpointStore(repo) as store:
        older = store.snapshot("fix-it", "coder", "one", now=999.0)
        newer = store.snapshot("fix-it", "coder", "two", now=999.0)
        assert (older.name, newer.name) == ("999-fix-it", "1000-fix-it")
        assert [c.name for c in store.list()] == ["1000-fix-it", "999-fix-it"]
        assert store.resolve("fix-it") == newer


def test_a_new_store_does_not_trust_a_cache_whose_checkpoint_is_gone(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "one")
    git(repo, "update-ref", "-d", first.ref)
    with CheckpointStore(repo) as store:
        store.snapshot("T2", "coder", "two")
        assert store.last_stats.hashed == 1


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "a..b"])
def test_dropping_a_namespace_refuses_what_names_no_worktree(repo: Path, name: str) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one")
        with pytest.raises(CheckpointError) as refused:
            store.drop_namespace(name)
        assert [c.task_id for c in store.list()] == ["T1"]
    assert str(refused.value) == f"{name!r} names no worktree"


def test_a_long_refused_namespace_is_shown_cut_short(repo: Path) -> None:
    with CheckpointStore(repo) as store, pytest.raises(CheckpointError) as refused:
        store.drop_namespace("a/" + "b" * 80)
    assert str(refused.value) == "'a/" + "b" * 57 + "…' names no worktree"


def test_failing_namespace_operations_are_named(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with CheckpointStore(repo) as store:
        monkeypatch.setattr(store._repo.refs, "as_dict", broken)
        monkeypatch.setattr(store._repo.refs, "keys", broken)
        with pytest.raises(CheckpointError) as dropping:
            store.drop_namespace("alice")
        with pytest.raises(CheckpointError) as listing:
            store.worktree_namespaces()
    assert str(dropping.value) == "removing checkpoints failed: Input/output error"
    assert str(listing.value) == "listing checkpoints failed: Input/output error"


@pytest.mark.parametrize("task", ["a..b", "T1.", "T1.lock", "-T1", "T/1", ""])
def test_a_task_id_git_could_not_take_as_a_ref_name_is_refused(repo: Path, task: str) -> None:
    with CheckpointStore(repo) as store, pytest.raises(CheckpointError) as refused:
        store.snapshot(task, "coder", "x")
    assert str(refused.value) == (f"{task!r} cannot name a checkpoint: "
                                  "use letters, digits, '.', '_' or '-'")
    assert git(repo, "for-each-ref", REF_PREFIX) == ""
