"""What a rollback must get right around the files it writes and removes:
the temporary file it writes through, the directories it empties, nested
repositories, and objects kept in another repository's store."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from choragos.gitstore import walk
from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore, _unseen
from choragos.gitstore.objects import ChangedWhileReading, ObjectWriter
from choragos.gitstore.treewrite import tmp_name
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    git,
    init_repo,
    isolated_git,
    settle,
    write,
)


def committed_nested(repo: Path, name: str = "nested") -> Path:
    """A repository inside ``repo`` with one commit: git records it as a gitlink."""
    nested = init_repo(repo / name)
    write(nested, "n.txt", "n\n")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "nested")
    return nested


def checkpoint_of(repo: Path, files: dict[str, str]) -> None:
    """``files`` written, then checkpointed as T1."""
    for path, text in files.items():
        write(repo, path, text)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")


def assert_refused(repo: Path, blocked: str) -> None:
    """The plan names ``blocked`` (alone) as in the way, and the rollback
    refuses, naming it, saving and changing nothing."""
    with CheckpointStore(repo) as store:
        assert store.plan_rollback("T1").conflicts == [blocked]
        with pytest.raises(CheckpointError, match=f"in the way: {re.escape(blocked)}; move"):
            store.rollback("T1")
        assert [c.task_id for c in store.list()] == ["T1"]


def test_the_temporary_file_sits_beside_its_target_with_a_bounded_name() -> None:
    pid = os.getpid()
    assert tmp_name(b"b.txt") == b".b.txt.choragos-%d" % pid
    long = b"n" * 200  # a name near the 255-byte limit must leave room for the suffix
    assert tmp_name(long) == b"." + b"n" * 64 + b".choragos-%d" % pid


def test_a_link_planted_at_the_temporary_name_is_not_written_through(
        repo: Path, tmp_path: Path) -> None:
    outside = write(tmp_path, "outside.txt", "theirs\n")
    write(repo, ".gitignore", ".*.choragos-*\n")
    write(repo, "a.txt", "mine\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "changed\n")
        os.symlink(outside, repo / f".a.txt.choragos-{os.getpid()}")
        with pytest.raises(CheckpointError, match="rollback failed"):
            store.rollback("T1")
    assert outside.read_text() == "theirs\n"


def test_a_stale_temporary_file_is_truncated_not_written_over(repo: Path) -> None:
    write(repo, ".gitignore", ".*.choragos-*\n")
    write(repo, "a.txt", "short\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "changed\n")
        write(repo, f".a.txt.choragos-{os.getpid()}", "a much longer leftover from a crash\n")
        store.rollback("T1")
    assert (repo / "a.txt").read_text() == "short\n"


def test_every_directory_a_rollback_empties_goes_whatever_the_order(repo: Path) -> None:
    write(repo, "a/b/f.txt", "kept\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        (repo / "a/b/f.txt").unlink()
        write(repo, "a/b/new.txt", "new\n")  # its folder is restored into: kept
        write(repo, "z/y/new.txt", "new\n")  # its folders are left empty: removed
        settle(repo)
        result = store.rollback("T1")
    assert sorted(result.removed_dirs) == ["z", "z/y"]
    assert not (repo / "z").exists() and (repo / "a/b/f.txt").read_text() == "kept\n"


def test_a_directory_holding_ignored_files_stays_and_the_others_go(repo: Path) -> None:
    write(repo, ".gitignore", "*.o\n")
    write(repo, "top.txt", "t\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "d/e/new.txt", "new\n")
        write(repo, "d/e/build.o", "ignored\n")
        write(repo, "q/new.txt", "new\n")
        settle(repo)
        result = store.rollback("T1")
    assert result.removed_dirs == ["q"]
    assert (repo / "d/e/build.o").read_text() == "ignored\n" and not (repo / "q").exists()


def test_a_nested_repository_added_since_is_reported_never_deleted(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        committed_nested(repo)
        write(repo, "a.txt", "changed\n")
        settle(repo)
        plan = store.plan_rollback("T1")
        assert (plan.restore, plan.delete, plan.submodules) == (["a.txt"], [], ["nested"])
        store.rollback("T1")
    assert (repo / "nested/n.txt").read_text() == "n\n"


def test_an_unmoved_nested_repository_is_not_reported(repo: Path) -> None:
    committed_nested(repo)
    write(repo, "a.txt", "a\n")
    settle(repo)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "changed\n")
        plan = store.plan_rollback("T1")
    assert (plan.restore, plan.delete, plan.submodules) == (["a.txt"], [], [])


def test_a_nested_repository_without_commits_is_left_out_as_git_leaves_it(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    init_repo(repo / "empty")
    write(repo, "empty/inside.txt", "not ours\n")
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "before")
    names = git(repo, "ls-tree", "-r", "--name-only", checkpoint.ref).split()
    assert names == ["a.txt"]


def shared_clone(tmp_path: Path) -> tuple[Path, Path]:
    """A one-commit repository and a clone that borrows its objects."""
    upstream = init_repo(tmp_path / "upstream")
    write(upstream, "a.txt", "from upstream\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "a")
    git(tmp_path, "clone", "-q", "--shared", str(upstream), "clone")
    assert (tmp_path / "clone/.git/objects/info/alternates").exists()
    return upstream, tmp_path / "clone"


def test_a_rollback_restores_content_kept_in_a_shared_store(tmp_path: Path) -> None:
    _, clone = shared_clone(tmp_path)
    with CheckpointStore(clone) as store:
        store.snapshot("T1", "coder", "before")
        write(clone, "a.txt", "changed\n")
        store.rollback("T1")
    assert (clone / "a.txt").read_text() == "from upstream\n"


def test_content_the_rollback_cannot_read_is_in_the_way_not_overwritten(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkpoint_of(repo, {"busy.log.txt": "before\n", "other.txt": "before\n"})
    write(repo, "busy.log.txt", "being written\n")
    write(repo, "other.txt", "after\n")
    real = ObjectWriter.put_file

    def changing(self: ObjectWriter, path: bytes, *, write: bool = True) -> bytes:
        if path.endswith(b"busy.log.txt"):  # a file written while it is read
            raise ChangedWhileReading("file grew while it was being read")
        return real(self, path, write=write)

    monkeypatch.setattr(ObjectWriter, "put_file", changing)
    # The undo point could not have held it: nothing was changed or saved.
    assert_refused(repo, "busy.log.txt")
    assert (repo / "busy.log.txt").read_text() == "being written\n"
    assert (repo / "other.txt").read_text() == "after\n"


def test_a_directory_the_rollback_cannot_list_is_in_the_way(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkpoint_of(repo, {"locked/a.txt": "before\n"})
    write(repo, "locked/a.txt", "after\n")
    write(repo, "locked/b.txt", "new\n")  # the directory changed: it is listed again
    real = walk._listing

    def refuse(absdir: bytes) -> tuple:
        if absdir.endswith(b"/locked/"):  # what a 0o300 directory does to a non-root user
            raise PermissionError(13, "Permission denied", os.fsdecode(absdir))
        return real(absdir)

    monkeypatch.setattr(walk, "_listing", refuse)
    assert_refused(repo, "locked/a.txt")
    assert (repo / "locked/a.txt").read_text() == "after\n"
    assert (repo / "locked/b.txt").exists()


def test_a_directory_made_a_nested_repository_since_is_in_the_way_not_written_into(
        repo: Path) -> None:
    checkpoint_of(repo, {"src/a.py": "before\n"})
    git(repo / "src", "init", "-q")  # the walk no longer enters src: no undo point holds it
    write(repo, "src/a.py", "work in the new repository\n")
    assert_refused(repo, "src")
    assert (repo / "src/a.py").read_text() == "work in the new repository\n"


def test_a_file_ignored_since_the_checkpoint_is_in_the_way_not_written_over(
        repo: Path) -> None:
    checkpoint_of(repo, {"build/x.txt": "before\n"})
    write(repo, ".gitignore", "build/\n")  # the undo point would leave build/ out
    write(repo, "build/x.txt", "the task's\n")
    assert_refused(repo, "build/x.txt")
    assert (repo / "build/x.txt").read_text() == "the task's\n"
    assert (repo / ".gitignore").exists()


def test_a_case_only_rename_is_not_in_the_way(tmp_path: Path) -> None:
    # On a case-insensitive disk Readme.md is README.md, which the plan
    # deletes: a second name of the same file stands in for that here.
    write(tmp_path, "README.md", "renamed\n")
    os.link(tmp_path / "README.md", tmp_path / "Readme.md")
    root = os.fsencode(tmp_path)
    assert _unseen(root, [b"Readme.md"], {}, [b"README.md"]) == []
    assert _unseen(root, [b"Readme.md"], {}, []) == [b"Readme.md"]
