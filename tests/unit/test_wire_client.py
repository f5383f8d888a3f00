"""The client's view, in-process: a socket a session named for us whose
directory we cannot see is a sandbox, anything else missing is no session;
which failures are worth retrying; the bounds of a handoff's wait; how an
unknown value is quoted in an error."""

from __future__ import annotations

import socket

import pytest

from choragos import paths, wire


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
    (1, True), (1.5, True), (wire.MAX_HANDOFF_WAIT, True),
    (0.5, False), (wire.MAX_HANDOFF_WAIT + 1, False),
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
