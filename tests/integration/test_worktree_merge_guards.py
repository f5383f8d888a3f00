"""What a merge back must never do to the main checkout, with real git and no
session: write over an ignored file, swap the state directory for a link,
commit a worker's tree that left its branch."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from choragos.gitstore import worktrees
from tests.conftest import wait_until
from tests.integration.harness import git_init


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git_init(root)
    (root / ".gitignore").write_text(".env\nbuild/\n")
    _git(root, "add", ".gitignore")
    _git(root, "commit", "-qm", "ignore")
    (root / ".choragos").mkdir()
    (root / ".choragos" / "journal").write_text("the session's\n")
    worktrees.ensure(root, "w")
    return root


def _commit_forced(tree: Path, *paths: str) -> str:
    _git(tree, "add", "-f", *paths)
    _git(tree, "commit", "-qm", "forced")
    return _git(tree, "rev-parse", "HEAD").strip()


def _refused(root: Path, commit: str) -> worktrees.MergeResult:
    head = _git(root, "rev-parse", "HEAD")
    result = worktrees.merge(root, "choragos/w", "Merge", commit)
    assert not result.merged
    assert _git(root, "rev-parse", "HEAD") == head  # nothing merged, nothing written
    assert "it would overwrite what is in the main checkout but not in git (" in result.why
    return result


def test_an_ignored_file_in_the_main_checkout_is_never_written_over(repo: Path) -> None:
    (repo / ".env").write_text("SECRET=the operator's\n")
    (repo / "build").mkdir()
    tree = worktrees.path_of(repo, "w")
    (tree / ".env").write_text("SECRET=the worker's\n")
    (tree / "build").mkdir()
    (tree / "build" / "out.o").write_text("built\n")
    (tree / "fine.txt").write_text("new\n")
    result = _refused(repo, _commit_forced(tree, ".env", "build/out.o", "fine.txt"))
    assert result.conflicts == (".env",)  # build/ is there, out.o is not: no loss
    assert (repo / ".env").read_text() == "SECRET=the operator's\n"
    (repo / ".env").unlink()
    assert worktrees.merge(repo, "choragos/w", "Merge").merged  # once it is moved away


def test_a_committed_state_link_never_replaces_the_state_directory(repo: Path) -> None:
    tree = worktrees.path_of(repo, "w")
    assert os.path.islink(tree / ".choragos")
    result = _refused(repo, _commit_forced(tree, ".choragos"))
    assert result.conflicts == (".choragos",)
    assert (repo / ".choragos" / "journal").read_text() == "the session's\n"
    assert not os.path.islink(repo / ".choragos")


def test_a_path_under_an_ignored_link_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "build").symlink_to(outside)  # ignored: build/
    tree = worktrees.path_of(repo, "w")
    (tree / "build").mkdir()
    (tree / "build" / "x").write_text("escapes?\n")
    assert _refused(repo, _commit_forced(tree, "build/x")).conflicts == ("build/x",)
    assert list(outside.iterdir()) == []


def test_a_worktree_switched_to_another_branch_commits_nothing(repo: Path) -> None:
    tree = worktrees.path_of(repo, "w")
    _git(tree, "switch", "-q", "-c", "elsewhere")
    (tree / "a.txt").write_text("work\n")
    with pytest.raises(worktrees.WorktreeError, match="is on elsewhere, not on choragos/w"):
        worktrees.commit_work(tree, "done", "body", "choragos/w")
    _git(tree, "switch", "-q", "--detach")
    with pytest.raises(worktrees.WorktreeError, match="on no branch"):
        worktrees.commit_work(tree, "done", "body", "choragos/w")
    assert _git(tree, "status", "--porcelain") == "?? a.txt\n"  # nothing staged or lost
    _git(tree, "switch", "-q", "choragos/w")
    assert worktrees.commit_work(tree, "done", "body", "choragos/w")


def test_no_merge_on_a_detached_head_or_into_the_operators_rebase(repo: Path) -> None:
    tree = worktrees.path_of(repo, "w")
    (tree / "a.txt").write_text("work\n")
    commit = worktrees.commit_work(tree, "done", "body", "choragos/w")
    _git(repo, "switch", "-q", "--detach")
    head = _git(repo, "rev-parse", "HEAD")
    result = worktrees.merge(repo, "choragos/w", "Merge", commit)
    assert not result.merged and "on no branch (a detached HEAD)" in result.why
    _git(repo, "switch", "-q", "main")
    (repo / ".git" / "rebase-merge").mkdir()  # what `git rebase -i` leaves while stopped
    result = worktrees.merge(repo, "choragos/w", "Merge", commit)
    assert not result.merged and "in the middle of a rebase (" in result.why
    assert "rebase-merge is there); finish it, or give it up with `git -C " in result.why
    assert _git(repo, "rev-parse", "HEAD") == head and not (repo / "a.txt").exists()
    (repo / ".git" / "rebase-merge").rmdir()
    assert worktrees.merge(repo, "choragos/w", "Merge", commit).merged


def test_a_link_in_place_of_a_worktree_never_starts_it_elsewhere(repo: Path, tmp_path: Path
                                                                  ) -> None:
    worktrees.prune(repo, "w")
    made = repo / ".choragos" / "worktrees"
    made.rmdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    made.symlink_to(outside)  # what any role can do through its state link
    with pytest.raises(worktrees.WorktreeError, match=r"leads to .*outside.*remove the link"):
        worktrees.ensure(repo, "w")
    assert list(outside.iterdir()) == []
    made.unlink()
    made.mkdir()
    (made / "w").symlink_to(repo)  # the main checkout: a worker's commits would land there
    with pytest.raises(worktrees.WorktreeError, match="a worktree stays in"):
        worktrees.ensure(repo, "w")


def test_a_worktree_holding_ignored_files_is_kept_and_brought_up_to_date(repo: Path) -> None:
    tree = worktrees.path_of(repo, "w")
    (tree / ".env").write_text("the worker's results\n")  # ignored: git would delete it
    assert not worktrees.prune(repo, "w")
    assert (tree / ".env").read_text() == "the worker's results\n"
    (repo / "new.txt").write_text("the operator's\n")
    _git(repo, "add", "new.txt")
    _git(repo, "commit", "-qm", "moved on")
    assert worktrees.ensure(repo, "w") == tree  # reused, from today's HEAD
    assert (tree / "new.txt").read_text() == "the operator's\n"
    (tree / ".env").unlink()
    assert worktrees.prune(repo, "w") and not tree.exists()


def test_a_tag_named_like_the_branch_is_never_taken_for_it(repo: Path) -> None:
    tree = worktrees.path_of(repo, "w")
    (tree / "a.txt").write_text("the work\n")
    worktrees.commit_work(tree, "done", "body", "choragos/w")
    _git(repo, "tag", "choragos/w", "HEAD")  # what the worker can make: already merged
    assert worktrees.unmerged(repo, "choragos/w")
    assert worktrees.merge(repo, "choragos/w", "Merge").merged
    assert (repo / "a.txt").read_text() == "the work\n"


def _killed_merge(repo: Path, commit: str, lock_age: float) -> tuple[Path, Path]:
    """What a kill -9 inside `git merge` leaves: its merge state and git's lock."""
    _git(repo, "merge", "--no-ff", "--no-commit", "-q", commit)
    lock, merge_head = repo / ".git" / "index.lock", repo / ".git" / "MERGE_HEAD"
    lock.write_text("")
    os.utime(lock, (time.time() - lock_age,) * 2)
    return lock, merge_head


