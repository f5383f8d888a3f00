"""``choragos gateway`` run standalone, as a user runs it for several sessions."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest

from choragos.gateway.counts import load
from tests.e2e.fakemodel import FakeModel
from tests.integration.gatewayfakes import free_port, request, tokens
from tests.integration.harness import ROOT, base_env

pytestmark = pytest.mark.timeout(60)


def _gateway(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "choragos", "gateway", *args], cwd=ROOT,
                            env=base_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _ended(proc: subprocess.Popen, timeout: float) -> tuple[int, str]:
    """The gateway's exit code and what it wrote to stderr, its pipes closed."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, err


def test_standalone_gateway_serves_counts_and_stops_on_sigterm():
    port = free_port()
    with FakeModel() as fake:
        proc = _gateway("--addr", f"127.0.0.1:{port}", "--anthropic", fake.base_url)
        try:
            assert proc.stdout.readline() == f"listening 127.0.0.1:{port}\n"
            for role in ("a", "b"):
                status, _, _ = request(f"http://127.0.0.1:{port}/agent/{role}/v1/messages",
                                       body={"model": "m", "messages": [], "stream": True},
                                       headers={"x-api-key": "sk-secret-key"})
                assert status == 200
            counted = tokens(f"http://127.0.0.1:{port}")
            assert counted["a"]["m"]["input"] == counted["b"]["m"]["input"] == 120
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                raw.sendall(b"GET /agent/a/\x1b[31mred HTTP/1.1\r\nHost: x\r\n\r\n")
                assert raw.recv(100).startswith(b"HTTP/1.1 404")
        finally:
            proc.send_signal(signal.SIGTERM)
            code, log = _ended(proc, 10)
        assert code == 0
        assert "a anthropic POST /agent/a/v1/messages -> 200" in log
        assert "sk-secret-key" not in log
        assert "\x1b" not in log and "/agent/a/\\x1b[31mred -> 404" in log


def test_a_taken_port_and_bad_arguments_are_clear_errors():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _ended(_gateway("--addr", f"127.0.0.1:{port}"), 20)
        assert code == 1
        assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in err
    code, err = _ended(_gateway("--addr", "nowhere", "--openai", "ftp://x"), 20)
    assert code == 2 and "--addr" in err
    code, err = _ended(_gateway("--openai", "https://user:pw@example.com"), 20)
    assert code == 2 and "no credentials in the URL" in err


def test_a_standalone_gateway_with_a_state_file_keeps_its_counts_across_a_kill(short_tmp):
    port = free_port()
    state = short_tmp / "counts.json"
    url = f"http://127.0.0.1:{port}"
    with FakeModel() as fake:
        for expected in (120, 240):
            proc = _gateway("--addr", f"127.0.0.1:{port}", "--anthropic", fake.base_url,
                            "--state", str(state))
            try:
                assert proc.stdout.readline() == f"listening 127.0.0.1:{port}\n"
                status, _, _ = request(f"{url}/agent/a/v1/messages",
                                       body={"model": "m", "messages": [], "stream": True})
                assert status == 200
            finally:
                proc.kill()  # right after the answer: nothing else gets a chance to save
                _ended(proc, 10)
            kept = load(state)
            assert kept["tokens"] == {("a", "m", "input"): expected,
                                      ("a", "m", "output"): expected // 10}
            assert kept["requests"] == {("a", "anthropic", "200"): expected // 120}
        proc = _gateway("--addr", f"127.0.0.1:{port}", "--state", str(state))
        try:
            assert proc.stdout.readline() == f"listening 127.0.0.1:{port}\n"
            assert tokens(url)["a"]["m"]["input"] == 240
        finally:
            proc.send_signal(signal.SIGTERM)
            assert _ended(proc, 10)[0] == 0
    assert state.stat().st_mode & 0o777 == 0o600


def test_a_state_file_that_is_not_a_counts_file_is_refused_and_left_alone(short_tmp):
    state = short_tmp / "notes.txt"
    state.write_text("my notes\n")
    code, err = _ended(_gateway("--addr", f"127.0.0.1:{free_port()}", "--state", str(state)), 20)
    assert code == 1
    assert f"--state {state}: not a choragos gateway counts file (not JSON)" in err
    assert state.read_text() == "my notes\n"


def test_a_sessions_gateway_with_an_unreadable_file_starts_from_the_sessions_totals(short_tmp):
    port = free_port()
    state = short_tmp / "counts.jsonl"
    state.write_text("garbage\n")
    proc = subprocess.Popen([sys.executable, "-m", "choragos", "gateway", "--session",
                             "--addr", f"127.0.0.1:{port}", "--state", str(state)],
                            cwd=ROOT, env=base_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(json.dumps({"key": "ab" * 32,
                                     "totals": {"coder": {"m": {"input": 700}}}}) + "\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == f"listening 127.0.0.1:{port}\n"
        assert tokens(f"http://127.0.0.1:{port}") == {
            "coder": {"m": {"input": 700, "output": 0, "cache_read": 0, "cache_creation": 0}}}
        assert load(state)["tokens"] == {("coder", "m", "input"): 700}
    finally:
        code, err = _ended(proc, 10)  # its stdin closed: the session's end, the gateway goes
    assert code == 0
    assert "unreadable (not a choragos gateway counts file (not JSON))" in err
