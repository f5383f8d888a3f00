"""Real git repositories for the checkpoint and git-walk tests.

``isolated_git`` (autouse where imported) keeps the user's and the system's
git config out; ``init_repo`` makes a repository fast (a copy of one ``git
init``); ``git_tree`` is git's own answer for what a checkpoint must hold.
The integration conftest's ``repo`` fixture is an empty one of these.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_until

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
OLD = time.time() - 3600


@pytest.fixture(scope="module", autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No user or system git config (excludesFile, hooks) leaks into the tests."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        for key, value in IDENTITY.items():
            mp.setenv(key, value)
        yield


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          env={**os.environ, **(env or {})})
    return done.stdout.decode("utf-8", "surrogateescape")


def commit(repo: Path, message: str = "c") -> None:
    """Everything in ``repo``'s work tree committed."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def init_repo(root: Path) -> Path:
    """A new repository at ``root``: a copy of one made by ``git init`` once
    per process (under `make mutate`, once in the parent, not per mutant)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(_template() / ".git", root / ".git", symlinks=True)
    return root


_TEMPLATE: list[Path] = []


def _template() -> Path:
    if not _TEMPLATE:
        made = Path(tempfile.mkdtemp(prefix="choragos-git-template-"))
        # Forked children leave by os._exit: only the process that made it removes it.
        atexit.register(shutil.rmtree, made, True)
        git(made, "init", "-q")
        git(made, "config", "gc.auto", "0")
        _TEMPLATE.append(made)
    return _TEMPLATE[0]


def write(root: Path, rel: str, data: bytes | str = b"x", mode: int = 0o644) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    path.chmod(mode)
    return path


def age_tree(root: Path) -> None:
    """Date every file back, as most of a real tree is, and let the clock
    pass the change times this sets, so nothing is racy."""
    for folder, dirs, files in os.walk(root):
        if ".git" in dirs:
            dirs.remove(".git")
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (OLD, OLD), follow_symlinks=False)
    settle(root)


def settle(root: Path) -> None:
    """Wait until the filesystem clock has moved on, so that what was just
    written is no longer "racy" (too fresh for its stat data to be trusted)."""
    probe = root.parent / "clock-probe"
    probe.touch()
    start = probe.stat().st_mtime_ns
    wait_until(lambda: probe.touch() or probe.stat().st_mtime_ns > start, timeout=5,
               interval=0.001, message="the filesystem clock to tick")


def git_tree(root: Path, *exclude: str) -> str:
    """What git itself would checkpoint: add -A into a copy of the index."""
    index = root.parent / f"{root.name}.oracle-index"
    if (root / ".git" / "index").exists():
        shutil.copyfile(root / ".git" / "index", index)
    else:
        index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    git(root, "add", "-A", "--", ".", *[f":!{p}" for p in exclude], env=env)
    tree = git(root, "write-tree", env=env).strip()
    index.unlink()
    return tree


def ls_tree(root: Path, ref: str) -> dict[str, str]:
    out = git(root, "ls-tree", "-r", "-z", "--full-tree", ref)
    entries = {}
    for item in out.split("\0"):
        if item:
            meta, path = item.split("\t", 1)
            entries[path] = meta.split()[0]
    return entries


def add_submodule(repo: Path, upstream: Path, name: str = "sub") -> None:
    """A one-commit repository at ``upstream``, added to ``repo`` as a submodule."""
    init_repo(upstream)
    write(upstream, "inside.txt", "sub\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), name)
    git(repo, "commit", "-q", "-m", "with submodule")
