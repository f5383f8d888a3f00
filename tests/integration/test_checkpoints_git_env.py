"""A repository that git finds through the environment (``GIT_DIR``,
``GIT_WORK_TREE``: a dotfiles repository, a bare store with its work tree
elsewhere) is not one checkpoints can follow: they are off, saying why,
rather than kept in whatever repository a ``.git`` above leads to."""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.gitstore.checkpoints import CheckpointStore, NotARepository
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    git,
    init_repo,
    isolated_git,
    write,
)


def test_a_git_dir_elsewhere_turns_checkpoints_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store.git"
    git(tmp_path, "init", "-q", "--bare", str(store))
    work = tmp_path / "home"
    write(work, "dotfile", "x\n")
    monkeypatch.setenv("GIT_DIR", str(store))
    monkeypatch.setenv("GIT_WORK_TREE", str(work))
    with pytest.raises(NotARepository) as off:
        CheckpointStore(work)
    assert str(off.value) == (
        f"GIT_DIR is set to {store}, but checkpoints can only follow a repository found "
        f"through a .git in {work} or above, and there is none: checkpoints are off, as a "
        "rollback would not restore what git here works on (unset GIT_DIR to have them).")


@pytest.mark.parametrize("name", ["GIT_DIR", "GIT_WORK_TREE"])
def test_an_environment_naming_another_repository_than_the_directory_is_refused(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # The workspace is inside one repository, git is pointed at another.
    other = init_repo(tmp_path / "other")
    monkeypatch.setenv(name, str(other / ".git" if name == "GIT_DIR" else other))
    with pytest.raises(NotARepository, match=f"^{name} is set to .*checkpoints are off"):
        CheckpointStore(repo)
    assert not (repo / ".git" / "choragos").exists()


def test_an_environment_naming_the_same_repository_is_fine(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    monkeypatch.setenv("GIT_DIR", ".git")  # as git sets it for a hook
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo / ".") as store:
        assert store.snapshot("T1", "coder", "fine").task_id == "T1"
