"""A rollback while something swaps a directory of the work tree for a
symlink to a directory outside it (an agent still at work, say): the
rollback never writes or deletes through that symlink.  The swap is made
at a fixed point of the rollback (after it checked the way, before it
wrote), so the race is the same on every run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dulwich.object_store import DiskObjectStore

from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    isolated_git,
    write,
)


def swap_for_link(folder: Path, outside: Path) -> None:
    """``folder`` moved aside and a symlink to ``outside`` put in its place."""
    folder.rename(folder.with_name(folder.name + ".moved"))
    os.symlink(outside, folder)


def test_a_directory_swapped_for_a_link_while_a_file_is_restored_is_not_written_through(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    write(repo, "d/a.txt", "mine\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
    write(repo, "d/a.txt", "changed\n")
    real = DiskObjectStore.__getitem__
    swapped = []

    def read_then_swap(self: DiskObjectStore, sha: bytes) -> object:
        found = real(self, sha)
        if not swapped and getattr(found, "type_name", b"") == b"blob":
            swapped.append(sha)  # the restore reads the content it will write
            swap_for_link(repo / "d", outside)
        return found

    monkeypatch.setattr(DiskObjectStore, "__getitem__", read_then_swap)
    with CheckpointStore(repo) as store:
        store.rollback("T1")
    assert swapped
    assert list(outside.iterdir()) == [], "the rollback wrote outside the work tree"
    # The link was in the work tree, where a directory belongs: it made way.
    assert not (repo / "d").is_symlink() and (repo / "d/a.txt").read_text() == "mine\n"


def test_a_directory_swapped_for_a_link_before_deletions_is_not_deleted_through(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    write(outside, "new.txt", "theirs\n")
    write(repo, "d/keep.txt", "mine\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
    write(repo, "d/new.txt", "made by the task\n")  # the rollback deletes it
    real = CheckpointStore._commit

    def save_then_swap(self: CheckpointStore, *args: object, **kwargs: object) -> object:
        saved = real(self, *args, **kwargs)  # the undo point, just before the changes
        swap_for_link(repo / "d", outside)
        return saved

    monkeypatch.setattr(CheckpointStore, "_commit", save_then_swap)
    with CheckpointStore(repo) as store:
        try:
            store.rollback("T1")
        except CheckpointError as exc:  # refusing is fine; deleting outside is not
            assert "part way" in str(exc)
    assert (outside / "new.txt").read_text() == "theirs\n"
