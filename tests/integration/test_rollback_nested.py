"""A rollback never enters a nested repository, and never keeps quiet about
one: its plan and its result name every nested repository (a submodule, a
repository made with ``git init`` inside the tree, one inside one of those)
whose work tree holds what its own commit does not -- git's own ``git
status`` in that repository is the oracle -- and the ones at another commit.
The repositories are made by git itself; the files inside them are left
exactly as they were."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointStore
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


def inside(nested: Path) -> dict[str, bytes]:
    return {str(p.relative_to(nested)): p.read_bytes() for p in nested.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(nested).parts}


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
# its commit does not hold (git status agrees: checked in each case); and
# whether the rollback names it: that, or files not as they were.
CHANGES: dict[str, tuple[Callable[[Path], object], bool, bool]] = {
    "nothing": (lambda n: None, False, False),
    "a tracked file edited": (lambda n: write(n, "inside.txt", "edited\n"), True, True),
    "a tracked file deleted": (lambda n: (n / "inside.txt").unlink(), True, True),
    "a file made executable": (lambda n: (n / "inside.txt").chmod(0o755), True, True),
    "a file added": (lambda n: write(n, "new.txt", "new\n"), True, True),
    "a change staged": (lambda n: (write(n, "inside.txt", "s\n"), git(n, "add", "-A")),
                        True, True),
    "a change staged, the file then put back": (staged_then_undone, True, True),
    "a file its own rules ignore": (lambda n: (exclude_in_nested(n, "*.tmp"),
                                               write(n, "scratch.tmp", "x")), False, False),
    "a file only the main tree's rules ignore": (lambda n: write(n, "debug.log", "x"),
                                                 True, True),
    "a commit made there": (lambda n: (write(n, "inside.txt", "c\n"), commit(n)),
                            False, True),
    "a commit of nothing new": (lambda n: git(n, "commit", "-q", "--allow-empty", "-m", "e"),
                                False, False),
}


def plain_nested(repo: Path) -> Path:
    nested = init_repo(repo / "lib")
    write(nested, "inside.txt", "sub\n")
    commit(nested)
    return nested


def submodule(repo: Path) -> Path:
    add_submodule(repo, repo.parent / "upstream", "lib")
    return repo / "lib"


@pytest.mark.parametrize("kind", ["a submodule", "a nested repository"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_the_plan_and_the_result_name_a_nested_repository_with_uncommitted_work(
        repo: Path, kind: str, change: str) -> None:
    write(repo, "a.txt", "top\n")
    write(repo, ".gitignore", "*.log\n")
    commit(repo)
    nested = submodule(repo) if kind == "a submodule" else plain_nested(repo)
    act, changed, named = CHANGES[change]
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "the task's\n")
        act(nested)
        assert git_says_changed(nested) is changed  # the case is what it says
        after = inside(nested)
        plan = store.plan_rollback("T1")
        assert plan.nested_changes == (["lib"] if named else [])
        assert plan.submodules == (["lib"] if change.startswith("a commit") else [])
        result = store.rollback("T1")
    assert (result.nested_changes, result.submodules) == (plan.nested_changes, plan.submodules)
    assert (repo / "a.txt").read_text() == "top\n"
    assert inside(nested) == after  # never entered, never changed


def test_repositories_without_a_commit_inside_one_and_damaged_ones_are_named(
        repo: Path) -> None:
    write(repo, "a.txt", "top\n")
    commit(repo)
    outer = plain_nested(repo)
    deep = init_repo(outer / "deep" / "er")
    write(deep, "d.txt", "d\n")
    commit(deep)
    commit(outer)  # the deeper one as a gitlink of the outer one
    init_repo(repo / "empty")
    unborn = init_repo(repo / "unborn")
    damaged = repo / "damaged"
    damaged.mkdir()
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(deep, "d.txt", "the agent's\n")
        write(unborn, "work.txt", "not committed anywhere\n")
        (damaged / ".git").write_text("gitdir: /nonexistent/choragos-test\n")
        write(damaged, "lost.txt", "x")
        plan = store.plan_rollback("T1")
    assert git_says_changed(deep) and git_says_changed(unborn)
    assert not git_says_changed(repo / "empty")
    # The outer one holds its own commit (its gitlink still names deep's):
    # git too says so once the deeper one's own files are left to it.
    assert not git(outer, "status", "--porcelain", "--ignore-submodules=dirty").strip()
    # The damaged one cannot be read, so nothing vouches for it.
    assert plan.nested_changes == ["damaged", "lib/deep/er", "unborn"]
    assert plan.empty  # no file of the main tree changed: still named


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


def test_a_watched_store_names_them_too(repo: Path) -> None:
    """The session's checkpointer keeps its walk and watches the tree: the
    plan it makes looks inside the nested repositories all the same."""
    write(repo, "a.txt", "top\n")
    commit(repo)
    nested = plain_nested(repo)
    with CheckpointStore(repo, watch=True) as store:
        store.snapshot("T1", "coder", "before")
        store.snapshot("T2", "coder", "before")
        write(nested, "inside.txt", "edited\n")
        assert store.plan_rollback("T1").nested_changes == ["lib"]


@pytest.mark.parametrize("undo", [["stash", "-q"], ["checkout", "-q", "--", "."]],
                         ids=["stashed", "discarded"])
def test_work_there_at_the_checkpoint_and_gone_since_is_named(repo: Path,
                                                              undo: list[str]) -> None:
    """The checkpoint records each nested repository's work tree: one that
    held uncommitted work then and is clean now (the agent stashed or
    discarded it) is not what it was, though git status is silent."""
    write(repo, "a.txt", "top\n")
    commit(repo)
    nested = plain_nested(repo)
    write(nested, "inside.txt", "the operator's own, not committed\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        git(nested, *undo)
        assert not git_says_changed(nested)
        plan = store.plan_rollback("T1")
        result = store.rollback("T1")
    assert plan.nested_changes == ["lib"] and result.nested_changes == ["lib"]
    assert (nested / "inside.txt").read_text() == "sub\n"  # left as it is


def test_the_checkpoint_records_each_nested_work_tree_and_its_undo_point_too(
        repo: Path) -> None:
    write(repo, "a.txt", "top\n")
    commit(repo)
    nested = plain_nested(repo)
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "before")
        write(nested, "new.txt", "x")
        write(repo, "a.txt", "the task's\n")
        result = store.rollback("T1")
        assert result.saved is not None
        undo = store.plan_rollback(result.saved.task_id)
    message = git(repo, "log", "-1", "--format=%B", first.ref)
    (line,) = [x for x in message.splitlines() if x.startswith("Choragos-Nested: ")]
    assert line == f'Choragos-Nested: {git(nested, "rev-parse", "HEAD^{tree}").strip()} "lib"'
    # The undo point recorded lib as it was when it was saved: as it is.
    assert undo.nested_changes == ["lib"]  # still uncommitted there
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "kept")
    with CheckpointStore(repo) as store:
        assert store.plan_rollback(result.saved.task_id).nested_changes == []
