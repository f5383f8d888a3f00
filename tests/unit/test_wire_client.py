"""The client's view, in-process: a socket a session named for us whose
directory we cannot see is a sandbox, anything else missing is no session;
which failures are worth retrying; the bounds of a handoff's wait; how an
unknown value is quoted in an error."""

from __future__ import annotations

import contextlib
import socket
import threading

import pytest

from choragos.control import commands, paths, wire


def unreachable(sock, **options) -> wire.Unreachable:
    with pytest.raises(wire.Unreachable) as caught:
        wire.request(sock, {"cmd": "ping"}, timeout=2, **options)
    return caught.value


def test_the_named_socket_in_a_directory_we_cannot_see_is_a_sandbox(monkeypatch, short_tmp):
    sock = short_tmp / "hidden" / "s.sock"
    monkeypatch.setenv(paths.SOCK_ENV, str(sock))
    failure = unreachable(sock)
    assert failure.reason == f"{wire.SANDBOX_HINT} ({sock} is not visible from here)"
    assert (failure.retry, failure.alive) == (False, False)


@pytest.mark.parametrize("named", ["same, visible", "another", "none"])
def test_any_other_missing_socket_is_no_session(monkeypatch, short_tmp, named):
    sock = short_tmp / ("s.sock" if named == "same, visible" else "gone/s.sock")
    if named == "none":
        monkeypatch.delenv(paths.SOCK_ENV, raising=False)
    else:
        other = sock if named == "same, visible" else short_tmp / "elsewhere.sock"
        monkeypatch.setenv(paths.SOCK_ENV, str(other))
    failure = unreachable(sock, workdir=short_tmp)
    assert failure.reason == (f"no choragos session is running for {short_tmp} (socket {sock} "
                              "not found); start one with `choragos serve`")
    assert (failure.retry, failure.alive) == (False, False)


def test_a_refused_connection_is_worth_retrying_but_not_alive(short_tmp):
    sock = short_tmp / "dead.sock"
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(sock))
    leftover.close()  # the file stays, nobody listens
    failure = unreachable(sock)
    assert failure.reason.startswith(f"connection refused: the session at {sock}")
    assert (failure.retry, failure.alive) == (True, False)


@pytest.mark.parametrize("wait, ok", [
    (1, True), (1.5, True), (commands.MAX_HANDOFF_WAIT, True),
    (0.5, False), (commands.MAX_HANDOFF_WAIT + 1, False),
])
def test_a_handoff_waits_from_one_second_to_the_maximum(wait, ok):
    data = wire.encode({"cmd": "handoff", "config": "/abs/choragos.toml", "wait": wait})
    if ok:
        assert wire.parse_request(data)["wait"] == wait
    else:
        with pytest.raises(wire.WireError, match='"wait" must be a number of seconds'):
            wire.parse_request(data)


@pytest.mark.parametrize("name, shown", [
    ("x" * 40, "'" + "x" * 40 + "'"),  # 42 characters with its quotes: whole
    ("x" * 41, "'" + "x" * 39 + "..."),  # 43: cut
])
def test_an_unknown_command_is_quoted_whole_up_to_42_characters(name, shown):
    with pytest.raises(wire.WireError) as caught:
        wire.parse_request(wire.encode({"cmd": name}))
    assert caught.value.reason.startswith(f"unknown command {shown}; known commands: ")


def test_an_archived_flag_that_is_not_a_boolean_is_named_by_its_kind():
    with pytest.raises(wire.WireError) as caught:
        wire.parse_request(wire.encode({"cmd": "board", "archived": "yes"}))
    assert caught.value.reason == '"archived" must be true or false, not a string'


def test_a_session_whose_queue_is_full_is_alive_and_worth_retrying(short_tmp):
    sock = short_tmp / "full.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(sock))
        listener.listen(1)  # never accepts
        queued = []
        try:
            while True:  # fill the kernel's queue
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.setblocking(False)
                queued.append(conn)
                conn.connect(str(sock))
        except BlockingIOError:
            pass
        try:
            failure = unreachable(sock)
        finally:
            for conn in queued:
                conn.close()
    assert failure.reason == (f"the session at {sock} is not accepting connections fast "
                              "enough (its queue is full)")
    assert (failure.retry, failure.alive) == (True, True)


def serve_once(sock, answer: bytes) -> threading.Thread:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.listen(1)

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                with contextlib.suppress(OSError):
                    conn.sendall(answer)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def ack_of_size(size: int) -> bytes:
    head = b'{"status": "ok", "pad": "'
    return head + b"x" * (size - len(head) - 3) + b'"}\n'


def test_an_answer_in_many_pieces_is_read_whole(short_tmp):
    thread = serve_once(short_tmp / "big.sock", ack_of_size(1_000_000))
    ack = wire.request(short_tmp / "big.sock", {"cmd": "ping"}, timeout=10)
    thread.join(10)
    assert ack["pad"] == "x" * (1_000_000 - 28)


def test_an_answer_over_the_limit_is_refused(short_tmp):
    thread = serve_once(short_tmp / "huge.sock", ack_of_size(wire.MAX_ACK + 1))
    with pytest.raises(wire.WireError, match=r"^the session's answer is too large$"):
        wire.request(short_tmp / "huge.sock", {"cmd": "ping"}, timeout=10)
    thread.join(10)
