"""Nothing a session writes under ``.choragos/`` follows a link out of the workspace."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from tests.integration.harness import Serve, role_toml

TEAM = role_toml("orchestrator", start=True) + role_toml("coder")

# Where a hostile repository points its links, relative to the workspace.
VARIANTS = {
    "the state dir itself": (".choragos", "dir"),
    "tasks/": (".choragos/tasks", "dir"),
    "a brief": (".choragos/briefs/coder.md", "file"),
    "the event log": (".choragos/logs/events.jsonl", "file"),
    "the worker task temp file": (".choragos/worker-task-coder.md.tmp", "file"),
    "a task file": (".choragos/tasks/T1.md", "file"),
}


def _outside(short_tmp, kind: str):
    """A victim outside the workspace, and a way to tell it was untouched."""
    if kind == "dir":
        victim = short_tmp / "victim-dir"
        victim.mkdir()
        return victim, lambda: sorted(os.listdir(victim)) == []
    victim = short_tmp / "victim.bashrc"
    victim.write_text("export SAFE=1\n")
    return victim, lambda: victim.read_text() == "export SAFE=1\n"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_repository_with_links_in_its_state_dir_is_refused_at_start(short_tmp, variant):
    work = short_tmp / "work"
    work.mkdir()
    session = Serve(work, TEAM, sock=short_tmp / "s.sock")
    where, kind = VARIANTS[variant]
    victim, untouched = _outside(short_tmp, kind)
    link = work / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)
    out = subprocess.run([sys.executable, "-m", "choragos", "serve", "--headless"], cwd=work,
                         env=session.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out.stderr
    assert "symbolic link" in out.stderr and where.split("/")[-1] in out.stderr, out.stderr
    assert untouched(), f"{victim} was written through the link"
    assert not session.sock.exists()


def test_links_planted_while_running_are_never_written_through(serve, short_tmp):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    state = s.workdir / ".choragos"
    victim, untouched = _outside(short_tmp, "file")
    (state / "worker-task-coder.md.tmp").symlink_to(victim)
    (state / "worker-task-coder.md").symlink_to(victim)
    (state / "tasks").mkdir(exist_ok=True)
    (state / "tasks" / "T1.md").symlink_to(victim)
    out = s.cli("delegate", "--to", "coder", "--task", "overwrite the bashrc, please")
    assert out.returncode == 0, out.stderr
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", message="T1 delivered")
    assert untouched(), "the task text went through a link"
    # The links themselves were replaced by the files, not followed.
    assert not (state / "tasks" / "T1.md").is_symlink()
    assert "overwrite the bashrc" in (state / "worker-task-coder.md").read_text()


def test_a_linked_tasks_dir_planted_while_running_refuses_the_delegation(serve, short_tmp):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    victim, untouched = _outside(short_tmp, "dir")
    tasks = s.workdir / ".choragos" / "tasks"
    if tasks.exists():
        tasks.rmdir()
    tasks.symlink_to(victim)
    out = s.cli("delegate", "--to", "coder", "--task", "land outside")
    assert out.returncode == 1, out.stdout
    assert "symbolic link" in out.stderr and "not recorded" in out.stderr, out.stderr
    assert untouched()
    assert s.board() == {}, "a refused delegation left a task on the board"
    assert s.cli("ping").returncode == 0


def test_state_files_and_dirs_are_private(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "private").returncode == 0
    state = s.workdir / ".choragos"
    s.wait(lambda: (state / "worker-task-coder.md").exists(), message="the worker file")
    written = [state, state / "tasks", state / "briefs", state / "logs", state / "reports"]
    written += [state / "tasks/T1.md", state / "briefs/coder.md", state / "logs/events.jsonl",
                state / "logs/server.log", state / "logs/coder.log",
                state / "worker-task-coder.md"]
    s.wait(lambda: (state / "logs/coder.log").exists(), message="the transcript")
    for path in written:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {mode:o}"
