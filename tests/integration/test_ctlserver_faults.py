"""The control socket when things go wrong in-process: an accept loop that
dies and is served again on a fresh socket, clients caught mid-request by
that, the process out of descriptors, a client gone before its refusal, and
a request that reaches its thread once the server is closing."""

# The fixtures come from test_ctlserver.py, so test parameters share their names.
# ruff: noqa: F811

from __future__ import annotations

import fcntl
import itertools
import os
import resource
import socket
import stat
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from choragos.control import wire
from choragos.control.server import ControlServer, ServerStartError, _Pending
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
from tests.integration.test_ctlserver_events import logged

FAULT = "AcceptLoopDied: a fault was injected into the accept loop"


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
    # It waits between tries instead of spinning on accept, and only briefly:
    # two back-offs of 0.1 s, with ample room for a loaded machine.
    assert all(b - a >= 0.09 for a, b in itertools.pairwise(when))
    assert when[2] - when[0] < 2.0


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



# --- a server's own threads and descriptors --------------------------------------------


def test_the_accept_loop_is_a_daemon_thread_named_for_the_socket(make: Make,
                                                                sock_path: Path) -> None:
    server = make()
    assert server._accepter is not None
    assert server._accepter.name == f"ctl-accept {sock_path.name}" and server._accepter.daemon


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def test_a_server_never_bound_neither_serves_nor_touches_descriptors(sock_path: Path) -> None:
    before = _open_fds()
    stdout = os.fstat(1)
    server = ControlServer(sock_path)
    server.serve()  # nothing bound: nothing to accept on
    assert not server.accepting
    server.inject_fault()
    server.close()
    assert _open_fds() - {0, 1, 2} <= before  # nothing new left open
    assert os.fstat(1).st_ino == stdout.st_ino  # nor a standard stream written or closed
    assert not sock_path.parent.exists()


def test_a_closed_server_leaves_no_descriptor_open(sock_path: Path) -> None:
    before = _open_fds()
    server = ControlServer(sock_path, lambda request: wire.ok())
    server.start()
    try:
        assert ping(sock_path)["status"] == "ok"
        _kill_loop(server)
        server.serve()  # a rebound socket is closed too
        assert ping(sock_path)["status"] == "ok"
    finally:
        server.close()
    wait_until(lambda: _open_fds() <= before, timeout=5,
               message="every descriptor of the server closed")
    assert not sock_path.exists() and not server.lock_path.exists()


def test_close_tolerates_its_files_removed_by_hand(make: Make, sock_path: Path) -> None:
    server = make()
    sock_path.unlink()
    server.lock_path.unlink()
    server.close()
    again = ControlServer(sock_path)
    again.start()  # the lock was released all the same
    again.close()


def test_a_replaced_listening_descriptor_kills_the_loop_and_stays_the_owners(
        make: Make, sock_path: Path) -> None:
    server = make()
    assert server._listener is not None
    number = server._listener.fileno()
    stand_in = os.open(os.devnull, os.O_RDONLY)
    # Listening before the swap: a loop between two looks sees it at once.
    died: list[str] = []
    server.on_died = died.append
    try:
        os.dup2(stand_in, number)  # its descriptor closed under it and reused
        wait_until(lambda: died, timeout=20, message="the loop to notice")
        assert died == ["AcceptLoopDied: the listening socket is gone: "
                        "[Errno 88] Socket operation on non-socket"]
        wait_until(lambda: not server.accepting, timeout=5, message="its thread to end")
        server.serve()
        assert ping(sock_path)["status"] == "ok"
        # The number is someone else's now: the server let go of it without closing it.
        assert os.path.samestat(os.fstat(number), os.fstat(stand_in))
    finally:
        os.close(stand_in)
        server.close()
        os.close(number)


# --- close and the requests being handled ------------------------------------------------


