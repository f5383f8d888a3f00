"""The control server's refusals, word for word: what an operator reads when a
session cannot start or a request is turned away."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
from pathlib import Path

import pytest

from choragos.control import wire
from choragos.control.server import ControlServer, ServerStartError, SessionRunning, _bind_reason
from tests.conftest import wait_until


@pytest.fixture
def started(short_tmp: Path):
    servers: list[ControlServer] = []
    logs: list[tuple[str, dict]] = []

    def start(path: Path | None = None, **options) -> ControlServer:
        handler = options.pop("handler", wire.ok)
        server = ControlServer(path or short_tmp / "run" / "s.sock", handler,
                               log=lambda kind, fields: logs.append((kind, fields)),
                               **options)
        server.start()
        servers.append(server)
        return server

    start.logs = logs
    yield start
    for server in servers:
        server.close()


def hold_lock(path: Path, content: bytes) -> int:
    """Another session's lock: held, with what it wrote into it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.write(fd, content)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@pytest.mark.parametrize(("content", "pid", "where"), [
    (b"4242\n/proj/there\n", 4242, "/proj/there"),
    (b"4242\n", 4242, "/proj/here"),
    (b"4242\n\n", 4242, "/proj/here"),
    (b"not-a-pid\n/proj/there\n", None, "/proj/there"),
    (b"", None, "/proj/here"),
    (b"4242\n/proj/unended", 4242, "/proj/unended"),
    (b"\xff\xfe\n/proj/\xff", None, "/proj/\ufffd"),
])
def test_a_held_lock_names_its_holder(started, short_tmp: Path, content: bytes,
                                      pid: int | None, where: str) -> None:
    fd = hold_lock(short_tmp / "run" / "s.sock.lock", content)
    try:
        with pytest.raises(SessionRunning) as refused:
            started(workdir=Path("/proj/here"))
    finally:
        os.close(fd)
    who = f"pid {pid}" if pid else "pid unknown"
    assert (refused.value.pid, refused.value.where) == (pid, where)
    assert refused.value.reason == (f"a choragos session ({who}) is already running in "
                                    f"{where}; attach to it or stop it with "
                                    "`choragos shutdown`")
    assert not (short_tmp / "run" / "s.sock").exists()


def test_a_tightened_directory_is_logged_with_its_old_mode(started, short_tmp: Path) -> None:
    run = short_tmp / "run"
    run.mkdir()
    os.chmod(run, 0o750)
    started()
    assert ("socket dir mode fixed", {"dir": str(run), "was": "750"}) in started.logs
    assert stat.S_IMODE(os.stat(run).st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o1770, 0o702])
def test_a_shared_directory_is_refused_as_it_is(started, short_tmp: Path, mode: int) -> None:
    shared = short_tmp / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    with pytest.raises(ServerStartError) as refused:
        started(shared / "s.sock")
    assert refused.value.reason == (f"{shared} is a shared directory (mode {mode:o}); "
                                    "point CHORAGOS_SOCK into a private one")
    assert stat.S_IMODE(os.stat(shared).st_mode) == mode
    assert not started.logs


def test_a_file_in_the_way_is_kept(started, short_tmp: Path) -> None:
    path = short_tmp / "run" / "s.sock"
    path.parent.mkdir(mode=0o700)
    path.write_text("precious")
    with pytest.raises(ServerStartError) as refused:
        started(path)
    assert refused.value.reason == f"{path} exists and is not a socket; refusing to replace it"


def test_a_too_long_path_says_how_long(started, short_tmp: Path) -> None:
    path = short_tmp / ("d" * 60) / ("s" * 60 + ".sock")
    with pytest.raises(ServerStartError) as refused:
        started(path)
    size = len(os.fsencode(path))
    assert refused.value.reason == (f"the socket path {path} is {size} bytes, too long for a "
                                    "unix socket (about 100 at most); set CHORAGOS_SOCK to a "
                                    "shorter path")


def test_a_stale_symlink_at_the_path_gives_way_to_the_socket(started, short_tmp: Path) -> None:
    run = short_tmp / "run"
    run.mkdir(mode=0o700)
    path = run / "s.sock"
    os.symlink(run / "nowhere" / "x", path)  # a stale symlink is removed, then bound
    started(path)
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


@pytest.mark.parametrize(("limit", "shown"), [
    (2 * 1024 * 1024, "2 MiB"), (3 * 1024, "3 KiB"), (1500, "1500 bytes")])
def test_a_request_over_the_limit_names_the_limit(started, short_tmp: Path, limit: int,
                                                  shown: str) -> None:
    server = started(max_bytes=limit)
    ack = wire.request(server.path, {"cmd": "delegate", "to": ["c"], "task": "x" * limit})
    assert ack == wire.error(f"request too large (limit {shown})")


def test_a_client_over_the_cap_is_told_busy(started, short_tmp: Path) -> None:
    release = threading.Event()

    def held(request: dict) -> dict:
        release.wait(10)
        return wire.ok()

    server = started(max_clients=1, handler=held)
    holder = threading.Thread(target=wire.request, args=(server.path, {"cmd": "status"}))
    holder.start()
    try:
        wait_until(lambda: len(server._clients) == 1, 5, message="the first request handled")
        ack = wire.request(server.path, {"cmd": "ping"})
    finally:
        release.set()
        holder.join(10)
    assert ack == wire.error("busy: the session is serving 1 requests; try again", busy=True)
    assert ("busy", {"clients": 1}) in started.logs


@pytest.mark.parametrize(("size", "exc", "reason"), [
    (103, OSError(errno.ENOENT, "No such file or directory"),
     "cannot bind {path}: No such file or directory"),
    (103, OSError("AF_UNIX path too long"), "too long"),
    (104, OSError(errno.ENOENT, "No such file or directory"), "too long"),
    (103, OSError("no errno here"), "cannot bind {path}: no errno here"),
])
def test_a_bind_failure_names_its_cause(size: int, exc: OSError, reason: str) -> None:
    path = Path("/" + "p" * (size - 1))
    expected = reason.format(path=path)
    if reason == "too long":
        expected = (f"the socket path {path} is {size} bytes, too long for a unix socket "
                    "(about 100 at most); set CHORAGOS_SOCK to a shorter path")
    assert _bind_reason(path, exc) == expected
