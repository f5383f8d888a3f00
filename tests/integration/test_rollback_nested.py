"""A rollback puts a nested repository's files back (a submodule, a
repository made with ``git init`` inside the tree, one inside one of
those) -- git's own ``git status`` there is the oracle -- and never touches
its HEAD, index or refs, saying what it leaves undone there.  One whose
files the checkpoint did not keep (unreadable, or a checkpoint from before
they were kept) is named and left as it is.  The repositories are made by
git itself."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    add_submodule,
    commit,
    git,
    init_repo,
    isolated_git,
    write,
)


def git_says_changed(nested: Path) -> bool:
    """git's own answer: ``git status`` shows something there."""
    return bool(git(nested, "status", "--porcelain", "--ignore-submodules=none").strip())


def inside(nested: Path) -> dict[str, tuple[bytes, bool]]:
    """Its files (not its ``.git``): content and executable bit."""
    return {str(p.relative_to(nested)): (p.read_bytes(), os.access(p, os.X_OK))
            for p in nested.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(nested).parts}


def staged_tree(nested: Path) -> str:
    """The tree ``git add -A`` would stage there, through a scratch index."""
    env = {"GIT_INDEX_FILE": str(nested / ".git" / "scratch-index")}
    git(nested, "add", "-A", env=env)
    return git(nested, "write-tree", env=env).strip()


def exclude_in_nested(nested: Path, pattern: str) -> None:
    path = nested / git(nested, "rev-parse", "--git-path", "info/exclude").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(pattern + "\n")


def staged_then_undone(nested: Path) -> None:
    original = (nested / "inside.txt").read_bytes()
    write(nested, "inside.txt", "staged\n")
    git(nested, "add", "inside.txt")
    write(nested, "inside.txt", original)


# What an agent does inside the nested repository; whether that leaves work
# its commit does not hold (git status agrees: checked in each case); what
# the rollback says it does not undo there; and whether git status there is
# silent again after the rollback (it was at the checkpoint).
CHANGES: dict[str, tuple[Callable[[Path], object], bool, str, bool]] = {
    "nothing": (lambda n: None, False, "", True),
    "a tracked file edited": (lambda n: write(n, "inside.txt", "edited\n"), True, "", True),
    "a tracked file deleted": (lambda n: (n / "inside.txt").unlink(), True, "", True),
    "a file made executable": (lambda n: (n / "inside.txt").chmod(0o755), True, "", True),
    "a file added": (lambda n: write(n, "new/deep.txt", "new\n"), True, "", True),
    "a change staged": (lambda n: (write(n, "inside.txt", "s\n"), git(n, "add", "-A")),
                        True, "is staged there", False),
    "a change staged, the file then put back": (staged_then_undone, True, "is staged there",
                                                False),
    "a file its own rules ignore": (lambda n: (exclude_in_nested(n, "*.tmp"),
                                               write(n, "scratch.tmp", "x")), False, "", True),
    "a file only the main tree's rules ignore": (lambda n: write(n, "debug.log", "x"),
                                                 True, "", True),
    "a commit made there": (lambda n: (write(n, "inside.txt", "c\n"), commit(n)),
                            False, "its HEAD moved", False),
    "a commit of nothing new": (lambda n: git(n, "commit", "-q", "--allow-empty", "-m", "e"),
                                False, "its HEAD moved", True),
}


def plain_nested(repo: Path) -> Path:
    nested = init_repo(repo / "lib")
    write(nested, "inside.txt", "sub\n")
    commit(nested)
    return nested


def top_and_nested(repo: Path) -> Path:
    """A committed file in the main tree, and a nested repository."""
    write(repo, "a.txt", "top\n")
    commit(repo)
    return plain_nested(repo)


def submodule(repo: Path) -> Path:
    add_submodule(repo, repo.parent / "upstream", "lib")
    return repo / "lib"


