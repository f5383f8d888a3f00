"""A remote role through its host's outage: held, not failed; back when the host is.

Real sshd, real ssh: the host's outage is its sshd stopped with every
process of its account (a host that reboots: its port refuses meanwhile),
its return the same sshd started again on the same port.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.harness import Serve
from tests.remote.conftest import kill_master, remote_role

pytestmark = pytest.mark.timeout(300)


def _role(s: Serve, name: str) -> dict:
    out = s.cli("status", "--json")
    assert out.returncode == 0, out.stderr
    return next(r for r in json.loads(out.stdout)["roles"] if r["name"] == name)


def _held(s: Serve, role: str) -> list[dict]:
    return [e for e in s.events() if e["event"] == "role held" and e["role"] == role]


def test_an_outage_holds_the_role_and_its_task_is_done_when_the_host_is_back(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--work", "6", "--cli",
                                   "choragos", restart="on-failure")
                       + remote_role(ssh_server, "helper", "--worker", "--cli", "choragos",
                                     restart="always"))
    s.wait_booted(["orchestrator", "coder", "helper"], timeout=60)
    assert s.cli("delegate", "--to", "coder", "--task", "through the outage").returncode == 0
    s.wait(lambda: any("T1.md" in line for line in s.submitted("coder")), 30,
           message="the task typed into the agent there")
    ssh_server.stop()
    try:
        [held] = s.wait(lambda: _held(s, "coder"), 60, message="coder held")
        assert held["reason"] == "host unreachable" and "box" in held["host"], held
        s.wait(lambda: _held(s, "helper"), 60, message="helper held too")
        role = _role(s, "coder")
        assert role["state"] == "exited" and "held: host" in role["marks"], role
        assert role["detail"].startswith("held: host unreachable: box"), role
        assert "next try at" in role["detail"], role
        first = role["detail"]
        # Probed again (the next try moved on): still one outage, one event.
        s.wait(lambda: _role(s, "coder")["detail"] != first, 30,
               message="a second probe of the host")
        assert len(_held(s, "coder")) == 1 and len(_held(s, "helper")) == 1
        for name in ("coder", "helper"):
            role = _role(s, name)
            assert role["restarts"] == 0 and role["state"] == "exited", role
        assert s.board()["T1"]["state"] == "delivered"
        assert not [e for e in s.events() if e["event"] == "task failed"]
    finally:
        ssh_server.again()
    back = s.wait_event(lambda e: e["event"] == "host answered" and e["role"] == "coder", 60)
    assert back["lasted"] > 0, back
    s.wait_event(lambda e: e["event"] == "host answered" and e["role"] == "helper", 60)
    s.wait(lambda: s.board()["T1"]["state"] == "done", 90, message="T1 done after the outage")
    role = _role(s, "coder")
    assert role["restarts"] == 0 and "held: host" not in role["marks"], role
    assert len(_held(s, "coder")) == 1 and len(_held(s, "helper")) == 1
    assert s.cli("delegate", "--to", "helper", "--task", "after the outage").returncode == 0
    s.wait(lambda: s.board()["T2"]["state"] == "done", 60, message="T2 done by helper")
    typed = [line for line in s.submitted("coder") if "T1.md" in line]
    assert len(typed) == 2, typed  # once before the outage, once to the agent after it


def test_a_login_the_host_turns_away_is_held_not_probed_until_a_restart(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--cli", "choragos",
                                   restart="on-failure"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    keys = ssh_server.home / ".ssh" / "authorized_keys"
    authorized = keys.read_text()
    keys.write_text("")
    try:
        # The connection drops: the next one is turned away at the login.
        kill_master(s)
        lost, held = s.wait(lambda: _held(s, "coder")[1:] and _held(s, "coder"), 60,
                            message="coder held, then refused")
        assert lost["reason"] == "host unreachable", lost
        assert held["reason"] == "host refused the login", held
        assert "Permission denied" in held["said"] and held["next_try"] == "", held
        role = _role(s, "coder")
        assert "fix the login" in role["detail"] and "next try" not in role["detail"], role
        assert role["state"] == "exited" and role["restarts"] == 0, role
        # A mark of its own (not the probed host's `held: host`), on `status`'s line too.
        assert "held: login" in role["marks"] and "held: host" not in role["marks"], role
        line = next(row for row in s.cli("status").stdout.splitlines() if "coder" in row)
        assert "held: login" in line, line
    finally:
        keys.write_text(authorized)
    # Fixed: nothing retries it by itself; the operator's restart does, at once.
    assert s.cli("restart", "coder").returncode == 0
    s.wait_event(lambda e: e["event"] == "host answered" and e["role"] == "coder", 60)
    assert len(_held(s, "coder")) == 2
    assert not {"held: login", "held: host"} & set(_role(s, "coder")["marks"])
    assert s.cli("delegate", "--to", "coder", "--task", "after the fix").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "done", 60, message="T1 done")


def test_a_shutdown_during_a_hold_ends_cleanly(remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--cli", "choragos",
                                   restart="on-failure"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    ssh_server.stop()
    try:
        s.wait(lambda: _held(s, "coder"), 60, message="coder held")
        assert s.stop() == 0, s.stderr()
        # Nothing here waits for the host: no probe, no cleanup, no master left.
        left = subprocess.run(["pgrep", "-f", str(ssh_server.config)], capture_output=True,
                              text=True)
        assert left.stdout == "", f"ssh processes left here: {left.stdout.split()}"
        assert "Traceback" not in s.stderr()
    finally:
        ssh_server.again()
