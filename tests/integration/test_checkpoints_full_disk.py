"""Checkpoints and rollback on a full disk (a real small tmpfs): a blob that
cannot be written fails the checkpoint instead of leaving the file out of
it, a rollback that runs out of space part way says where the way back is
and leaves no temporary behind, and both work again once there is room."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    init_repo,
    isolated_git,
    ls_tree,
    write,
)
from tests.integration.smallfs import fill

BIG = 2 << 20  # random, so it does not compress: over 1 MB, written loose


def objects_written(repo: Path) -> set[str]:
    objects = repo / ".git" / "objects"
    return {str(p.relative_to(objects)) for p in objects.rglob("*") if p.is_file()}


def strays(repo: Path) -> list[str]:
    """Temporaries left anywhere in the repository (work tree or objects)."""
    return [str(p) for p in repo.rglob("*") if "choragos-" in p.name or "tmp_" in p.name]


@pytest.mark.parametrize("kind", ["one big blob", "a pack of many"])
def test_a_blob_that_cannot_be_stored_fails_the_checkpoint(small_fs: Path, kind: str) -> None:
    repo = init_repo(small_fs / "repo")
    write(repo, "README.md", "hello\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
    if kind == "one big blob":
        write(repo, "data.bin", os.urandom(BIG))
    else:  # 40 small files: a new pack, which the disk cannot hold
        for i in range(40):
            write(repo, f"many/f{i}.bin", os.urandom(64 << 10))
    before = objects_written(repo)
    filler = small_fs / "filler"
    fill(filler, leave=256 << 10)

    with CheckpointStore(repo) as store, pytest.raises(CheckpointError) as failed:
        store.snapshot("T2", "coder", "on a full disk")
    # Left out, the file would be missing from T2, and a rollback to T2
    # would delete it.
    assert str(failed.value) == ("checkpoint for T2 failed: cannot write to the repository's "
                                 "objects: No space left on device")
    with CheckpointStore(repo) as store:
        assert [c.task_id for c in store.list()] == ["T1"]
    assert objects_written(repo) == before and not strays(repo)

    filler.unlink()
    with CheckpointStore(repo) as store:
        again = store.snapshot("T2", "coder", "with room again")
    names = set(ls_tree(repo, again.ref))
    assert names >= ({"data.bin"} if kind == "one big blob" else
                     {f"many/f{i}.bin" for i in range(40)})


def test_a_rollback_out_of_space_part_way_names_its_undo_point(small_fs: Path) -> None:
    repo = init_repo(small_fs / "repo")
    data = os.urandom(BIG)
    write(repo, "data.bin", data)
    write(repo, "notes.txt", "before\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
    (repo / "data.bin").unlink()  # the worker's damage; its object stays
    write(repo, "notes.txt", "after\n")
    filler = small_fs / "filler"
    fill(filler, leave=256 << 10)  # room for the undo point, not for data.bin

    with CheckpointStore(repo) as store, pytest.raises(CheckpointError) as failed:
        store.rollback("T1")
    assert str(failed.value).startswith("rollback failed part way: No space left on device")
    assert str(failed.value).endswith(
        "the files as they were before it are saved as pre-rollback-T1: "
        "`choragos rollback pre-rollback-T1` puts them back")
    assert not strays(repo), "a half-written temporary was left in the work tree"

    filler.unlink()
    with CheckpointStore(repo) as store:
        store.rollback("T1")
        assert (repo / "data.bin").read_bytes() == data
        assert (repo / "notes.txt").read_text() == "before\n"
        store.rollback("pre-rollback-T1")  # the undo point holds the state before
    assert (repo / "notes.txt").read_text() == "after\n"
    assert not (repo / "data.bin").exists()


def test_a_private_index_the_disk_cannot_take_costs_time_not_the_checkpoint(
        small_fs: Path) -> None:
    repo = init_repo(small_fs / "repo")
    for n in range(3000):
        write(repo, f"d{n % 30}/f{n}.txt", "same\n")  # one blob: the objects stay small
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
    index = repo / ".git" / "choragos" / "index"
    assert index.stat().st_size > 64 << 10
    for path in repo.glob("d*/f*.txt"):
        os.utime(path, (1, 1))  # every record changes; no new content
    fill(small_fs / "filler", leave=32 << 10)  # room for a commit and a ref, not the index
    kept = index.read_bytes()
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T2", "coder", "on a full disk")
        assert [c.task_id for c in store.list()] == ["T2", "T1"]
    assert len(ls_tree(repo, checkpoint.ref)) == 3000
    assert index.read_bytes() == kept, "the private index on disk was damaged"
    assert not strays(repo)
    with CheckpointStore(repo) as store:  # the old index still serves the next walk
        store.snapshot("T3", "coder", "again")


def test_a_rollback_whose_undo_point_the_disk_cannot_hold_changes_nothing(
        small_fs: Path) -> None:
    repo = init_repo(small_fs / "repo")
    write(repo, "notes.txt", "before\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
    write(repo, "notes.txt", "after\n")
    write(repo, "data.bin", os.urandom(BIG))  # the undo point must store it first
    fill(small_fs / "filler", leave=256 << 10)
    with CheckpointStore(repo) as store, pytest.raises(CheckpointError) as failed:
        store.rollback("T1")
    assert str(failed.value) == ("rollback failed: cannot write to the repository's objects: "
                                 "No space left on device; nothing was changed")
    assert (repo / "notes.txt").read_text() == "after\n" and (repo / "data.bin").exists()
    assert not strays(repo)
