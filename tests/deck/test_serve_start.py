"""``serve``'s way up: the processes it starts on the way are counted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.terminal import ptyspawn
from tests.conftest import wait_until
from tests.deck.conftest import cli_for, kill_all_and_remove, scratch_project
from tests.integration.harness import read_agent_log

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(shutil.which("strace") is None,
                                 reason="strace is not installed (.ci/run installs it)")]

TRACED = "trace=execve,clone,clone3,fork,vfork"


@pytest.fixture
def project():
    root, work, env = scratch_project()
    yield root, work, env
    kill_all_and_remove(cli_for(env, work), root)


def _agents(root: Path) -> list[int]:
    return [int(r["text"]) for r in read_agent_log(root / "agents.jsonl", "start")]


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
        # At most the daemon's double fork (inside a long test run strace has
        # been seen to show none of them); a fork per agent would be five.
        assert len(copies) <= 2, copies
