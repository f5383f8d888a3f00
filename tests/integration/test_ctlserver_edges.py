"""The control socket at its edges: when a request counts as ended, a client
that never reads its ack, and the files a fresh server makes."""

# The fixtures come from test_ctlserver.py, so test parameters share their names.
# ruff: noqa: F811

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from choragos.control import wire
from choragos.control.server import ServerStartError
from tests.conftest import wait_until
from tests.integration.test_ctlserver import (  # noqa: F401  (fixtures)
    Make,
    Recorder,
    make,
    ping,
    raw_exchange,
    rec,
    sock_path,
)

# --- when a request has ended (the client neither closes nor waits) -----------------


@pytest.mark.parametrize("data, error", [
    # A line after a leading blank one ends at its newline, even when it is junk.
    (b"\nnot json\n", "not valid JSON"),
    # A nesting too deep to parse is answered, not waited on.
    (b"[" * 200_000, "nested too deeply"),
])
def test_a_request_that_ended_is_answered_without_eof(make: Make, sock_path: Path,
                                                      data: bytes, error: str) -> None:
    make(deadline=30.0)
    ack = raw_exchange(sock_path, data, shut=False, timeout=10)
    assert ack["status"] == "error" and error in ack["error"]


def test_a_whole_value_after_blanks_is_answered_without_eof(make: Make,
                                                           sock_path: Path) -> None:
    make(deadline=30.0)
    ack = raw_exchange(sock_path, b'  \t {"cmd": "ping"}', shut=False, timeout=10)
    assert ack["status"] == "ok"


# --- a client that never reads its answer -------------------------------------------

def test_a_client_that_never_reads_its_ack_is_let_go(make: Make, sock_path: Path,
                                                     rec: Recorder) -> None:
    handled = threading.Event()

    def big(request: dict[str, Any]) -> dict[str, Any]:
        handled.set()
        return wire.ok(blob="x" * 4_000_000)  # far more than a socket buffer holds

    server = make(deadline=0.5, handler=big)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as deaf:
        deaf.connect(str(sock_path))
        deaf.sendall(b'{"cmd": "ping"}\n')
        assert handled.wait(10)  # counted from here on, until the send is given up
        # The handler thread gives up on the send at the deadline, quietly.
        wait_until(lambda: server.open_connections() == 0, timeout=10,
                   message="the stuck send to be abandoned")
    assert ping(sock_path)["status"] == "ok"
    assert "send failed" not in rec.kinds()


def test_a_client_gone_before_its_ack_is_routine(make: Make, sock_path: Path,
                                                 rec: Recorder) -> None:
    gone = threading.Event()

    def after_the_client_left(request: dict[str, Any]) -> dict[str, Any]:
        gone.wait(10)
        return wire.ok(blob="x" * 1_000_000)  # more than a socket buffer holds

    server = make(handler=after_the_client_left)
    for linger in (False, True):  # a plain close, and a reset (unread data dropped)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(sock_path))
            conn.sendall(b'{"cmd": "ping"}\n')
            wait_until(lambda: server.open_connections() == 1, timeout=5, message="handled")
            if linger:
                conn.shutdown(socket.SHUT_RDWR)
        gone.set()
        wait_until(lambda: server.open_connections() == 0, timeout=10, message="exchange over")
        gone.clear()
    assert rec.logs == []  # a vanished client is not an event worth logging
    gone.set()
    assert ping(sock_path)["status"] == "ok"  # and the server carries on


# --- the files a server makes -----------------------------------------------------------

def test_a_fresh_socket_dir_is_made_private_without_fixing(make: Make, sock_path: Path,
                                                           rec: Recorder) -> None:
    old = os.umask(0)  # the mode must come from the server, not from the umask
    try:
        server = make()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(sock_path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(server.lock_path).st_mode) == 0o600
    assert "socket dir mode fixed" not in rec.kinds()  # made right, not repaired


def test_a_private_dir_is_left_as_it_is(make: Make, sock_path: Path, rec: Recorder) -> None:
    sock_path.parent.mkdir(mode=0o700)
    make()
    assert "socket dir mode fixed" not in rec.kinds()


def test_a_lock_file_that_is_a_symlink_is_refused(make: Make, sock_path: Path,
                                                  tmp_path: Path) -> None:
    sock_path.parent.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("keep\n")
    lock = sock_path.with_name(sock_path.name + ".lock")
    lock.symlink_to(elsewhere)
    with pytest.raises(ServerStartError) as refused:
        make()
    assert refused.value.reason == (f"cannot open the lock file {lock}: "
                                    "Too many levels of symbolic links")
    assert elsewhere.read_text() == "keep\n"
    assert not sock_path.exists()


# --- limits at their edge -----------------------------------------------------------

def test_a_request_of_exactly_the_limit_is_served(make: Make, sock_path: Path) -> None:
    request = b'{"cmd": "ping", "pad": "' + b"x" * 100 + b'"}\n'
    make(max_bytes=len(request))
    assert raw_exchange(sock_path, request)["status"] == "ok"
    too_big = request[:-3] + b'x"}\n'
    assert raw_exchange(sock_path, too_big)["error"].startswith("request too large")


def test_sixty_four_requests_are_handled_at_once_by_default(make: Make, sock_path: Path) -> None:
    release = threading.Event()
    entered = threading.Semaphore(0)

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        if request["cmd"] == "status":
            entered.release()
            release.wait(20)
        return wire.ok()

    make(handler=slow)
    holders = [threading.Thread(target=wire.request, args=(sock_path, {"cmd": "status"}),
                                kwargs={"timeout": 30}) for _ in range(64)]
    try:
        for holder in holders:
            holder.start()
        for _ in holders:
            assert entered.acquire(timeout=10)  # all 64 are being handled
        ack = raw_exchange(sock_path, b'{"cmd": "ping"}\n', timeout=5)
        assert ack["error"] == "busy: the session is serving 64 requests; try again"
    finally:
        release.set()
        for holder in holders:
            holder.join(10)