def _slow_exchange(make: Make, sock_path: Path, **options: Any) -> tuple[
        ControlServer, threading.Event, threading.Thread]:
    """A server whose handler waits for ``release``; one client in it."""
    entered, release = threading.Event(), threading.Event()

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        release.wait(20)
        return wire.ok()

    server = make(handler=slow, **options)
    client = threading.Thread(target=wire.request, args=(sock_path, {"cmd": "status"}),
                              kwargs={"timeout": 20})
    client.start()
    assert entered.wait(10)
    return server, release, client


def test_close_gives_up_on_a_handler_that_does_not_finish(make: Make,
                                                          sock_path: Path) -> None:
    server, release, client = _slow_exchange(make, sock_path, deadline=0.5)
    closer = threading.Thread(target=server.close)
    try:
        closer.start()
        closer.join(10)
        assert not closer.is_alive()
    finally:
        release.set()
        client.join(10)
        closer.join(10)


# --- messages of a server that cannot start ---------------------------------------------


def test_a_socket_dir_that_cannot_be_made_says_why(make: Make, short_tmp: Path) -> None:
    (short_tmp / "file").write_text("")
    with pytest.raises(ServerStartError) as refused:
        make(path=short_tmp / "file" / "run" / "s.sock")
    assert refused.value.reason == (f"cannot create the socket directory "
                                    f"{short_tmp / 'file' / 'run'}: Not a directory")


def test_a_session_started_from_a_removed_directory_names_its_socket(
        sock_path: Path, short_tmp: Path) -> None:
    gone = short_tmp / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    try:
        gone.rmdir()
        server = ControlServer(sock_path)
        server.start()
    finally:
        os.chdir(here)
    try:
        assert server.lock_path.read_text() == f"{os.getpid()}\n{sock_path}\n"
    finally:
        server.close()


# --- more edges of reading a request ----------------------------------------------------


