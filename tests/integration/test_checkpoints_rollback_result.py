"""What a rollback reports and the files it leaves: the checkpoint it went
back to, the undo point it saved, HEAD then and now, the permissions git
records, and what it refuses as in the way."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    add_submodule,
    git,
    isolated_git,
    settle,
    write,
)


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


def test_undo_points_are_named_for_what_they_undo(repo: Path) -> None:
    write(repo, "a.txt", "first\n")
    with CheckpointStore(repo) as store:
        target = store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "second\n")
        settle(repo)
        undo = store.rollback(target).saved  # a checkpoint itself, not only its name
        assert (undo.task_id, undo.role) == ("pre-rollback-T1", "choragos")
        assert undo.label == f"before rolling back to {target.name}"
        settle(repo)
        redo = store.rollback(undo.task_id).saved
        assert redo.task_id == "pre-undo-T1"
        assert store.plan_rollback(redo).restore == ["a.txt"]
    assert (repo / "a.txt").read_text() == "second\n"


@pytest.mark.parametrize("blocker", ["a", "a/b"])
def test_an_ignored_file_where_a_directory_must_go_is_in_the_way(repo: Path,
                                                                 blocker: str) -> None:
    write(repo, ".gitignore", f"/{blocker}\n")
    write(repo, "a/b/c.txt", "tracked\n")
    git(repo, "add", "-f", "a/b/c.txt")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        for path in ("a/b/c.txt", "a/b", "a")[: 3 - blocker.count("/")]:
            target = repo / path
            target.unlink() if target.is_file() else target.rmdir()
        write(repo, blocker, "ignored, the user's own\n")
        with pytest.raises(CheckpointError, match=f"in the way: {blocker};"):
            store.rollback("T1")
    assert (repo / blocker).read_text() == "ignored, the user's own\n"


def test_a_directory_holding_an_ignored_symlink_is_in_the_way(repo: Path,
                                                              tmp_path: Path) -> None:
    write(repo, ".gitignore", "*.log\n")
    write(repo, "d", "a file\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        (repo / "d").unlink()
        (repo / "d").mkdir()
        (repo / "d" / "link.log").symlink_to(empty)  # ignored: never deleted by rollback
        with pytest.raises(CheckpointError, match="in the way: d;"):
            store.rollback("T1")
    assert (repo / "d" / "link.log").is_symlink()


def test_a_submodule_at_another_commit_keeps_it_and_gets_its_files_back(
        repo: Path, tmp_path: Path) -> None:
    add_submodule(repo, tmp_path / "upstream")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "sub/inside.txt", "moved on\n")
        git(repo / "sub", "commit", "-q", "-am", "moved on")
        settle(repo)
        plan = store.plan_rollback("T1")
    assert (plan.restore, plan.delete, plan.submodules) == (["sub/inside.txt"], [], ["sub"])
    assert plan.nested_restored == ["sub"] and "its HEAD moved" in plan.nested_notes[0]