@pytest.mark.parametrize("kind", ["a submodule", "a nested repository"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_rollback_puts_a_nested_repositorys_files_back(
        repo: Path, kind: str, change: str) -> None:
    write(repo, "a.txt", "top\n")
    write(repo, ".gitignore", "*.log\n")
    commit(repo)
    nested = submodule(repo) if kind == "a submodule" else plain_nested(repo)
    act, changed, note, clean = CHANGES[change]
    before = inside(nested)
    head = git(nested, "rev-parse", "HEAD").strip()
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "the task's\n")
        act(nested)
        assert git_says_changed(nested) is changed  # the case is what it says
        plan = store.plan_rollback("T1")
        assert (plan.nested_changes, plan.nested_restored) == ([], ["lib"])
        assert plan.submodules == (["lib"] if change.startswith("a commit") else [])
        assert [n for n in plan.nested_notes if note and note in n] == plan.nested_notes
        assert bool(plan.nested_notes) is bool(note)
        result = store.rollback("T1")
    assert (result.nested_restored, result.nested_notes) == (plan.nested_restored,
                                                             plan.nested_notes)
    assert (repo / "a.txt").read_text() == "top\n"
    ignored = {"scratch.tmp": (b"x", False)} if "own rules" in change else {}
    assert inside(nested) == {**before, **ignored}  # as at the checkpoint
    assert git_says_changed(nested) is not clean
    assert git(nested, "rev-parse", "HEAD").strip() != head or not change.startswith("a commit")
    if note == "its HEAD moved":  # what the note says to run undoes the commits too
        (said,) = plan.nested_notes
        git(nested, *said.split("`")[1].split()[3:])
        assert not git_says_changed(nested) and git(nested, "rev-parse", "HEAD").strip() == head


def test_repositories_without_a_commit_inside_one_and_damaged_ones(repo: Path) -> None:
    write(repo, "a.txt", "top\n")
    commit(repo)
    outer = plain_nested(repo)
    deep = init_repo(outer / "deep" / "er")
    write(deep, "d.txt", "d\n")
    commit(deep)
    commit(outer)  # the deeper one as a gitlink of the outer one
    init_repo(repo / "empty")
    unborn = init_repo(repo / "unborn")
    write(unborn, "kept.txt", "in no commit\n")
    damaged = repo / "damaged"
    damaged.mkdir()
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(deep, "d.txt", "the agent's\n")
        write(unborn, "work.txt", "not committed anywhere\n")
        write(unborn, "kept.txt", "changed\n")
        (damaged / ".git").write_text("gitdir: /nonexistent/choragos-test\n")
        write(damaged, "lost.txt", "x")
        plan = store.plan_rollback("T1")
        result = store.rollback("T1")
    # The damaged one cannot be read, so nothing vouches for it: named.
    assert plan.nested_changes == ["damaged"]
    assert plan.nested_restored == ["empty", "lib", "lib/deep/er", "unborn"]
    assert (plan.restore, plan.delete) == (["lib/deep/er/d.txt", "unborn/kept.txt"],
                                           ["unborn/work.txt"])
    assert result.saved is not None
    assert (deep / "d.txt").read_text() == "d\n" and not (unborn / "work.txt").exists()
    assert (unborn / "kept.txt").read_text() == "in no commit\n"
    assert (damaged / "lost.txt").exists() and not git_says_changed(deep)


def test_a_submodule_not_cloned_is_named_once_something_is_put_in_it(repo: Path) -> None:
    add_submodule(repo, repo.parent / "upstream", "lib")
    git(repo, "submodule", "deinit", "-q", "-f", "lib")
    assert not os.listdir(repo / "lib")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        assert store.plan_rollback("T1").nested_changes == []
        write(repo, "lib/stray.txt", "x")
        plan = store.plan_rollback("T1")
        result = store.rollback("T1")
    assert plan.nested_changes == ["lib"] and result.nested_changes == ["lib"]
    assert result.saved is None and (repo / "lib" / "stray.txt").exists()


def test_a_watched_store_puts_them_back_too(repo: Path) -> None:
    """The session's checkpointer keeps its walk and watches the tree: its
    snapshots keep the nested repositories' files all the same."""
    nested = top_and_nested(repo)
    with CheckpointStore(repo, watch=True) as store:
        store.snapshot("T1", "coder", "before")
        write(nested, "inside.txt", "the operator's, not committed\n")
        store.snapshot("T2", "coder", "before")
        write(nested, "inside.txt", "the agent's\n")
        plan = store.plan_rollback("T2")
        store.rollback("T2")
    assert (plan.restore, plan.nested_changes) == (["lib/inside.txt"], [])
    assert (nested / "inside.txt").read_text() == "the operator's, not committed\n"


@pytest.mark.parametrize("undo", [["stash", "-q"], ["checkout", "-q", "--", "."]],
                         ids=["stashed", "discarded"])
def test_work_there_at_the_checkpoint_and_gone_since_comes_back(repo: Path,
                                                                undo: list[str]) -> None:
    """Uncommitted work in a nested repository at the checkpoint (the
    operator's), stashed or discarded by the agent: the rollback puts it
    back, though git status there was silent."""
    nested = top_and_nested(repo)
    write(nested, "inside.txt", "the operator's own, not committed\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        git(nested, *undo)
        assert not git_says_changed(nested)
        result = store.rollback("T1")
    assert (result.restored, result.nested_changes) == (["lib/inside.txt"], [])
    assert (nested / "inside.txt").read_text() == "the operator's own, not committed\n"


def test_a_checkpoint_that_kept_no_nested_files_names_them_as_before(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint from before nested files were kept (no parent, no
    ``Choragos-Nested-Head``): the repository is named, not entered."""
    nested = top_and_nested(repo)
    with CheckpointStore(repo) as store:
        with monkeypatch.context() as old:
            old.setattr(CheckpointStore, "_keep_nested", lambda *a: ([], None))
            first = store.snapshot("T1", "coder", "before")
        write(nested, "inside.txt", "edited\n")
        result = store.rollback("T1")
    assert "Choragos-Nested-Head" not in git(repo, "log", "-1", "--format=%B", first.ref)
    assert (result.nested_changes, result.nested_restored, result.saved) == (["lib"], [], None)
    assert (nested / "inside.txt").read_text() == "edited\n"


def test_content_its_own_rules_now_ignore_in_the_way_refuses(repo: Path) -> None:
    """A kept file that the nested repository now ignores, changed: the
    undo point could not hold it, so nothing is changed."""
    nested = top_and_nested(repo)
    write(nested, "notes.txt", "the operator's notes\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        exclude_in_nested(nested, "notes.txt")
        write(nested, "notes.txt", "the agent's\n")
        write(repo, "a.txt", "the task's\n")
        assert store.plan_rollback("T1").conflicts == ["lib/notes.txt"]
        with pytest.raises(CheckpointError, match=r"lib/notes\.txt.*nothing was changed"):
            store.rollback("T1")
    assert (nested / "notes.txt").read_text() == "the agent's\n"
    assert (repo / "a.txt").read_text() == "the task's\n"


def test_the_checkpoint_keeps_the_files_and_its_undo_point_puts_them_back(
        repo: Path) -> None:
    nested = top_and_nested(repo)
    write(nested, "untracked.txt", "u\n")
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "before")
        fingerprint = staged_tree(nested)
        write(nested, "new.txt", "the agent's new file\n")
        write(nested, "inside.txt", "the agent's edit\n")
        result = store.rollback("T1")
        assert result.saved is not None
        assert not (nested / "new.txt").exists() and (nested / "inside.txt").read_text() == "sub\n"
        store.rollback(result.saved.task_id)
    assert (nested / "new.txt").read_text() == "the agent's new file\n"
    assert (nested / "inside.txt").read_text() == "the agent's edit\n"
    message = git(repo, "log", "-1", "--format=%B", first.ref)
    (line,) = [x for x in message.splitlines() if x.startswith("Choragos-Nested: ")]
    assert line == f'Choragos-Nested: {fingerprint} "lib"'
    head = git(nested, "rev-parse", "HEAD").strip()
    assert f'Choragos-Nested-Head: {head} "lib"' in message.splitlines()
    # The kept file is in the main repository's store, under the checkpoint's
    # parent; its own checkpoint tree is what git add -A stages.
    assert git(repo, "show", f"{first.ref}^:lib/untracked.txt") == "u\n"
    # Only what differs from its HEAD is kept: its committed file is not.
    assert git(repo, "ls-tree", "-r", "--name-only", f"{first.ref}^") == "lib/untracked.txt\n"
    assert "lib/untracked.txt" not in git(repo, "ls-tree", "-r", "--name-only", first.ref)
    git(repo, "fsck", "--strict", "--no-dangling")


def test_a_tree_without_a_nested_repository_writes_nothing_more(repo: Path) -> None:
    write(repo, "a.txt", "top\n")
    commit(repo)
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "before")
    assert git(repo, "rev-list", "--count", first.ref).strip() == "1"
    assert "Nested" not in git(repo, "log", "-1", "--format=%B", first.ref)
