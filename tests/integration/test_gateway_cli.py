"""``choragos gateway`` run standalone, as a user runs it for several sessions."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from tests.e2e.fakemodel import FakeModel
from tests.integration.gatewayfakes import free_port, request, tokens
from tests.integration.harness import ROOT, base_env

pytestmark = pytest.mark.timeout(60)


def _gateway(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "choragos", "gateway", *args], cwd=ROOT,
                            env=base_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


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
            assert proc.wait(10) == 0
        log = proc.stderr.read()
        assert "a anthropic POST /agent/a/v1/messages -> 200" in log
        assert "sk-secret-key" not in log
        assert "\x1b" not in log and "/agent/a/\\x1b[31mred -> 404" in log


def test_a_taken_port_and_bad_arguments_are_clear_errors():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _gateway("--addr", f"127.0.0.1:{port}")
        assert proc.wait(20) == 1
        assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in \
            proc.stderr.read()
    proc = _gateway("--addr", "nowhere", "--openai", "ftp://x")
    assert proc.wait(20) == 2
    assert "--addr" in proc.stderr.read()
    proc = _gateway("--openai", "https://user:pw@example.com")
    assert proc.wait(20) == 2
    assert "no credentials in the URL" in proc.stderr.read()
