"""A private sshd and a project whose roles run on it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.integration.harness import AGENT, Serve, role_toml
from tests.remote import sshd

ORCH = role_toml("orchestrator", start=True)
ACCOUNTS_PER_WORKER = 4


@pytest.fixture
def ssh_server(short_tmp: Path) -> Iterator[sshd.Server]:
    """An sshd on a loopback port for an account of its own; skips, saying
    why, where this machine cannot host one (CI runs as root: it runs these)."""
    with _account() as account:
        try:
            server = sshd.start(short_tmp / "sshd", account)
        except sshd.Unavailable as exc:
            pytest.skip(str(exc))
        server.run("sh", "-c", "rm -rf ~/.choragos-remote ~/choragos-work ~/agent.py")
        copied = server.run("sh", "-c", "cat > ~/agent.py", stdin=AGENT.read_text())
        assert copied.returncode == 0, copied.stderr
        yield server
        server.run("sh", "-c", "rm -rf ~/.choragos-remote ~/choragos-work", timeout=20)
        server.stop()


@contextlib.contextmanager
def _account() -> Iterator[str]:
    """An account no other test uses meanwhile, held by a lock for the test.

    What one test's agents run there is never seen (or removed) by a test
    beside it: another xdist worker, or another pytest run on the same
    machine (several clones of the project may test at once).  A few names
    per worker, reused from run to run, so the accounts do not pile up.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    for number in range(ACCOUNTS_PER_WORKER):
        name = f"{sshd.ACCOUNT}-{worker}-{number}"
        with open(f"/tmp/{name}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            yield name
            return
    pytest.skip(f"all {ACCOUNTS_PER_WORKER} remote test accounts of worker {worker} are "
                "in use by other test runs")


@pytest.fixture
def shared_log() -> Iterator[Path]:
    """An agent log both accounts can append to (the fixture agents' record)."""
    folder = Path(tempfile.mkdtemp(prefix="chg-log-", dir="/tmp"))
    folder.chmod(0o777)
    log = folder / "agents.jsonl"
    log.touch()
    log.chmod(0o666)
    yield log
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def host_toml(server: sshd.Server, name: str = "box") -> str:
    return (f"[hosts.{name}]\nssh = {server.destination!r}\n"
            f"ssh_args = [\"-F\", {str(server.config)!r}]\n").replace("'", '"')


def remote_role(server: sshd.Server, name: str, *flags: str, host: str = "box",
                **keys: object) -> str:
    """A fixture agent run on ``server``'s account (its copy in that home)."""
    lines = ["[[roles]]", f'name = "{name}"', 'command = "python3"',
             f"args = {json.dumps([str(server.home / 'agent.py'), *flags])}",
             f'host = "{host}"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def remote_session(short_tmp: Path, ssh_server, shared_log):
    """``make(roles)``: a session with the host ``box`` and an orchestrator; at
    the end it stops cleanly, leaving nothing here nor on the remote account."""
    made: list[Serve] = []

    def make(roles: str, env: dict[str, str] | None = None,
             setup: Callable[[Serve], None] | None = None) -> Serve:
        work = short_tmp / "work"
        work.mkdir()
        s = Serve(work, host_toml(ssh_server) + ORCH + roles, sock=short_tmp / "s.sock")
        s.agent_log = shared_log
        s.env.update(AGENT_LOG=str(shared_log), **(env or {}))
        if setup is not None:
            setup(s)
        made.append(s)
        return s.start()

    yield make
    for one in made:
        assert one.stop() == 0, one.stderr()
        one.assert_no_leftovers()
        control = one.sock.with_name(f"{one.sock.stem}.box.ssh")
        left = subprocess.run(["pgrep", "-f", str(control)], capture_output=True, text=True)
        assert left.stdout == "", f"ssh processes left here: {left.stdout.split()}"
    # A process just killed there may take a moment to be reaped.
    wait_until(lambda: ssh_server.processes() == [], 10,
               message="no process left on the remote host")


def checkout_there(server: sshd.Server, s: Serve, role: str) -> str:
    """Where ``role``'s checkout is on ``server`` (the default workdir)."""
    from choragos.actors.remoteseats import session_id

    return f"{server.home}/choragos-work/{s.workdir.name}-{session_id(s.workdir)[:8]}/{role}"


def kill_master(s: Serve) -> None:
    """The session's master connection to ``box`` killed outright: the connection drops."""
    control = s.sock.with_name(f"{s.sock.stem}.box.ssh")
    masters = subprocess.run(["pgrep", "-f", f"{control} -M"],
                             capture_output=True, text=True).stdout.split()
    assert len(masters) == 1, masters
    subprocess.run(["kill", "-9", masters[0]], check=True)
