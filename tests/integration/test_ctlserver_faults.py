"""The control socket when things go wrong in-process: an accept loop that
dies and is served again on a fresh socket, clients caught mid-request by
that, the process out of descriptors, a client gone before its refusal, and
a request that reaches its thread once the server is closing."""

# The fixtures come from test_ctlserver.py, so test parameters share their names.
# ruff: noqa: F811

from __future__ import annotations

import itertools
import os
import resource
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

from choragos import wire
from choragos.ctlserver import ControlServer, _Pending
from tests.conftest import wait_until
from tests.integration.test_ctlserver import (  # noqa: F401  (fixtures)
    Make,
    Recorder,
    _read_until_eof,
    make,
    ping,
    raw_exchange,
    rec,
    sock_path,
    unread,
)

FAULT = "AcceptLoopDied: a fault was injected into the accept loop"


def logged(rec: Recorder, kind: str) -> list[dict[str, Any]]:
    return [fields for k, fields in rec.logs if k == kind]


def test_a_server_without_a_handler_says_it_is_still_starting(sock_path: Path) -> None:
    server = ControlServer(sock_path)
    server.start()
    try:
        assert ping(sock_path) == wire.error("the session is still starting; try again")
    finally:
        server.close()


# --- an accept loop that dies ----------------------------------------------------------


def _kill_loop(server: ControlServer) -> list[str]:
    died: list[str] = []
    server.on_died = died.append
    server.inject_fault()
    wait_until(lambda: died, timeout=5, message="the accept loop to die")
    wait_until(lambda: not server.accepting, timeout=5, message="its thread to end")
    return died


def test_an_injected_fault_kills_the_loop_and_serve_rebinds(make: Make, sock_path: Path,
                                                            rec: Recorder) -> None:
    server = make()
    assert ping(sock_path)["status"] == "ok"
    assert _kill_loop(server) == [FAULT]
    assert logged(rec, "accept loop died") == [{"error": FAULT}]
    server.inject_fault()  # a fault byte left over for the next loop must not kill it
    server.serve()
    assert logged(rec, "socket rebound") == [{"path": str(sock_path)}]
    assert ping(sock_path)["status"] == "ok"
    assert server.accepting
    assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
    assert server.lock_path.exists()  # held throughout
    assert logged(rec, "accept loop died") == [{"error": FAULT}]


def test_serving_twice_starts_one_loop(make: Make, sock_path: Path, rec: Recorder) -> None:
    server = make()
    server.serve()  # already accepting: nothing to do
    assert "socket rebound" not in rec.kinds()
    assert ping(sock_path)["status"] == "ok"


def test_a_client_mid_request_when_the_loop_dies_is_told_to_retry(make: Make,
                                                                  sock_path: Path) -> None:
    server = make(deadline=30.0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as half:
        half.settimeout(10)
        half.connect(str(sock_path))
        half.sendall(b'{"cmd": ')
        wait_until(lambda: unread(half) == 0, timeout=5, message="the first part read")
        _kill_loop(server)
        assert wire.parse_ack(_read_until_eof(half)) == wire.error(
            "the control socket is restarting; try again")
    assert server.open_connections() == 0


# --- out of descriptors ----------------------------------------------------------------


def test_accept_out_of_descriptors_backs_off_and_serves_later(make: Make, sock_path: Path,
                                                              rec: Recorder) -> None:
    when: list[float] = []

    def log(kind: str, fields: dict[str, Any]) -> None:
        rec.log(kind, fields)
        if kind == "accept failed":
            when.append(time.monotonic())

    make(log=log)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fillers: list[int] = []
    try:
        highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 8, hard))
        while True:  # every descriptor the limit allows, taken
            try:
                fillers.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        client.connect(str(sock_path))  # queued: the server cannot accept it
        client.sendall(b'{"cmd": "ping"}\n')
        wait_until(lambda: len(when) >= 3, timeout=10, message="accept to fail thrice")
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    with client:
        assert wire.parse_ack(_read_until_eof(client))["status"] == "ok"
    assert logged(rec, "accept failed")[0] == {"error": "Too many open files"}
    # It waits between tries instead of spinning on accept.
    assert all(b - a >= 0.09 for a, b in itertools.pairwise(when))


# --- clients that vanish ---------------------------------------------------------------


def test_a_client_gone_before_its_refusal_does_not_stop_the_server(
        make: Make, sock_path: Path, rec: Recorder) -> None:
    server = make(max_bytes=100)
    # The reading thread waits on the guard until the client has gone.
    with server._guard, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as gone:
        gone.connect(str(sock_path))
        gone.sendall(b"x" * 200)
    wait_until(lambda: "request too large" in rec.kinds(), timeout=5,
               message="the refusal sent to nobody")
    assert ping(sock_path)["status"] == "ok"
    assert "accept loop died" not in rec.kinds()


def test_a_line_ended_in_a_later_read_is_answered_without_eof(make: Make,
                                                              sock_path: Path) -> None:
    make(deadline=30.0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(5)  # at once, not at the deadline
        conn.connect(str(sock_path))
        conn.sendall(b"not json")
        wait_until(lambda: unread(conn) == 0, timeout=5, message="the first part read")
        conn.sendall(b"\n")  # a read holding only the newline ends the request
        ack = wire.parse_ack(_read_until_eof(conn))
    assert ack["status"] == "error" and "not valid JSON" in ack["error"]


# --- on the handler's thread -----------------------------------------------------------


def test_a_request_is_handled_on_a_daemon_thread_named_for_the_socket(make: Make,
                                                                     sock_path: Path) -> None:
    seen: list[threading.Thread] = []

    def note(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(threading.current_thread())
        return wire.ok()

    make(handler=note)
    assert ping(sock_path)["status"] == "ok"
    assert seen[0].name == f"ctl-client {sock_path.name}" and seen[0].daemon


def test_a_request_reaching_its_thread_after_close_began_is_refused(
        make: Make, sock_path: Path, rec: Recorder) -> None:
    # Read whole in the instant close began: the handler must not see it.
    server = make()
    server._stopping.set()
    near, far = socket.socketpair()
    with near, far:
        pending = _Pending(near, os.getpid(), time.monotonic() + 5,
                           bytearray(b'{"cmd": "ping"}\n'))
        assert server._exchange(pending) == wire.error("the session is shutting down")
    assert rec.requests == []
    assert logged(rec, "shutting down") == [{"reason": "the session is shutting down"}]


def test_a_handler_returning_no_dict_is_named(make: Make, sock_path: Path) -> None:
    make(handler=lambda request: ["ok"])
    assert ping(sock_path) == wire.error(
        "internal error: TypeError: handler returned list, not a dict")

