"""A real ``serve`` whose listener dies more often than the session
supervisor allows: the session stops cleanly (exit status, log line, socket
gone, agents gone), its state kept, and ``serve --resume`` brings the board
back.  The accept loop is killed through the session's test hook."""

from __future__ import annotations

import signal

import pytest

from choragos.actors.session import SESSION_INTENSITY
from choragos.board import journal
from tests.conftest import pid_alive, wait_until
from tests.integration.harness import role_toml

TEAM = role_toml("orchestrator", start=True) + role_toml("coder", "--worker")


def _deaths(s) -> int:
    return sum(e["event"] == "socket: accept loop died" for e in s.events())


def _restarts(s) -> int:
    return sum(e["event"] == "actor restarted" and e.get("actor") == "listener"
               for e in s.events())


@pytest.mark.timeout(180)
def test_a_listener_over_the_intensity_stops_the_session_cleanly_and_resumably(serve):
    s = serve(TEAM, env={"CHORAGOS_TEST_FAULTS": "accept-loop"})
    s.wait_booted(["orchestrator", "coder"])
    out = s.cli("delegate", "--to", "coder", "--task", "survive the give-up")
    assert out.returncode == 0, out.stderr
    assert list(s.board()) == ["T1"]
    pids = s.agent_pids()
    assert len(pids) == 2

    for death in range(1, SESSION_INTENSITY + 1):  # each one restarted, clients served again
        s.proc.send_signal(signal.SIGUSR2)
        s.wait(lambda d=death: _restarts(s) == d, 15, f"listener restart {death}")
        s.wait(lambda: s.cli("ping", timeout=10).returncode == 0, 15, f"ping after {death}")
    assert _deaths(s) == SESSION_INTENSITY

    s.proc.send_signal(signal.SIGUSR2)  # one more within the period: the tree gives up
    status = s.proc.wait(60)
    assert status == 1, s.stderr()
    stderr = s.stderr()
    assert "the session is stopping: supervisor session gave up: listener failed" in stderr
    assert "session stopped: supervisor session gave up" in stderr
    gave_up = [e for e in s.events() if e["event"] == "session gave up"]
    assert len(gave_up) == 1 and "listener" in gave_up[0]["reason"]
    given = [e for e in s.events() if e["event"] == "actor given up"]
    assert [e["actor"] for e in given] == ["listener"]
    assert s.events()[-1]["event"] == "deck stopped"
    assert not s.sock.exists()
    wait_until(lambda: not [p for p in pids if pid_alive(p)], 10, message="agents gone")

    kept = journal.load(journal.state_dir(s.workdir)).tasks  # what the stop left on disk
    assert list(kept) == ["T1"]
    before = kept["T1"]

    s.start(args=("--resume",))
    after = s.board()
    assert list(after) == ["T1"]
    assert (after["T1"]["role"], after["T1"]["state"]) == (before["role"], before["state"])
    assert any(e["event"] == "session resumed" for e in s.events())