def test_blanks_sent_first_wait_for_the_request(make: Make, sock_path: Path) -> None:
    make(deadline=30.0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(5)
        conn.connect(str(sock_path))
        conn.sendall(b"  \t ")
        wait_until(lambda: unread(conn) == 0, timeout=5, message="the blanks read")
        conn.sendall(b'{"cmd": "ping"}\n')
        assert wire.parse_ack(_read_until_eof(conn))["status"] == "ok"


def test_bytes_that_are_not_utf8_are_answered_without_eof(make: Make, sock_path: Path) -> None:
    make(deadline=30.0)
    ack = raw_exchange(sock_path, b'{"cmd": "\xff"}', shut=False, timeout=5)
    assert ack == wire.error("the request is not valid UTF-8")


def test_a_deadline_is_kept_however_long_the_loop_may_sleep(
        make: Make, sock_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import choragos.control.server as ctlserver

    monkeypatch.setattr(ctlserver, "CHECK_EVERY_MS", 60_000)
    make(deadline=0.3)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.settimeout(10)
        silent.connect(str(sock_path))
        ack = wire.parse_ack(_read_until_eof(silent))
    assert ack == wire.error("timed out after 0.3s waiting for the request")


# --- faults piling up, a dying loop's callback ------------------------------------------


def test_faults_piling_up_while_the_loop_is_down_never_raise(make: Make,
                                                             sock_path: Path) -> None:
    # The fault hook runs in a signal handler: it must never block or raise.
    server = make()
    _kill_loop(server)
    _pile_up_faults(server)
    server.serve()  # drains them all before it accepts
    assert ping(sock_path)["status"] == "ok" and server.accepting
    _kill_loop(server)
    _pile_up_faults(server)
    server.close()  # its stop byte does not fit either
    assert not sock_path.exists()


def _pile_up_faults(server: ControlServer) -> None:
    raised: list[BaseException] = []

    def inject() -> None:
        try:
            for _ in range(70_000):  # more than a pipe holds
                server.inject_fault()
        except BaseException as exc:
            raised.append(exc)

    injector = threading.Thread(target=inject, daemon=True)
    injector.start()
    injector.join(10)
    blocked = injector.is_alive()
    while injector.is_alive():  # let it finish, so that the server can still be closed
        with suppress(OSError):
            os.read(server._wake_r, 1 << 16)
        injector.join(0.1)
    assert not blocked, "a fault hook blocked on a full pipe"
    assert raised == []


def test_a_failing_death_callback_is_contained(make: Make, sock_path: Path, rec: Recorder,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    escaped: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    server = make()

    def broken(error: str) -> None:
        raise RuntimeError("the supervisor is gone")

    server.on_died = broken
    server.inject_fault()
    wait_until(lambda: not server.accepting, timeout=5, message="the loop to end")
    assert "accept loop died" in rec.kinds() and escaped == []


# --- the lock handed over at the worst moment -------------------------------------------


class _FlockAfter:
    """fcntl as the server sees it, but ``before`` runs once just ahead of the
    first flock: the instant a previous holder lets go of the lock file."""

    def __init__(self, before: Any) -> None:
        self._before = before

    def flock(self, fd: int, operation: int) -> None:
        before, self._before = self._before, None
        if before is not None:
            before()
        fcntl.flock(fd, operation)

    def __getattr__(self, name: str) -> Any:
        return getattr(fcntl, name)


def test_a_lock_file_let_go_between_open_and_lock_is_taken_afresh(
        make: Make, sock_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import choragos.control.server as ctlserver

    first = make()
    monkeypatch.setattr(ctlserver, "fcntl", _FlockAfter(first.close))
    second = make()  # opened the old file; it was unlinked and unlocked before the flock
    monkeypatch.undo()
    assert second.lock_path.read_text().startswith(f"{os.getpid()}\n")
    assert second._lock_fd is not None
    assert os.path.samestat(os.fstat(second._lock_fd), os.stat(second.lock_path))
    assert ping(sock_path)["status"] == "ok"


# --- close and a handler about to finish -------------------------------------------------


def test_close_lets_a_handler_at_work_finish_its_answer(make: Make, sock_path: Path) -> None:
    entered, finished = threading.Event(), threading.Event()
    server: list[ControlServer] = []

    def working(request: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        assert server[0]._stopping.wait(10)  # close has begun
        time.sleep(0.2)  # the rest of its work; close waits up to 2 s for it
        finished.set()
        return wire.ok()

    server.append(make(handler=working, deadline=30.0))
    client = threading.Thread(target=wire.request, args=(sock_path, {"cmd": "status"}),
                              kwargs={"timeout": 20})
    client.start()
    assert entered.wait(10)  # past the point where a closing server refuses it
    server[0].close()
    assert finished.is_set()
    client.join(10)



def test_a_dead_loop_is_not_accepting_while_its_thread_ends(make: Make, sock_path: Path
                                                           ) -> None:
    """The listener the supervisor starts next may look before the dying
    thread is gone (a loaded machine): it must see a loop to start again."""
    server = make()
    seen: list[bool] = []
    server.on_died = lambda error: seen.append(server.accepting)
    server.inject_fault()
    wait_until(lambda: seen, timeout=5, message="the accept loop to die")
    assert seen == [False]
    server.serve()
    assert server.accepting and ping(sock_path)["status"] == "ok"


def test_a_close_while_the_accept_loop_is_being_started_waits_for_it(
        sock_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop as the session starts: the listener's thread starts the accept
    loop while the main thread closes the server.  The close must find no
    loop, or a started one it can join, never one not started yet."""
    server = ControlServer(sock_path)
    server.bind()
    closing = threading.Event()
    real_start = threading.Thread.start

    def start_slowly(thread: threading.Thread) -> None:
        if thread.name.startswith("ctl-accept"):
            closing.wait(1.0)  # the close is under way (or waits for this start)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_slowly)
    serving = threading.Thread(target=server.serve)
    real_start(serving)
    wait_until(lambda: server._accepter is not None or server._guard.locked(), 5,
               message="the accept loop being started")
    errors: list[BaseException] = []

    def close() -> None:
        closing.set()
        try:
            server.close()
        except BaseException as exc:
            errors.append(exc)

    closer = threading.Thread(target=close)
    real_start(closer)
    closer.join(10)
    serving.join(10)
    assert errors == []
    assert not server.accepting
    assert not sock_path.exists()
