"""How a rollback writes: never through a directory that something swapped
for a symlink to outside the work tree while it ran (an agent still at
work, say), and a big file in pieces, checked, never held whole.  The swap
is made at a fixed point of the rollback (after it checked the way, before
it wrote), so the race is the same on every run."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from dulwich.object_store import DiskObjectStore

from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    git,
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
    git(repo, "repack", "-a", "-d", "-q")  # packed: the rollback reads it through dulwich
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


ROLLBACK_PEAK = """
import resource, sys
from choragos.gitstore.checkpoints import CheckpointStore
with CheckpointStore(sys.argv[1]) as store:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    store.rollback("T1")
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_a_big_file_is_restored_in_pieces_not_held_whole(repo: Path) -> None:
    size = 96 << 20
    data = os.urandom(1 << 20) * 96  # compresses poorly within a piece
    write(repo, "big.bin", data)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
    with open(repo / "big.bin", "r+b") as damaged:
        damaged.write(b"damage")
    # In a fresh process, so its peak memory is the rollback's own.
    grew_kb = int(subprocess.run([sys.executable, "-c", ROLLBACK_PEAK, str(repo)],
                                 capture_output=True, text=True, check=True).stdout)
    assert (repo / "big.bin").read_bytes() == data
    # It held the whole file three times over (288 MB); in pieces, a few MB.
    assert grew_kb * 1024 < size // 4, f"the rollback grew by {grew_kb} kB"


def test_a_damaged_loose_object_is_never_put_in_place(repo: Path) -> None:
    write(repo, "big.bin", os.urandom(2 << 20))  # over 1 MB: stored loose
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "before")
    oid = git(repo, "rev-parse", f"{checkpoint.ref}:big.bin").strip()
    loose = repo / ".git" / "objects" / oid[:2] / oid[2:]
    other = zlib.compress(b"blob 5\0wrong", 1)  # a blob, but not the one it is named for
    loose.chmod(0o644)
    loose.write_bytes(other)
    write(repo, "big.bin", "the task's\n")
    with CheckpointStore(repo) as store, pytest.raises(CheckpointError, match="is damaged"):
        store.rollback("T1")
    assert (repo / "big.bin").read_text() == "the task's\n"


def test_a_work_tree_reached_through_a_symlink_rolls_back(repo: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    os.symlink(repo, link)  # the user's own choice of path, followed as git follows it
    write(repo, "d/a.txt", "before\n")
    with CheckpointStore(link) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "d/a.txt", "after\n")
        write(repo, "d/new.txt", "new\n")
        result = store.rollback("T1")
    assert (result.restored, result.deleted) == (["d/a.txt"], ["d/new.txt"])
    assert (repo / "d/a.txt").read_text() == "before\n"
