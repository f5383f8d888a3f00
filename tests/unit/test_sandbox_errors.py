"""A socket an agent's sandbox blocks is named as such, not blamed on another user."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.control import wire

ROOT = Path(__file__).resolve().parents[2]


def _work_done(sock: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CHORAGOS_SOCK": str(sock)}
    return subprocess.run([sys.executable, "-m", "choragos", "work-done", "--id", "T1",
                           "--task", "x"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=30)


def test_a_socket_directory_the_agent_cannot_see_is_a_sandbox(short_tmp):
    out = _work_done(short_tmp / "hidden" / "s.sock", short_tmp)
    assert out.returncode == 3
    assert wire.SANDBOX_HINT in out.stderr and "not visible from here" in out.stderr
    assert "another user" not in out.stderr


def test_a_missing_socket_in_a_visible_directory_is_no_session(short_tmp):
    out = _work_done(short_tmp / "s.sock", short_tmp)
    assert out.returncode == 3 and "no choragos session is running" in out.stderr
    assert wire.SANDBOX_HINT not in out.stderr


def test_a_refused_unix_socket_is_a_sandbox(monkeypatch, short_tmp):
    def refused(*args):
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(wire.socket, "socket", refused)
    with pytest.raises(wire.Unreachable, match="sandbox may block it"):
        wire.request(short_tmp / "s.sock", {"cmd": "ping"}, 1)


class _Denied(socket.socket):
    def connect(self, address):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))


def _listening(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    return server


def test_denied_connect_on_our_own_socket_is_a_sandbox(monkeypatch, short_tmp):
    sock = short_tmp / "s.sock"
    with _listening(sock):
        monkeypatch.setattr(wire.socket, "socket", _Denied)
        with pytest.raises(wire.Unreachable) as caught:
            wire.request(sock, {"cmd": "ping"}, 1)
    assert caught.value.reason.startswith(wire.SANDBOX_HINT)
    assert "Permission denied" in caught.value.reason


def test_denied_connect_on_another_users_socket_says_so(monkeypatch, short_tmp):
    sock = short_tmp / "s.sock"
    with _listening(sock):
        monkeypatch.setattr(wire.socket, "socket", _Denied)
        monkeypatch.setattr(wire, "_owner", lambda path: os.getuid() + 1)
        with pytest.raises(wire.Unreachable, match="belongs to another user"):
            wire.request(sock, {"cmd": "ping"}, 1)
