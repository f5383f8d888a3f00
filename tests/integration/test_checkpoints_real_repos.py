"""Checkpoint and rollback in repositories as people have them, each made
by git itself: a merge in progress, a sparse checkout with a sparse index,
a detached HEAD, an index.lock held, a stash, filters and line endings,
git-lfs pointers, a checked-out submodule.  In each the rollback restores
exactly the files before the task and leaves git's own state -- the
index, HEAD, the merge in progress, refs, the stash, the submodule's own
repository -- byte for byte as it was."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    add_submodule,
    commit,
    git,
    isolated_git,
    write,
)


def files(repo: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and link outside .git: its mode and content (or target)."""
    found = {}
    for folder, dirs, names in os.walk(repo):
        if ".git" in dirs:
            dirs.remove(".git")
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            body = (os.readlink(path).encode() if os.path.islink(path)
                    else Path(path).read_bytes())
            found[os.path.relpath(path, repo)] = (st.st_mode, body)
    return found


def git_state(repo: Path) -> dict[str, bytes | str]:
    """What a rollback must never change in git itself."""
    state: dict[str, bytes | str] = {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)",
                    "refs/heads", "refs/tags", "refs/stash"),
        "head": (repo / ".git" / "HEAD").read_text(),
        "stash": git(repo, "stash", "list")}
    for name in ("index", "MERGE_HEAD", "MERGE_MSG", "index.lock", "info/sparse-checkout"):
        path = repo / ".git" / name
        if path.exists():
            state[name] = path.read_bytes()
    return state


def mid_merge(repo: Path) -> None:
    write(repo, "a.txt", "base\n")
    commit(repo)
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "a.txt", "theirs\n")
    commit(repo)
    git(repo, "checkout", "-q", "-")
    write(repo, "a.txt", "ours\n")
    commit(repo)
    # The merge stops with a conflict: three stages of a.txt in the index.
    merge = subprocess.run(["git", "merge", "other"], cwd=repo, capture_output=True, text=True)
    assert merge.returncode == 1 and "CONFLICT" in merge.stdout, merge


def sparse(repo: Path) -> None:
    write(repo, "in/a.txt", "a\n")
    write(repo, "out/b.txt", "b\n")
    commit(repo)
    git(repo, "sparse-checkout", "set", "--sparse-index", "in")


def detached_with_lock(repo: Path) -> None:
    write(repo, "a.txt", "1\n")
    commit(repo)
    write(repo, "a.txt", "2\n")
    commit(repo)
    git(repo, "checkout", "-q", "HEAD~1")
    write(repo, ".git/index.lock", "")  # another git at work


def stashed(repo: Path) -> None:
    write(repo, "a.txt", "1\n")
    commit(repo)
    write(repo, "a.txt", "stashed\n")
    git(repo, "stash", "-q")
    write(repo, "a.txt", "in progress\n")


def filters(repo: Path) -> None:
    git(repo, "config", "core.autocrlf", "true")
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    git(repo, "config", "filter.upper.smudge", "cat")
    write(repo, ".gitattributes", "*.c filter=upper\n*.bin filter=lfs diff=lfs merge=lfs -text\n")
    write(repo, "x.c", "int main;\r\n")
    write(repo, "t.txt", "a\r\nb\r\n")
    write(repo, "p.bin", "version https://git-lfs.github.com/spec/v1\noid sha256:"
          + "0" * 64 + "\nsize 3\n")
    commit(repo)


def submodule(repo: Path) -> None:
    write(repo, "a.txt", "top\n")
    add_submodule(repo, repo.parent / "upstream", "lib")


REPOSITORIES: dict[str, Callable[[Path], None]] = {
    "a merge in progress": mid_merge, "a sparse index": sparse,
    "a detached HEAD and a held index.lock": detached_with_lock, "a stash": stashed,
    "filters, crlf and lfs pointers": filters, "a submodule": submodule}


@pytest.mark.parametrize("kind", list(REPOSITORIES))
def test_a_rollback_restores_the_files_and_leaves_git_alone(repo: Path, kind: str) -> None:
    git(repo, "config", "user.name", "t")
    REPOSITORIES[kind](repo)
    before, state = files(repo), git_state(repo)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        assert git_state(repo) == state
        # The task: edits, deletions, new files, a mode change, a new directory.
        for path in [p for p in before if not p.startswith(("lib/", ".git"))][:3]:
            write(repo, path, "the task's\n")
        victim = next(p for p in before if not p.startswith("lib/"))
        (repo / victim).unlink()
        write(repo, "new/deep/file.txt", "new\n")
        if (repo / "lib").is_dir():
            write(repo, "lib/inside.txt", "the submodule's own change\n")
        result = store.rollback("T1")
    assert result.saved is not None
    expected = dict(before)
    if (repo / "lib").is_dir():  # the submodule's work tree is its own: never restored
        expected["lib/inside.txt"] = files(repo)["lib/inside.txt"]
    assert files(repo) == expected
    assert git_state(repo) == state
