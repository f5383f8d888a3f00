"""The verbs' retries: a saturated session is waited for, a missing one is not."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from choragos.cli import _client
from choragos.control import wire


@pytest.fixture
def short_deadline(monkeypatch):
    monkeypatch.setattr(wire, "DEADLINE", 0.3)
    monkeypatch.setattr(_client, "BUSY_PATIENCE", 5.0)


BUSY = wire.error("busy: try again", busy=True)
DROPPED = wire.error("dropped: 1024 connections were open and this one had sent nothing "
                     "for the longest; try again", dropped=True)


def _busy_then_ok(path: str, busy_for: float, refusal: dict = BUSY) -> threading.Thread:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    until = time.monotonic() + busy_for

    def serve() -> None:
        with listener:
            while True:
                conn, _ = listener.accept()
                with conn:
                    conn.recv(65536)
                    ack = refusal if time.monotonic() < until else wire.ok(done=True)
                    conn.sendall(json.dumps(ack).encode() + b"\n")
                    if ack["status"] == "ok":
                        return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.timeout(20)
def test_a_busy_session_is_retried_past_the_deadline(short_tmp, short_deadline):
    path = str(short_tmp / "s.sock")
    server = _busy_then_ok(path, busy_for=1.0)  # > the 0.3 s deadline
    ack = _client._exchange(short_tmp / "s.sock", {"cmd": "ping"}, None)
    assert ack["status"] == "ok" and ack["done"] is True
    server.join(5)


@pytest.mark.timeout(20)
def test_a_refused_connect_gives_up_at_the_deadline(short_tmp, short_deadline):
    path = short_tmp / "s.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound, never listening: connect is refused
    started = time.monotonic()
    with pytest.raises(_client.Failure) as failure:
        _client._exchange(path, {"cmd": "ping"}, None)
    assert time.monotonic() - started < 2.0  # the 0.3 s deadline, not the 5 s patience
    assert "refused" in failure.value.message
    dead.close()


@pytest.mark.timeout(20)
def test_a_dropped_connection_is_retried_within_the_deadline(short_tmp, short_deadline):
    path = str(short_tmp / "s.sock")
    server = _busy_then_ok(path, busy_for=0.05, refusal=DROPPED)  # well within the 0.3 s deadline
    ack = _client._exchange(short_tmp / "s.sock", {"cmd": "ping"}, None)
    assert ack["status"] == "ok" and ack["done"] is True
    server.join(5)


@pytest.mark.timeout(20)
def test_dropped_past_the_deadline_is_the_answer(short_tmp, short_deadline):
    path = str(short_tmp / "s.sock")
    _busy_then_ok(path, busy_for=60, refusal=DROPPED)
    started = time.monotonic()
    ack = _client._exchange(short_tmp / "s.sock", {"cmd": "ping"}, None)
    assert time.monotonic() - started < 2.0  # the 0.3 s deadline, not the 5 s patience
    assert ack["status"] == "error" and ack["error"].startswith("dropped")
