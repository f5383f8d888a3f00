"""What a rollback reports and the files it leaves: the checkpoint it went
back to, the undo point it saved, HEAD then and now, the permissions git
records, and how many things in the way it names."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from choragos.checkpoints import CheckpointError, CheckpointStore
from tests.integration.test_checkpoints_git import (  # noqa: F401 - the fixture is autouse
    git,
    init_repo,
    isolated_git,
    settle,
    write,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_rollback_reports_where_it_went_and_what_it_saved(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    then = git(repo, "rev-parse", "HEAD").strip()
    with CheckpointStore(repo) as store:
        target = store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "changed\n")
        write(repo, "new/deeper/b.txt", "new\n")
        git(repo, "commit", "-q", "-am", "moved on")
        settle(repo)
        result = store.rollback("T1")
        undo = store.resolve("pre-rollback-T1")
    now = git(repo, "rev-parse", "HEAD").strip()
    assert result.checkpoint == target
    assert result.saved == undo and result.saved.task_id == "pre-rollback-T1"
    assert (result.restored, result.deleted) == (["a.txt"], ["new/deeper/b.txt"])
    assert result.removed_dirs == ["new/deeper", "new"]
    assert (result.head_then, result.head_now) == (then, now) and result.head_moved
    assert (repo / "a.txt").read_text() == "a\n" and not (repo / "new").exists()


def test_a_rollback_with_nothing_to_do_saves_nothing(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        target = store.snapshot("T1", "coder", "before")
        result = store.rollback("T1")
        names = [c.task_id for c in store.list()]
    assert result.checkpoint == target and result.saved is None
    assert (result.restored, result.deleted, result.removed_dirs) == ([], [], [])
    assert (result.head_then, result.head_now) == ("unborn", "unborn")
    assert names == ["T1"]


def test_restored_files_get_the_modes_git_records(repo: Path, umask_022: None) -> None:
    write(repo, "plain.txt", "plain\n", mode=0o644)
    write(repo, "tool.sh", "#!/bin/sh\n", mode=0o755)
    write(repo, "private.sh", "#!/bin/sh\n", mode=0o700)
    write(repo, "was_exec.txt", "text\n", mode=0o644)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        (repo / "plain.txt").unlink()  # gone: made anew
        (repo / "tool.sh").unlink()
        write(repo, "private.sh", "#!/bin/sh\nchanged\n", mode=0o600)  # exec bit lost
        write(repo, "was_exec.txt", "changed\n", mode=0o755)  # exec bit gained
        settle(repo)
        store.rollback("T1")
    assert (mode(repo / "plain.txt"), mode(repo / "tool.sh")) == (0o644, 0o755)
    # An existing file keeps its own permissions; only the executable bits
    # follow git, for whoever may read it.
    assert (mode(repo / "private.sh"), mode(repo / "was_exec.txt")) == (0o700, 0o644)


@pytest.mark.parametrize("count, shown", [
    (5, "d0, d1, d2, d3, d4"),
    (6, "d0, d1, d2, d3, d4 and 1 more"),
])
def test_things_in_the_way_are_named_up_to_five(repo: Path, count: int, shown: str) -> None:
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
        f"rollback would overwrite ignored or untracked content in the way: {shown}; "
        "move it aside and try again (nothing was changed)")
