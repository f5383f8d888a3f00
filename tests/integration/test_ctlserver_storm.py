"""A connect-and-close storm on the control socket: pings are still answered.

Two processes connect and close as fast as they can while the CLI's client
pings.  A connection closed before it sent anything never counts against
the cap on open connections; over the cap the server reads what is
waiting before it drops anything, and drops the idle before the unread;
the client retries a "dropped" answer within its deadline.
"""

# The fixtures come from test_ctlserver.py, so test parameters share their names.
# ruff: noqa: F811

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.cli import _client
from choragos.control import wire
from choragos.control.server import ControlServer
from tests.conftest import wait_until
from tests.integration.test_ctlserver import (  # noqa: F401  (fixtures)
    Make,
    Recorder,
    _read_until_eof,
    make,
    rec,
    sock_path,
)

STORM = """
import socket, sys, time
path, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
first = True
while time.monotonic() < end:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        pass
    conn.close()
    if first:
        print("storming", flush=True)
        first = False
"""
PINGS = 75


def _storm(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", STORM, str(path), "60"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "storming\n"
    return proc


@pytest.mark.timeout(120)
def test_pings_are_answered_through_a_connect_and_close_storm(make: Make, sock_path: Path,
                                                              rec: Recorder) -> None:
    server = make(max_pending=64)
    storms = []
    try:
        storms = [_storm(sock_path) for _ in range(2)]
        acks = [_client._exchange(sock_path, {"cmd": "ping"}, None) for _ in range(PINGS)]
        assert all(storm.poll() is None for storm in storms), "the storm ended too soon"
    finally:
        for storm in storms:
            storm.kill()
            storm.communicate()  # its stdout pipe closed too
    refused = [ack["error"] for ack in acks if ack["status"] != "ok"]
    assert not refused, f"{len(refused)} of {PINGS} pings refused: {refused[:3]}"
    # Closed connections were neither counted nor handled nor logged.
    assert "idle dropped" not in rec.kinds()
    assert "bad request" not in rec.kinds()
    assert [r["cmd"] for r in rec.requests] == ["ping"] * PINGS
    wait_until(lambda: server.open_connections() == 0, timeout=10,
               message="every storm connection closed")


def _connected(path: Path, first: bytes = b"") -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(10)
    conn.connect(str(path))
    if first:
        conn.sendall(first)
    return conn


def test_over_the_cap_the_idle_go_before_a_request_half_read(make: Make, sock_path: Path,
                                                             rec: Recorder) -> None:
    server = make(deadline=30.0, max_pending=2)
    conns = [_connected(sock_path, b'{"cmd": "pi')]  # the oldest: part of a request
    try:
        wait_until(lambda: server.open_connections() == 1, timeout=5, message="one open")
        conns.append(_connected(sock_path))  # idle
        wait_until(lambda: server.open_connections() == 2, timeout=5, message="two open")
        conns.append(_connected(sock_path))  # one too many
        ack = wire.parse_ack(_read_until_eof(conns[1]))
        assert ack["error"].startswith("dropped") and ack["dropped"] is True
        conns[0].sendall(b'ng"}\n')  # the half-read request is still served
        assert wire.parse_ack(_read_until_eof(conns[0]))["status"] == "ok"
        assert [r["cmd"] for r in rec.requests] == ["ping"]
    finally:
        for conn in conns:
            conn.close()


def test_closed_connections_do_not_count_against_the_cap(sock_path: Path,
                                                         rec: Recorder) -> None:
    """Everything waits in the kernel's queue until the loop starts, so the
    closed connections are accepted with the idle ones, over the cap."""
    server = ControlServer(sock_path, rec.handle, log=rec.log, deadline=30.0, max_pending=2)
    server.bind()
    idle = [_connected(sock_path) for _ in range(2)]
    try:
        for _ in range(5):
            _connected(sock_path).close()
        with _connected(sock_path, b'{"cmd": "ping"}\n') as late:
            server.serve()
            assert wire.parse_ack(_read_until_eof(late))["status"] == "ok"
        wait_until(lambda: server.open_connections() == 2, timeout=5, message="the idle two")
        assert "idle dropped" not in rec.kinds() and "bad request" not in rec.kinds()
    finally:
        server.close()
        for conn in idle:
            conn.close()