def test_a_killed_merges_own_leftovers_are_cleared_and_nothing_else(repo: Path) -> None:
    tree = worktrees.path_of(repo, "w")
    (tree / "a.txt").write_text("work\n")
    commit = worktrees.commit_work(tree, "done", "body", "choragos/w")
    lock, merge_head = _killed_merge(repo, commit, lock_age=60)
    head = _git(repo, "rev-parse", "HEAD")
    # Not provably the session's: a lock newer than the resume, a merge of another commit.
    cleared, why = worktrees.clear_interrupted(repo, commit, time.time() - 600)
    assert cleared == () and lock.exists() and merge_head.exists()
    assert f"{lock} is there" in why and f"`rm {lock}`" in why
    # A git at work there (not this process's child: the session's own are not counted).
    with subprocess.Popen(["sh", "-c", "git cat-file --batch; true"], cwd=repo,
                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as running:
        try:
            wait_until(lambda: worktrees.git_running(repo), message="git seen at work")
            assert worktrees.clear_interrupted(repo, commit, time.time())[0] == ()
        finally:
            running.stdin.close()
    assert lock.exists() and not worktrees.git_running(repo)
    cleared, why = worktrees.clear_interrupted(repo, head.strip(), time.time())
    assert cleared == (str(lock),) and merge_head.exists()  # the lock was stale: gone
    assert f"{merge_head} names {commit}" in why and f"`git -C {repo} merge --abort`" in why
    # The session's own: both cleared, and the merge then goes in.
    lock.write_text("")
    os.utime(lock, (time.time() - 60,) * 2)
    cleared, why = worktrees.clear_interrupted(repo, commit, time.time())
    assert (cleared, why) == ((str(lock), str(merge_head)), "")
    assert _git(repo, "status", "--porcelain") == "" and _git(repo, "rev-parse", "HEAD") == head
    assert worktrees.merge(repo, "choragos/w", "Merge", commit).merged
    assert (repo / "a.txt").read_text() == "work\n"
