"""What a checkpoint records and how it is read back: the commit message
and its trailers, names made safe, the private index's file, and trees
git would write for names that sort unlike their paths."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from dulwich.objects import Commit
from dulwich.repo import Repo

from choragos.gitstore.checkpoints import (
    REF_PREFIX,
    CheckpointStore,
    NotARepository,
    clean_text,
    worktree_name,
)
from choragos.gitstore.walk import load_cache
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    git,
    git_tree,
    init_repo,
    isolated_git,
    write,
)
from tests.integration.test_rollback_hazards import shared_clone


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, "a.txt", "a\n")
    return root


@pytest.fixture
def far_from_utc(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_message_has_a_subject_a_blank_line_and_utc_trailers(
        repo: Path, far_from_utc: None) -> None:
    with CheckpointStore(repo) as store:
        named = store.snapshot("T1", "coder", "see: this", now=1_700_000_000.5)
        anonymous = store.snapshot("T2", "", "x", now=1_700_000_000.0)
        assert store.resolve("T1").created == 1_700_000_000.5
        assert store.resolve("T1").label == "see: this"
    message = git(repo, "log", "-1", "--format=%B", named.ref).splitlines()
    assert message[:3] == ["checkpoint T1 for coder", "", "Choragos-Task: T1"]
    assert "Choragos-Time: 2023-11-14T22:13:20.500000Z" in message
    assert git(repo, "log", "-1", "--format=%s", anonymous.ref).strip() == "checkpoint T2"


def test_a_long_role_is_cut_to_64(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "r" * 100, "x")
    assert checkpoint.role == "r" * 63 + "…"


def test_trailers_not_the_ref_name_say_task_and_time(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        made = store.snapshot("T1", "coder", "x", now=1_700_000_000.25)
    git(repo, "update-ref", REF_PREFIX + "5-other", made.commit)
    with CheckpointStore(repo) as store:
        found = store.resolve(REF_PREFIX + "5-other")
    assert (found.task_id, found.created) == ("T1", 1_700_000_000.25)


def test_a_foreign_commit_with_bad_utf8_and_a_malformed_ref_are_listed(repo: Path) -> None:
    commit = Commit()  # git commit-tree would re-encode the message
    commit.tree = git_tree(repo).encode()
    commit.author = commit.committer = b"t <t@example.invalid>"
    commit.author_time = commit.commit_time = 1_700_000_000
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = (b"x\n\nChoragos-Task: T7\nChoragos-Role: r\xff\n"
                      b"Choragos-Label: bad \xfe byte\n")
    with Repo(str(repo)) as raw:
        raw.object_store.add_object(commit)
    git(repo, "update-ref", REF_PREFIX + "7-T7", commit.id.decode())
    write(repo, f".git/{REF_PREFIX}8-JUNK", "z" * 40 + "\n")
    with CheckpointStore(repo) as store:
        found = {c.name: c for c in store.list()}
    assert (found["7-T7"].role, found["7-T7"].label) == ("r\ufffd", "bad \ufffd byte")
    assert (found["8-JUNK"].task_id, found["8-JUNK"].tree) == ("JUNK", "")


def test_what_is_no_repository_is_told_so(tmp_path: Path) -> None:
    file = write(tmp_path, "file.txt", "x\n")
    with pytest.raises(NotARepository) as not_dir:
        CheckpointStore(file)
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotARepository) as not_repo:
        CheckpointStore(tmp_path / "plain")
    assert str(not_dir.value) == f"{file} is not a directory."
    assert str(not_repo.value) == (
        f"{tmp_path / 'plain'} is not inside a git repository, so there are no checkpoints "
        "(run `git init` to have them).")


@pytest.mark.parametrize(("control", "name"), [
    ("wt/.-alice.lock", "alice"), ("wt/a b", "a-b"), ("wt/...", "worktree"),
    ("wt/-.x", "x"),
])
def test_a_worktree_is_named_as_one_safe_ref_component(
        tmp_path: Path, control: str, name: str) -> None:
    (tmp_path / control).mkdir(parents=True, exist_ok=True)
    assert worktree_name(tmp_path / control, tmp_path) == name
    assert worktree_name(tmp_path, tmp_path) == ""


def test_clean_text_cuts_only_what_is_longer_than_its_limit() -> None:
    assert clean_text("x" * 200) == "x" * 200
    assert clean_text("x" * 201) == "x" * 199 + "…"


def test_core_ignorecase_makes_ignore_rules_ignore_case(repo: Path) -> None:
    write(repo, ".gitignore", "*.log\n")
    write(repo, "LOUD.LOG", "x\n")
    with CheckpointStore(repo) as store:
        default = store.snapshot("T1", "coder", "x")
    git(repo, "config", "core.ignorecase", "true")
    with CheckpointStore(repo) as store:
        ignoring = store.snapshot("T2", "coder", "x")
    assert default.tree != ignoring.tree and ignoring.tree == git_tree(repo)
    assert "LOUD.LOG" not in git(repo, "ls-tree", "--name-only", ignoring.ref).split()


def test_without_exclude_files_nothing_is_excluded(repo: Path) -> None:
    (repo / ".git/info/exclude").unlink()
    write(repo, "XXXX", "x\n")
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "x")
    assert checkpoint.tree == git_tree(repo)


def test_a_private_index_damaged_inside_is_not_trusted(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "x")
    path = repo / ".git/choragos/index"
    data = path.read_bytes()
    commit = load_cache(str(path)).commit
    path.write_bytes(data.replace(commit, commit[::-1]))  # still parses, checksum wrong
    assert load_cache(str(path)).commit == b""


def test_the_private_index_is_private_and_never_written_through_a_link(
        repo: Path, tmp_path: Path) -> None:
    outside = write(tmp_path, "outside", "theirs\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "x")
        path = repo / ".git/choragos/index"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        os.symlink(outside, f"{path}.tmp{os.getpid()}")
        write(repo, "b.txt", "b\n")
        # The index is not written through the link; the checkpoint made
        # before that write stands, and the old index serves the next walk.
        second = store.snapshot("T2", "coder", "x")
    assert outside.read_text() == "theirs\n"
    assert second.tree == git_tree(repo)
    assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_renamed_file_is_in_the_next_checkpoint_under_its_new_name(repo: Path) -> None:
    write(repo, "sub/b.txt", "b\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "x")
        (repo / "sub/b.txt").rename(repo / "sub/c.txt")
        renamed = store.snapshot("T2", "coder", "x")
    assert renamed.tree == git_tree(repo)


def test_trees_sort_directories_as_git_does(repo: Path) -> None:
    for rel in ("a/x", "a.txt", "aW", "b", "b-c/x"):
        write(repo, rel, "x\n")
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "x")
    assert checkpoint.tree == git_tree(repo)
    git(repo, "fsck", "--strict", "--no-dangling")


def test_content_kept_in_a_shared_store_is_not_stored_again(tmp_path: Path) -> None:
    upstream, _ = shared_clone(tmp_path)
    blob = git(upstream, "rev-parse", "HEAD:a.txt").strip()
    with CheckpointStore(tmp_path / "clone") as store:
        store.snapshot("T1", "coder", "x")
    assert not (tmp_path / "clone/.git/objects" / blob[:2] / blob[2:]).exists()
