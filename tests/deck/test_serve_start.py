"""``serve``'s way up, with the roles' agents started ahead of the session:
the processes it starts on the way are counted, and an interrupt while the
session's modules still load stops the agents already started."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from choragos.terminal import ptyspawn
from tests.conftest import pid_alive, wait_until
from tests.deck.conftest import TEAM, cli_for, kill_all_and_remove
from tests.integration.harness import ROOT, base_env, git_init, read_agent_log

pytestmark = pytest.mark.timeout(120)

# A sitecustomize that holds the server at its import of the session's
# modules (once), so a test can act while the agents run and the session is
# still loading.
SLOW_SESSION = """
import os, sys, time

class _Slow:
    held = False

    def find_spec(self, name, path=None, target=None):
        if name == "choragos.actors.session" and not self.held:
            self.held = True
            time.sleep(float(os.environ.get("CHORAGOS_TEST_SLOW_SESSION", "0")))
        return None

sys.meta_path.insert(0, _Slow())
"""


TRACED = "trace=execve,clone,clone3,fork,vfork"


@pytest.fixture
def project():
    root = Path(tempfile.mkdtemp(prefix="chs-", dir="/tmp"))
    work = root / "w"
    work.mkdir()
    git_init(work)
    (work / ".choragos.toml").write_text(TEAM)
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    env = base_env({"CHORAGOS_SOCK": str(root / "s.sock"), "XDG_RUNTIME_DIR": str(runtime),
                    "AGENT_LOG": str(root / "agents.jsonl")})
    yield root, work, env
    kill_all_and_remove(cli_for(env, work), root)


def _agents(root: Path) -> list[int]:
    return [int(r["text"]) for r in read_agent_log(root / "agents.jsonl", "start")]


def test_ctrl_c_while_the_session_loads_stops_the_agents_started_ahead(project):
    root, work, env = project
    hook = root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SLOW_SESSION)
    env = {**env, "PYTHONPATH": f"{hook}:{ROOT}", "CHORAGOS_TEST_SLOW_SESSION": "4"}
    serving = subprocess.Popen([sys.executable, "-m", "choragos", "serve", "--detach"],
                               cwd=work, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # All three run while the server is still held at the session's modules.
        wait_until(lambda: len(_agents(root)) == 3, 3.5,
                   message="the agents started ahead of the session")
        serving.send_signal(signal.SIGINT)
        out, err = serving.communicate(timeout=90)
    finally:
        if serving.poll() is None:
            serving.kill()
    assert serving.returncode == 130, err
    assert "interrupted; the session it was starting was stopped" in err
    assert "Traceback" not in err + out
    assert not [pid for pid in _agents(root) if pid_alive(pid)]
    assert not (root / "s.sock").exists()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_serve_starts_no_process_but_its_agents(project):
    """No git, no ``uname``, no ``ldconfig``: from ``serve`` typed to the
    session up and its start role booted, the only programs run are the client
    itself and one agent per role, and the agents start without a copy (fork)
    of the server."""
    root, work, env = project
    trace, said = root / "execs.txt", root / "said.txt"
    with open(said, "w") as out:
        tracing = subprocess.Popen(["strace", "-f", "-qq", "-e", TRACED, "-o", str(trace),
                                    sys.executable, "-m", "choragos", "serve", "--detach"],
                                   cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        # strace follows the server, so it ends once the session does.
        wait_until(lambda: "session started" in said.read_text(), 60, message="the session up")
        cli_for(env, work)("kill", "--all")
        tracing.wait(timeout=60)
    finally:
        if tracing.poll() is None:
            tracing.kill()
    lines = trace.read_text().splitlines()
    programs = [line.split('"')[1] for line in lines
                if 'execve("' in line and "= -1" not in line]
    assert programs == [sys.executable] * (1 + 3), programs  # the client, the 3 agents
    if ptyspawn.NATIVE is not None:
        # Copies of a process (not a thread, not posix_spawn's vfork): only the
        # daemon's double fork; the agents start without a copy of the server.
        copies = [line for line in lines if line.split(" ", 1)[1].startswith(("clone", "fork"))
                  and "CLONE_VM" not in line and "resumed" not in line]
        assert len(copies) == 2, copies
