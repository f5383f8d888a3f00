"""The control socket's event log: each refusal is logged as the operator
reads it (the session writes these as "socket: <kind>" events), with the
reason the client was given."""

# The fixtures come from test_ctlserver.py, so test parameters share their names.
# ruff: noqa: F811

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

from choragos.control import wire
from tests.conftest import wait_until
from tests.integration.test_ctlserver import (  # noqa: F401  (fixtures)
    Make,
    Recorder,
    _read_until_eof,
    make,
    raw_exchange,
    rec,
    sock_path,
)


def logged(rec: Recorder, kind: str) -> list[dict[str, Any]]:
    return [fields for k, fields in rec.logs if k == kind]


def test_a_bad_request_is_logged_with_the_reason_its_client_got(make: Make, sock_path: Path,
                                                               rec: Recorder) -> None:
    make()
    ack = raw_exchange(sock_path, b"not json\n")
    assert ack["status"] == "error" and ack["error"]
    assert logged(rec, "bad request") == [{"reason": ack["error"]}]


def test_a_request_over_the_limit_is_logged_with_its_reason(make: Make, sock_path: Path,
                                                            rec: Recorder) -> None:
    make(max_bytes=100)
    ack = raw_exchange(sock_path, b'{"cmd": "ping", "x": "' + b"a" * 200 + b'"}\n')
    assert ack["error"] == "request too large (limit 100 bytes)"
    assert logged(rec, "request too large") == [{"reason": ack["error"]}]


def test_a_silent_client_is_logged_when_cut(make: Make, sock_path: Path, rec: Recorder) -> None:
    make(deadline=0.3)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.settimeout(10)
        silent.connect(str(sock_path))
        ack = wire.parse_ack(_read_until_eof(silent))
    assert ack["error"] == "timed out after 0.3s waiting for the request"
    assert logged(rec, "request timeout") == [{"reason": ack["error"]}]


def test_the_oldest_idle_connection_is_dropped_and_logged(make: Make, sock_path: Path,
                                                          rec: Recorder) -> None:
    server = make(deadline=30.0, max_pending=2)
    conns = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(3)]
    try:
        for conn in conns[:2]:
            conn.settimeout(10)
            conn.connect(str(sock_path))
        wait_until(lambda: server.open_connections() == 2, timeout=5, message="two idle")
        conns[2].settimeout(10)
        conns[2].connect(str(sock_path))
        ack = wire.parse_ack(_read_until_eof(conns[0]))  # the oldest is told why
        assert ack["error"] == ("dropped: 2 connections were open and this one had sent "
                                "nothing for the longest; try again")
        assert logged(rec, "idle dropped") == [{"pending": 3}]
        wait_until(lambda: server.open_connections() == 2, timeout=5, message="two left")
        # The two still open are served normally.
        for conn in conns[1:]:
            conn.sendall(b'{"cmd": "ping"}\n')
            assert wire.parse_ack(_read_until_eof(conn))["status"] == "ok"
    finally:
        for conn in conns:
            conn.close()


def test_connections_read_and_handled_both_count_as_open(make: Make,
                                                         sock_path: Path) -> None:
    release, entered = threading.Event(), threading.Event()

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return wire.ok()

    server = make(deadline=30.0, handler=slow)
    holder = threading.Thread(target=wire.request, args=(sock_path, {"cmd": "status"}))
    holder.start()
    try:
        assert entered.wait(5)
        assert server.open_connections() == 1
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
            idle.connect(str(sock_path))
            wait_until(lambda: server.open_connections() == 2, timeout=5,
                       message="one handled and one being read")
    finally:
        release.set()
        holder.join(10)
    wait_until(lambda: server.open_connections() == 0, timeout=5, message="all closed")


def test_a_busy_refusal_is_logged_with_the_cap(make: Make, sock_path: Path,
                                               rec: Recorder) -> None:
    release, entered = threading.Event(), threading.Event()

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        if request["cmd"] == "status":
            entered.set()
            release.wait(10)
        return wire.ok()

    make(max_clients=1, deadline=5.0, handler=slow)
    holder = threading.Thread(target=wire.request, args=(sock_path, {"cmd": "status"}))
    holder.start()
    try:
        assert entered.wait(5)
        ack = raw_exchange(sock_path, b'{"cmd":"ping"}\n', timeout=5)
        assert ack["error"] == "busy: the session is serving 1 requests; try again"
        assert logged(rec, "busy") == [{"clients": 1}]
    finally:
        release.set()
        holder.join(10)
