"""A real ``serve --headless`` running its own gateway (``[gateway] builtin = true``).

The fake model servers are the upstreams; the test plays each role's agent
by sending requests to the URL that role was started with, so what is
checked is the whole chain: routing per seat, streaming through the
gateway's own process, usage on ``/metrics``, in ``choragos status`` and in
``choragos report``; and the gateway's death closing the fail-closed gate
until the supervisor has it back.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from choragos.gateway.counts import session_path, whole_file
from choragos.gateway.roles import KEY_ENV, KEY_HEADER
from tests.e2e.fakegemini import FakeGemini
from tests.e2e.fakemodel import FakeModel, Usage, read_sse
from tests.e2e.fakeopenai import FakeOpenAI
from tests.integration.gatewayfakes import free_port, metric, request, tokens
from tests.integration.harness import AGENT, role_toml

pytestmark = pytest.mark.timeout(120)

CLAUDE_USAGE = Usage(input_tokens=1200, output_tokens=300, cache_creation_input_tokens=40,
                     cache_read_input_tokens=50)
OPENAI_USAGE = Usage(input_tokens=800, output_tokens=70, cache_read_input_tokens=100)
GEMINI_USAGE = Usage(input_tokens=600, output_tokens=20, cache_read_input_tokens=0)


def _wrapper(bindir: Path, name: str) -> Path:
    """A program called ``name`` (so it gets that CLI's profile) that records its
    arguments and then runs the fixture agent."""
    path = bindir / name
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{bindir}/{name}.args"\n'
                    f'exec "{sys.executable}" "{AGENT}"\n')
    path.chmod(0o755)
    return path


def _seat(name: str, command: Path) -> str:
    return f'[[roles]]\nname = "{name}"\ncommand = "{command}"\n'


def _gateway(port: int, **upstreams: str) -> str:
    lines = "".join(f'{api} = "{url}"\n' for api, url in upstreams.items())
    return (f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
            f"[gateway.upstream]\n{lines}")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _status(s) -> dict:
    out = s.cli("status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _roles(s) -> dict[str, dict]:
    return {r["name"]: r for r in _status(s)["roles"]}


def _messages(url: str) -> None:
    body = {"model": "claude-test-1", "max_tokens": 50, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}
    status, _, raw = request(f"{url}/v1/messages", body=body,
                             headers={"x-api-key": "sk-ant-test-000"})
    assert status == 200 and read_sse(raw)[-1][0] == "message_stop"


def test_a_mixed_team_is_routed_and_counted_in_metrics_status_and_report(serve, short_tmp):
    bindir = short_tmp / "bin"
    bindir.mkdir()
    port = free_port()
    with (FakeModel(usage=CLAUDE_USAGE) as claude, FakeOpenAI(usage=OPENAI_USAGE) as openai,
          FakeGemini(usage=GEMINI_USAGE) as gemini):
        s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
                  + _seat("reviewer", _wrapper(bindir, "gemini"))
                  + _seat("tester", _wrapper(bindir, "codex"))
                  + _gateway(port, anthropic=claude.base_url, openai=openai.base_url,
                             gemini=gemini.base_url)
                  + '[pricing."claude-test"]\ninput = 3.0\noutput = 15.0\n')
        s.wait_booted(["orchestrator", "coder", "reviewer", "tester"])
        started = s.wait_event(lambda e: e["event"] == "gateway started", message="gateway")
        on = next(e for e in s.events() if e["event"] == "gateway on")
        assert on["reason"] == "[gateway] builtin = true" and on["enforced"]
        gateway = f"http://127.0.0.1:{port}"
        assert started["addr"] == f"127.0.0.1:{port}"
        s.wait_event(lambda e: e["event"] == "gateway up", message="gateway up")

        roles = _roles(s)
        coder_url = _environ(roles["coder"]["pid"])["ANTHROPIC_BASE_URL"]
        assert re.fullmatch(f"{gateway}/agent/coder/[0-9a-f]{{32}}", coder_url)
        reviewer_env = _environ(roles["reviewer"]["pid"])
        assert re.fullmatch(f"{gateway}/agent/reviewer/[0-9a-f]{{32}}",
                            reviewer_env["GOOGLE_GEMINI_BASE_URL"])
        assert "ANTHROPIC_BASE_URL" not in reviewer_env
        # Codex's command line is readable by anyone: its key travels in a header, from
        # a variable only its own user can read.
        tester_key = _environ(roles["tester"]["pid"])[KEY_ENV]
        codex_args = (bindir / "codex.args").read_text().splitlines()
        provider = f'base_url = "{gateway}/agent/tester/v1"'
        assert codex_args[0] == "-c" and provider in codex_args[1]
        assert f'env_http_headers = {{ "{KEY_HEADER}" = "{KEY_ENV}" }}' in codex_args[1]
        assert tester_key not in "".join(codex_args)
        assert codex_args[2:] == ["-c", 'model_provider="choragos"']

        # Each "agent" talks to the URL its seat was given.
        _messages(coder_url)
        _messages(coder_url)
        gemini_url = reviewer_env["GOOGLE_GEMINI_BASE_URL"]
        status, _, _ = request(f"{gemini_url}/v1beta/models/gemini-test:streamGenerateContent"
                               "?alt=sse", body={"contents": []})
        assert status == 200
        status, _, _ = request(f"{gateway}/agent/tester/v1/responses",
                               body={"model": "gpt-test", "stream": True, "input": []},
                               headers={KEY_HEADER: tester_key})
        assert status == 200

        claude_counts = {"input": 2400, "output": 600, "cache_read": 100, "cache_creation": 80}
        expected = {
            "coder": {"claude-test-1": claude_counts},
            "reviewer": {"gemini-test": {"input": 600, "output": 20, "cache_read": 0,
                                         "cache_creation": 0}},
            "tester": {"gpt-test": {"input": 800, "output": 70, "cache_read": 100,
                                    "cache_creation": 0}},
        }
        assert tokens(gateway) == expected
        roles = s.wait(lambda: (r := _roles(s))["tester"]["tokens"]["input"] and r,
                       message="tokens in status")
        assert roles["coder"]["tokens"] == claude_counts
        assert roles["coder"]["cost"] == pytest.approx((2400 * 3 + 600 * 15) / 1e6)
        assert roles["reviewer"]["tokens"]["output"] == 20
        # gemini-test is not in [pricing]: priced at its highest prices, said to be a guess.
        assert roles["reviewer"]["cost"] == pytest.approx((600 * 3 + 20 * 15) / 1e6)
        assert roles["reviewer"]["estimated"] == ["gemini-test"]
        assert roles["tester"]["tokens"]["cache_read"] == 100
        assert _status(s)["gateway"] == "on"
        # The last request, not yet scraped, still reaches the final snapshot at stop.
        _messages(coder_url)
        assert s.stop() == 0

    report = s.cli("report", "--json")
    assert report.returncode == 0, report.stderr
    by_role = {r["role"]: r["tokens"] for r in json.loads(report.stdout)["roles"]}
    assert by_role["coder"] == {"input": 3600, "output": 900, "cache_read": 150,
                                "cache_creation": 120, "total": 4770}
    assert by_role["tester"]["total"] == 800 + 70 + 100
    log = (s.workdir / ".choragos" / "logs" / "gateway.log").read_text()
    assert "coder anthropic POST /agent/coder/…/v1/messages -> 200" in log
    assert "sk-ant-test-000" not in log and coder_url.rsplit("/", 1)[1] not in log
    assert tester_key not in log
    assert not _alive(started["pid"]), "the gateway outlived its session"


def test_the_gateway_killed_mid_session_refuses_dispatch_until_it_is_back(serve):
    port = free_port()
    with FakeModel(usage=CLAUDE_USAGE) as claude:
        s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
                  + _gateway(port, anthropic=claude.base_url))
        s.wait_booted(["orchestrator", "coder"])
        first = s.wait_event(lambda e: e["event"] == "gateway started", message="gateway")
        s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on")
        url = _environ(_roles(s)["coder"]["pid"])["ANTHROPIC_BASE_URL"]
        _messages(url)
        s.wait(lambda: _roles(s)["coder"]["tokens"]["input"] == 1200, message="first tokens")

        # A hung gateway: the probe times out, and the gate closes.
        os.kill(first["pid"], signal.SIGSTOP)
        s.wait_event(lambda e: e["event"] == "gateway down", message="gateway down")
        out = s.cli("delegate", "--to", "coder", "--task", "refused")
        assert out.returncode == 1 and "dispatch refused: gateway down" in out.stderr
        assert "T1" not in s.board()

        # Killed: the supervisor starts another, seeded with the session's totals.
        os.kill(first["pid"], signal.SIGKILL)
        exited = s.wait_event(lambda e: e["event"] == "gateway exited", message="exit noticed")
        assert exited["pid"] == first["pid"] and exited["status"] == "killed by signal 9"
        s.wait_event(lambda e: e["event"] == "actor restarted"
                     and e["actor"] == "gateway-server", message="restarted")
        second = s.wait_event(lambda e: e["event"] == "gateway started"
                              and e["pid"] != first["pid"], message="a second gateway")
        s.wait(lambda: _status(s)["gateway"] == "on", message="gateway back on")
        out = s.cli("delegate", "--to", "coder", "--task", "resumed work")
        assert out.returncode == 0, out.stderr
        s.wait(lambda: s.board().get("T1", {}).get("state") == "done", message="T1 done")

        _messages(url)
        assert tokens(f"http://127.0.0.1:{port}")["coder"]["claude-test-1"]["input"] == 2400
        s.wait(lambda: _roles(s)["coder"]["tokens"]["input"] == 2400, message="cumulative")

        # Killed while up: the gate closes at once, before any probe.
        os.kill(second["pid"], signal.SIGKILL)
        s.wait_event(lambda e: e["event"] == "gateway exited" and e["pid"] == second["pid"],
                     message="second exit")
        # (A probe that times out on a loaded machine may close and reopen the
        # gate in between; the close that counts is the one the exit causes.)
        events = s.events()
        exit_at = next(i for i, e in enumerate(events) if e["event"] == "gateway exited"
                       and e["pid"] == second["pid"])
        closed = s.wait(lambda: next((e for e in s.events()[exit_at:]
                                      if e["event"] == "gateway down"), None),
                        message="the gate closed by the exit")
        assert closed["reason"] == "the built-in gateway exited (killed by signal 9)", closed
        s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on a third time")
        assert s.stop() == 0
    assert not _alive(second["pid"]) and not _alive(first["pid"])


def _alive(pid: int) -> bool:
    from tests.conftest import pid_alive
    return pid_alive(pid)


def test_a_gateway_that_cannot_start_leaves_the_session_up_and_fail_closed(serve):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
                  + _gateway(port))
        failed = s.wait_event(lambda e: e["event"] == "gateway failed", 30, "gateway failed")
        assert "did not start" in failed["reason"]
        s.wait_event(lambda e: e["event"] == "actor given up"
                     and e["actor"] == "gateway-server", 30, "given up")
        s.wait_booted(["orchestrator", "coder"])
        out = s.cli("delegate", "--to", "coder", "--task", "no gateway, no work")
        assert out.returncode == 1 and "dispatch refused: gateway down" in out.stderr
        assert s.cli("ping").returncode == 0
        log = (s.workdir / ".choragos" / "logs" / "gateway.log").read_text()
        assert "Address already in use" in log
        # One of the start's notices (serve's terminal, the deck's first
        # frame), not only the server's log, with where to read why.
        told = [line for line in s.stderr().splitlines()
                if line.startswith("choragos: the built-in gateway did not start: ")]
        assert len(told) == 1, s.stderr()
        assert told[0].endswith(".choragos/logs/gateway.log says why")


def test_a_gateway_that_dies_leaves_no_pipe_of_it_open(serve):
    # The session's pipes to a gateway that died were left to the garbage
    # collector; Python says so when asked, as here.
    s = serve(role_toml("orchestrator", start=True) + _gateway(free_port()),
              env={"PYTHONWARNINGS": "always::ResourceWarning"})
    first = s.wait_event(lambda e: e["event"] == "gateway started", message="gateway")
    os.kill(first["pid"], signal.SIGKILL)
    s.wait_event(lambda e: e["event"] == "gateway started" and e["pid"] != first["pid"],
                 message="a second gateway")
    assert s.stop() == 0
    assert "ResourceWarning" not in s.stderr()


def test_the_gateway_does_not_outlive_a_killed_session(short_tmp):
    from tests.conftest import wait_until
    from tests.integration.harness import Serve

    work = short_tmp / "work"
    work.mkdir()
    s = Serve(work, role_toml("orchestrator", start=True) + _gateway(free_port()),
              sock=short_tmp / "s.sock").start()
    try:
        started = s.wait_event(lambda e: e["event"] == "gateway started", message="gateway")
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait(10)
        # Its stdin is a pipe from the session: closed by the kernel, it is the cue to go.
        wait_until(lambda: not _alive(started["pid"]), 30, message="the gateway to exit")
    finally:
        for pid in s.agent_pids():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_budget_is_crossed_by_real_traffic_through_the_builtin_gateway(serve):
    port = free_port()
    # $1 per million input tokens: each reply below costs $0.40.
    with FakeModel(usage=Usage(input_tokens=400_000, output_tokens=0)) as claude:
        s = serve(role_toml("orchestrator", start=True)
                  + role_toml("coder", budget="1.00", budget_action="pause")
                  + _gateway(port, anthropic=claude.base_url)
                  + '[pricing."claude-test"]\ninput = 1.0\n')
        s.wait_booted(["orchestrator", "coder"])
        s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on")
        url = _environ(_roles(s)["coder"]["pid"])["ANTHROPIC_BASE_URL"]
        _messages(url)
        _messages(url)
        s.wait(lambda: _roles(s)["coder"]["cost"] == pytest.approx(0.80), message="$0.80")
        assert _roles(s)["coder"]["state"] != "paused"
        assert not [e for e in s.events() if e["event"] == "over budget"]
        _messages(url)
        over = s.wait_event(lambda e: e["event"] == "over budget", message="over budget")
        assert over["role"] == "coder" and over["cost"] == pytest.approx(1.20)
        s.wait(lambda: _roles(s)["coder"]["state"] == "paused", message="coder paused")
        assert _roles(s)["coder"]["budget"]["over"] is True


def test_tokens_answered_just_before_the_gateway_is_killed_are_all_kept(short_tmp):
    from tests.conftest import wait_until
    from tests.integration.harness import Serve

    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    work = short_tmp / "work"
    work.mkdir()
    # An older session's counts: the new session must not start from them.
    counts = session_path(work)
    counts.parent.mkdir(parents=True, mode=0o700)
    counts.write_text(whole_file({"tokens": {("coder", "claude-test-1", "input"): 999_999}}))
    with FakeModel(usage=CLAUDE_USAGE) as claude:
        s = Serve(work, role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
                  + _gateway(port, anthropic=claude.base_url),
                  sock=short_tmp / "s.sock").start()
        try:
            first = s.wait_event(lambda e: e["event"] == "gateway started", message="gateway")
            s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on")
            url = _environ(_roles(s)["coder"]["pid"])["ANTHROPIC_BASE_URL"]
            _messages(url)
            s.wait(lambda: _roles(s)["coder"]["tokens"]["input"] == 1200, message="scraped")

            # The session frozen, nothing scrapes /metrics: the last two answers are
            # known to the gateway alone when it dies, right after the second one.
            os.kill(s.proc.pid, signal.SIGSTOP)
            try:
                _messages(url)
                _messages(url)
                os.kill(first["pid"], signal.SIGKILL)
                wait_until(lambda: not _alive(first["pid"]), 10, message="the gateway dead")
            finally:
                os.kill(s.proc.pid, signal.SIGCONT)

            s.wait_event(lambda e: e["event"] == "gateway started" and e["pid"] != first["pid"],
                         message="a second gateway")
            claude_counts = {"input": 3600, "output": 900, "cache_read": 150,
                             "cache_creation": 120}
            assert tokens(gateway) == {"coder": {"claude-test-1": claude_counts}}
            assert metric(gateway, "sphragis_requests_total", agent="coder",
                             api="anthropic", code="200") == 3
            s.wait(lambda: _roles(s)["coder"]["tokens"] == claude_counts,
                   message="every token in status")
            assert counts.stat().st_mode & 0o777 == 0o600
            assert counts.parent.stat().st_mode & 0o777 == 0o700
        finally:
            assert s.stop() == 0, s.stderr()
            s.assert_no_leftovers()
    report = s.cli("report", "--json")
    by_role = {r["role"]: r["tokens"] for r in json.loads(report.stdout)["roles"]}
    assert by_role["coder"]["total"] == 3600 + 900 + 150 + 120


def test_a_flood_of_made_up_roles_does_not_close_the_fail_closed_gate(serve):
    """The attack that stopped a crew: ~7,000 requests for made-up roles, from anyone
    who can reach the port. Before, each made a /metrics series; past 1 MiB the probe
    refused the page, the gateway counted as down, and fail-closed refused all work."""
    import http.client

    port = free_port()
    with FakeModel(usage=CLAUDE_USAGE) as claude:
        s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
                  + _gateway(port, anthropic=claude.base_url))
        s.wait_booted(["orchestrator", "coder"])
        s.wait(lambda: _status(s)["gateway"] == "on", message="gateway on")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        try:
            for n in range(7_000):
                conn.request("POST", f"/agent/made-up-{n}/nothing", body=b"{}")
                response = conn.getresponse()
                response.read()
                assert response.status in (403, 404)  # refused: no key for such a role
        finally:
            conn.close()
        # A real answer after the flood: once the session shows its tokens, a probe
        # has read the page since.
        _messages(_environ(_roles(s)["coder"]["pid"])["ANTHROPIC_BASE_URL"])
        s.wait(lambda: _roles(s)["coder"]["tokens"]["input"] == 1200, 20, "a probe after it")
        assert _status(s)["gateway"] == "on"
        assert not [e for e in s.events() if e["event"] == "gateway down"
                    and "metrics" in e.get("reason", "")]
        out = s.cli("delegate", "--to", "coder", "--task", "still at work")
        assert out.returncode == 0, out.stderr
        assert metric(f"http://127.0.0.1:{port}", "sphragis_requests_total",
                      agent="(unknown)", code="403") == 7_000
