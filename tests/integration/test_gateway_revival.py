"""A built-in gateway given up is tried again after a cool-down, for real.

A real ``serve --headless`` with its own gateway process and a fake model
upstream.  The test makes the gateway crash-loop with a real fault: it
kills the gateway and takes its port, so each new gateway fails to listen
("Address already in use"), until its supervisor gives it up.  The give-up
is said (server log, event, the ``on_exit`` hook as the part ``gateway``);
work is refused (fail-closed); the session's timers try again after the
cool-down (shortened for the test with ``CHORAGOS_TEST_GATEWAY_COOLDOWN``)
and, with the port still taken, give it up again with a doubled wait; once
the test lets the port go the next try brings it back: the gate opens, a
delegation refused before is handed out and done, and the counts go on
from where they were.
"""

from __future__ import annotations

import os
import signal
import socket

import pytest

from tests.e2e.fakemodel import FakeModel
from tests.integration.gatewayfakes import free_port, metric, tokens
from tests.integration.harness import role_toml
from tests.integration.test_builtin_gateway import (
    CLAUDE_USAGE,
    _alive,
    _environ,
    _gateway,
    _messages,
    _roles,
    _status,
)
from tests.integration.webclient import WEB, Web

HOOK = ('[ui]\non_exit = \'echo "$CHORAGOS_ROLE $CHORAGOS_EXITED=$CHORAGOS_PART: '
        '$CHORAGOS_EXIT" >> hook.out\'\n')
COOLDOWN = 1.0  # the first wait, for the test (the product's is 30 s)


def _of(s, kind: str, **fields: object) -> list[dict]:
    return [e for e in s.events() if e["event"] == kind
            and all(e.get(k) == v for k, v in fields.items())]


