"""``choragos checkpoints`` and ``choragos rollback`` as real subprocesses, no session."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ptyprocess import PtyProcessUnicode

from choragos.control import paths
from choragos.gitstore.checkpoints import CheckpointStore
from choragos.terminal.ptyproc import process_state
from tests.conftest import wait_until

PYTHON = sys.executable
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


@pytest.fixture
def env(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An isolated environment: own HOME, no git config, own socket directory."""
    values = {"HOME": str(short_tmp / "home"), "XDG_CONFIG_HOME": str(short_tmp / "home"),
              "XDG_RUNTIME_DIR": str(short_tmp / "run"), "GIT_CONFIG_NOSYSTEM": "1",
              **IDENTITY}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    (short_tmp / "run").mkdir()
    return {**os.environ, **values}


@pytest.fixture
def repo(short_tmp: Path, env: dict[str, str]) -> Path:
    root = short_tmp / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("v1\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "v1")
    return root


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


def choragos(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "choragos", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60)


def snapshot(root: Path, task: str, label: str = "work", now: float | None = None) -> str:
    with CheckpointStore(root) as store:
        return store.snapshot(task, "coder", label, now=now).ref


def test_outside_git_one_sentence_and_exit_1(short_tmp: Path, env: dict[str, str]) -> None:
    plain = short_tmp / "plain"
    plain.mkdir()
    for args in (["checkpoints"], ["checkpoints", "prune"], ["rollback", "T1", "--yes"]):
        done = choragos(plain, *args)
        assert done.returncode == 1
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and "not inside a git repository" in done.stderr


def test_list_table_and_json(repo: Path) -> None:
    now = time.time()
    snapshot(repo, "T1", "first task", now=now - 7200)
    snapshot(repo, "T2", "evil \x1b]0;pwned\x07 label", now=now - 180)
    done = choragos(repo, "checkpoints")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["TASK", "AGE", "ROLE", "LABEL"]
    assert lines[1].split()[:3] == ["T2", "3m", "coder"]
    assert lines[2].split()[:3] == ["T1", "2h", "coder"]
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    listed = json.loads(choragos(repo, "checkpoints", "--json").stdout)["checkpoints"]
    assert [c["task_id"] for c in listed] == ["T2", "T1"]
    assert {"ref", "role", "label", "created", "head", "commit", "age"} <= set(listed[0])


def test_empty_list_says_so(repo: Path) -> None:
    done = choragos(repo, "checkpoints")
    assert done.returncode == 0 and done.stdout.startswith("no checkpoints yet")


def test_prune_keeps_the_newest(repo: Path) -> None:
    for n in range(5):
        snapshot(repo, f"T{n}", now=1000.0 + n)
    done = choragos(repo, "checkpoints", "prune", "--keep", "3")
    assert done.returncode == 0, done.stderr
    assert "removed 2" in done.stdout
    (repo / ".choragos.toml").write_text('[[roles]]\nname = "lead"\ncommand = "sh"\n'
                                         'start = true\n\n[checkpoints]\nkeep = 1\n')
    assert choragos(repo, "checkpoints", "prune").returncode == 0
    listed = json.loads(choragos(repo, "checkpoints", "--json").stdout)["checkpoints"]
    assert [c["task_id"] for c in listed] == ["T4"]
    assert choragos(repo, "checkpoints", "prune", "--keep", "-1").returncode == 2


def test_rollback_without_a_terminal_refuses_without_yes(repo: Path) -> None:
    snapshot(repo, "T1")
    (repo / "a.txt").write_text("agent wrecked it\n")
    done = choragos(repo, "rollback", "T1")
    assert done.returncode == 1
    assert "restore  a.txt" in done.stdout
    assert "--yes" in done.stderr
    assert (repo / "a.txt").read_text() == "agent wrecked it\n"


def test_dry_run_then_yes_then_undo(repo: Path) -> None:
    snapshot(repo, "T1")
    head = git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("agent wrecked it\n")
    (repo / "junk").mkdir()
    (repo / "junk" / "new.txt").write_text("created by the agent\n")
    dry = choragos(repo, "rollback", "T1", "--dry-run")
    assert dry.returncode == 0
    assert "1 file to restore, 1 to delete" in dry.stdout
    assert (repo / "junk" / "new.txt").exists()
    done = choragos(repo, "rollback", "T1", "--yes")
    assert done.returncode == 0, done.stderr
    assert (repo / "a.txt").read_text() == "v1\n" and not (repo / "junk").exists()
    assert "undo with: choragos rollback pre-rollback-T1" in done.stdout
    undo = choragos(repo, "rollback", "pre-rollback-T1", "--yes")
    assert undo.returncode == 0, undo.stderr
    assert (repo / "a.txt").read_text() == "agent wrecked it\n"
    assert (repo / "junk" / "new.txt").read_text() == "created by the agent\n"
    assert git(repo, "rev-parse", "HEAD") == head
    again = choragos(repo, "rollback", "pre-rollback-T1", "--yes")
    assert again.returncode == 0 and "nothing to roll back" in again.stdout


def test_undoing_an_undo_does_not_stack_names(repo: Path) -> None:
    snapshot(repo, "T1")
    (repo / "a.txt").write_text("agent wrecked it\n")
    for target, after in (("T1", "v1\n"), ("pre-rollback-T1", "agent wrecked it\n"),
                          ("pre-undo-T1", "v1\n"), ("pre-rollback-T1", "agent wrecked it\n")):
        done = choragos(repo, "rollback", target, "--yes")
        assert done.returncode == 0, done.stderr
        assert (repo / "a.txt").read_text() == after
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/choragos/")
    assert "pre-rollback-pre-" not in refs and "pre-undo-pre-" not in refs
    assert "pre-undo-T1" in refs
    listing = choragos(repo, "checkpoints").stdout
    assert listing.count("(undo)  ") == 4 and "are undo points" in listing
    assert "choragos rollback pre-" in listing


def test_warns_about_moved_head_and_a_live_session(repo: Path) -> None:
    snapshot(repo, "T1")
    (repo / "a.txt").write_text("v2\n")
    git(repo, "commit", "-q", "-am", "v2")
    sock_path = paths.socket_path(repo, os.environ)
    sock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        done = choragos(repo, "rollback", "T1", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "warning: HEAD moved since this checkpoint" in done.stdout
    assert "warning: a choragos session is running here" in done.stdout


def test_file_names_are_shown_inert_and_long_lists_truncated(repo: Path) -> None:
    snapshot(repo, "T1")
    (repo / "evil\x1b[2Jname").write_text("x")
    for n in range(30):
        (repo / f"extra{n:02d}.txt").write_text("x")
    done = choragos(repo, "rollback", "T1", "--dry-run")
    assert "\x1b" not in done.stdout
    assert "evil\\x1b[2Jname" in done.stdout
    assert "... and 11 more" in done.stdout


def test_refuses_when_ignored_content_is_in_the_way(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "thing").write_text("file\n")
    snapshot(repo, "T1")
    (repo / "thing").unlink()
    (repo / "thing").mkdir()
    (repo / "thing" / "x.log").write_text("ignored\n")
    done = choragos(repo, "rollback", "T1", "--yes")
    assert done.returncode == 1
    assert "blocked  thing" in done.stdout and "nothing was changed" in done.stderr
    assert (repo / "thing" / "x.log").read_text() == "ignored\n"


def test_unknown_target_and_bad_usage(repo: Path) -> None:
    done = choragos(repo, "rollback", "T9", "--yes")
    assert done.returncode == 1 and "no checkpoint for 'T9'" in done.stderr
    assert choragos(repo, "rollback").returncode == 2
    assert choragos(repo, "checkpoints", "shred").returncode == 2


@pytest.mark.parametrize(("answer", "rolled_back"), [("y", True), ("n", False)])
def test_asks_on_a_terminal(repo: Path, env: dict[str, str], answer: str,
                            rolled_back: bool) -> None:
    snapshot(repo, "T1")
    (repo / "a.txt").write_text("changed\n")
    child = PtyProcessUnicode.spawn([PYTHON, "-m", "choragos", "rollback", "T1"],
                                    cwd=str(repo), env=env, dimensions=(24, 200))
    try:
        seen = _read_until(child, "[y/N]")
        assert "restore  a.txt" in seen
        child.write(answer + "\r")
        seen = _read_until(child, None)
    finally:
        child.terminate(force=True)
    assert ("undo with" in seen) is rolled_back
    assert (repo / "a.txt").read_text() == ("v1\n" if rolled_back else "changed\n")


def _read_until(child: PtyProcessUnicode, marker: str | None, timeout: float = 30) -> str:
    """Output until ``marker`` appears (or, for None, until the child exits)."""
    seen, deadline = "", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker is not None and marker in seen:
            return seen
        if not select.select([child.fd], [], [], 0.1)[0]:
            continue
        try:
            seen += child.read(4096)
        except EOFError:
            if marker is None:
                return seen
            break
    raise AssertionError(f"no {marker!r} in time; saw {seen!r}")


def test_ctrl_c_at_the_prompt_answers_no(repo: Path, env: dict[str, str]) -> None:
    snapshot(repo, "T1")
    (repo / "a.txt").write_text("changed\n")
    child = PtyProcessUnicode.spawn([PYTHON, "-m", "choragos", "rollback", "T1"],
                                    cwd=str(repo), env=env, dimensions=(24, 200))
    try:
        _read_until(child, "[y/N]")
        # Once it sleeps reading its answer: a SIGINT in the instant before
        # the read begins waits for the next key in CPython (no person is
        # that fast), which is the interpreter's race, not the prompt's.
        wait_until(lambda: process_state(child.pid) == b"S", 10,
                   message="the prompt to wait for its answer")
        child.write("\x03")  # ctrl-c, as the terminal sends it: SIGINT
        seen = _read_until(child, None)
        child.wait()
    finally:
        child.terminate(force=True)
    assert "rollback cancelled; nothing changed" in seen and "Traceback" not in seen, seen
    assert child.exitstatus == 1  # as for a "n": not rolled back
    assert (repo / "a.txt").read_text() == "changed\n"
