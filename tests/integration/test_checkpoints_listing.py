"""What `choragos checkpoints` lists: every field read back from git by a
store that did not take the checkpoint, and checkpoint refs that another
tool or an older version wrote (no trailers, not a commit, no epoch in the
name) listed from what their name says instead of breaking the list."""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import REF_PREFIX, CheckpointError, CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    git,
    isolated_git,
    write,
)


def listed(repo: Path) -> dict[str, tuple]:
    with CheckpointStore(repo) as store:
        return {c.name: (c.task_id, c.role, c.label, c.created, c.head, c.commit, c.tree)
                for c in store.list()}


def test_a_new_store_lists_every_field_git_holds(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    head = git(repo, "rev-parse", "HEAD").strip()
    with CheckpointStore(repo) as store:
        taken = store.snapshot("T4", "reviewer", "look here", now=1_700_000_000.25)
    tree = git(repo, "rev-parse", f"{taken.ref}^{{tree}}").strip()
    assert listed(repo) == {"1700000000-T4": ("T4", "reviewer", "look here",
                                              pytest.approx(1_700_000_000.25), head,
                                              taken.commit, tree)}


def commit_tree(repo: Path, message: str) -> str:
    tree = git(repo, "write-tree").strip()
    return git(repo, "commit-tree", tree, "-m", message).strip()


def test_a_commit_without_trailers_is_listed_from_its_name(repo: Path) -> None:
    commit = commit_tree(repo, "made by hand")
    git(repo, "update-ref", f"{REF_PREFIX}1700000000-T7", commit)
    tree = git(repo, "rev-parse", f"{commit}^{{tree}}").strip()
    assert listed(repo) == {"1700000000-T7": ("T7", "", "", 1_700_000_000.0, "", commit, tree)}


def test_a_time_that_does_not_parse_falls_back_to_the_name(repo: Path) -> None:
    commit = commit_tree(repo, "checkpoint T8\n\nChoragos-Task: T8\nChoragos-Time: yesterday\n"
                               "Choragos-Role: coder")
    git(repo, "update-ref", f"{REF_PREFIX}1600000000-T8", commit)
    [(task, role, _, created, *_)] = listed(repo).values()
    assert (task, role, created) == ("T8", "coder", 1_600_000_000.0)


def test_a_ref_to_something_not_a_commit_is_listed_without_content(repo: Path) -> None:
    write(repo, "note.txt", "not a commit\n")
    blob = git(repo, "hash-object", "-w", "note.txt").strip()
    git(repo, "update-ref", f"{REF_PREFIX}1500000000-T9", blob)
    assert listed(repo) == {"1500000000-T9": ("T9", "", "", 1_500_000_000.0, "", blob, "")}


def test_a_name_without_an_epoch_is_its_own_task_and_oldest(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    commit = commit_tree(repo, "made by hand")
    git(repo, "update-ref", f"{REF_PREFIX}handmade", commit)
    git(repo, "update-ref", f"{REF_PREFIX}1700000000-T1", commit)
    with CheckpointStore(repo) as store:
        names = [(c.name, c.task_id, c.created) for c in store.list()]
        assert store.resolve("handmade").name == "handmade"
    assert names == [("1700000000-T1", "T1", 1_700_000_000.0), ("handmade", "handmade", 0.0)]


def test_a_ref_to_a_blob_does_not_stop_the_cache_being_dropped(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    write(repo, "note.txt", "not a commit\n")
    blob = git(repo, "hash-object", "-w", "note.txt").strip()
    git(repo, "update-ref", f"{REF_PREFIX}9999999999-T9", blob)  # the newest, so kept
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "first")
        assert store.prune(1) == [first.ref]
        # The cache described T1, now gone, and no commit has its tree: dropped.
        again = store.snapshot("T2", "coder", "again")
        assert store.last_stats.hashed == 2
    assert again.tree == git(repo, "rev-parse", f"{again.ref}^{{tree}}").strip()


def test_a_work_check_reads_two_refs_however_many_checkpoints_there_are(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The aftercare's store (not the one that took the checkpoints) resolves a
    task's checkpoint and reads the tree now without listing every ref: a long
    session holds one per task until the next prune."""
    with CheckpointStore(repo) as taker:
        for n in range(40):
            write(repo, "a.txt", f"{n}\n")
            last = taker.snapshot(f"T{n + 1}", "coder", "work", now=1_700_000_000 + n)
    listings: list[int] = []
    real = CheckpointStore._refs
    monkeypatch.setattr(CheckpointStore, "_refs",
                        lambda self: listings.append(1) or real(self))
    write(repo, "a.txt", "changed\n")
    with CheckpointStore(repo) as checker:
        assert checker.resolve(last.ref) == last
        assert checker.resolve(last.name) == last
        tree = checker.tree_now()
        assert tree != last.tree
        assert checker.tree_now() == tree  # and the private index still serves
    assert listings == []
    with CheckpointStore(repo) as checker:  # a task id needs the listing, once
        assert checker.resolve("T40") == last
    assert listings == [1]


def test_a_name_that_is_no_checkpoints_is_refused_without_reading_elsewhere(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "work")
        for target in ("refs/heads/main", f"{REF_PREFIX}../../heads/main", "../heads/main",
                       "T9", f"{REF_PREFIX}nope"):
            with pytest.raises(CheckpointError):
                store.resolve(target)