def _take_port(s, port: int) -> socket.socket:
    """Kill the running gateway and bind its port before the next one does:
    the crash loop's fault, which the test ends by closing the socket."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def taken() -> bool:
        for started in _of(s, "gateway started"):
            if _alive(started["pid"]):
                os.kill(started["pid"], signal.SIGKILL)
        try:
            holder.bind(("127.0.0.1", port))
        except OSError:
            return False  # a new gateway has it: killed at the next look
        holder.listen()
        return True

    s.wait(taken, 30, message="the gateway's port taken")
    return holder


@pytest.mark.timeout(180)
def test_a_given_up_gateway_is_tried_again_after_a_cool_down_and_work_flows(serve):
    from choragos.actors.session import GATEWAY_INTENSITY

    port = free_port()
    with FakeModel(usage=CLAUDE_USAGE) as claude:
        s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
                  + _gateway(port, anthropic=claude.base_url) + HOOK + WEB,
                  env={"CHORAGOS_TEST_GATEWAY_COOLDOWN": f"{COOLDOWN:g}"})
        s.wait_booted(["orchestrator", "coder"])
        s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on")
        web = Web(s)
        url = _environ(_roles(s)["coder"]["pid"])["ANTHROPIC_BASE_URL"]
        _messages(url)
        s.wait(lambda: _roles(s)["coder"]["tokens"]["input"] == 1200, message="first tokens")

        holder = _take_port(s, port)
        try:
            given = s.wait_event(lambda e: e["event"] == "actor given up"
                                 and e["supervisor"] == "builtin-gateway", 60, "given up")
            assert given["actor"] == "gateway-server"
            hook = s.workdir / "hook.out"
            s.wait(lambda: hook.exists() and hook.read_text(), message="the on_exit hook")
            assert hook.read_text().splitlines()[0] == (
                "gateway part=gateway: given up after repeated failures")
            assert "work is held" in s.stderr() and "next try in 1s" in s.stderr()
            s.wait(lambda: _status(s)["gateway"] == "down", message="gateway down")
            assert web.get("/api/status").json()["gateway"] == "down"
            out = s.cli("delegate", "--to", "coder", "--task", "held work")
            assert out.returncode == 1 and "dispatch refused: gateway down" in out.stderr
            assert "T1" not in s.board()

            # The port still taken: the try after the cool-down fails as often
            # as its fresh allowance lets it, and the next wait doubles.
            s.wait(lambda: len(_of(s, "gateway retry scheduled")) >= 2, 60,
                   message="a second give-up")
            tried = _of(s, "actor restarted", actor="builtin-gateway")
            assert tried and tried[0]["on"] == "cool-down" and tried[0]["supervisor"] == "session"
            failed = _of(s, "actor restarted", supervisor="builtin-gateway")
            assert len(failed) >= 2 * GATEWAY_INTENSITY
            before = len(_of(s, "gateway started"))
        finally:
            holder.close()

        # The fault gone: the next try brings it back, and the gate opens.
        back = s.wait(lambda: _of(s, "gateway started")[before:], 60,
                      message="the gateway back")[0]
        s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on again")
        assert web.get("/api/status").json()["gateway"] == "on"
        waits = [e["after"] for e in _of(s, "gateway retry scheduled")]
        assert waits[:2] == [COOLDOWN, 2 * COOLDOWN], waits
        assert len(_of(s, "actor restarted", actor="builtin-gateway")) == len(waits)
        out = s.cli("delegate", "--to", "coder", "--task", "held work")
        assert out.returncode == 0, out.stderr
        s.wait(lambda: s.board().get("T1", {}).get("state") == "done", 30, message="T1 done")

        # The counts go on from the first gateway's, in the gateway and in status.
        _messages(url)
        gateway = f"http://127.0.0.1:{port}"
        assert tokens(gateway)["coder"]["claude-test-1"]["input"] == 2400
        assert metric(gateway, "sphragis_requests_total", agent="coder", api="anthropic",
                      code="200") == 2
        s.wait(lambda: _roles(s)["coder"]["tokens"]["input"] == 2400, message="cumulative")
        assert _alive(back["pid"])


@pytest.mark.timeout(120)
def test_the_operator_restarts_a_given_up_gateway_at_once(serve):
    """A port taken from the start: the gateway is given up and its next try is
    far off (the product's waits); ``choragos restart --gateway`` tries now,
    and says plainly when there is nothing to restart."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
                  + _gateway(port) + HOOK)
        s.wait_event(lambda e: e["event"] == "actor given up"
                     and e["supervisor"] == "builtin-gateway", 60, "given up")
        scheduled = s.wait_event(lambda e: e["event"] == "gateway retry scheduled",
                                 message="the next try")
        assert scheduled["after"] == 30
        s.wait_booted(["orchestrator", "coder"])
        out = s.cli("delegate", "--to", "coder", "--task", "held work")
        assert out.returncode == 1 and "dispatch refused: gateway down" in out.stderr

    out = s.cli("restart", "--gateway")
    assert out.returncode == 0, out.stderr
    assert "the built-in gateway is being started again" in out.stdout
    tried = s.wait_event(lambda e: e["event"] == "actor restarted"
                         and e["actor"] == "builtin-gateway", message="the operator's try")
    assert tried["on"] == "operator" and "did not start" in tried["error"]
    s.wait_event(lambda e: e["event"] == "gateway started", 30, "the gateway started")
    s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on")
    out = s.cli("delegate", "--to", "coder", "--task", "held work")
    assert out.returncode == 0, out.stderr
    s.wait(lambda: s.board().get("T1", {}).get("state") == "done", 30, message="T1 done")

    # Nothing given up: one sentence, and nothing changes.
    out = s.cli("restart", "--gateway")
    assert out.returncode == 1 and "the built-in gateway is not given up" in out.stderr
    assert len(_of(s, "actor restarted", actor="builtin-gateway")) == 1
    out = s.cli("restart", "--gateway", "coder")
    assert out.returncode == 2 and "give a role or --gateway, not both" in out.stderr
