"""The control socket over a real unix socket."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.control import wire
from choragos.control.server import ControlServer, ServerStartError, SessionRunning
from tests.conftest import wait_until

REPO = Path(__file__).resolve().parents[2]

Make = Callable[..., ControlServer]


class Recorder:
    """Handler and log sink: remembers what the server passed on."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.logs: list[tuple[str, dict[str, Any]]] = []

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        return wire.ok(echo=request)

    def log(self, kind: str, fields: dict[str, Any]) -> None:
        self.logs.append((kind, fields))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.logs]


def _server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ctl-")]


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def sock_path(short_tmp: Path) -> Path:
    return short_tmp / "run" / "s.sock"


@pytest.fixture
def make(sock_path: Path, rec: Recorder) -> Iterator[Make]:
    made: list[ControlServer] = []

    def build(**options: Any) -> ControlServer:
        options.setdefault("log", rec.log)
        server = ControlServer(options.pop("path", sock_path),
                               options.pop("handler", rec.handle), **options)
        server.start()
        made.append(server)
        return server

    yield build
    for server in made:
        server.close()
    wait_until(lambda: not _server_threads(), timeout=5, message="server threads to end")


def raw_exchange(path: Path, data: bytes, *, shut: bool = True,
                 timeout: float = 5.0) -> dict[str, Any]:
    """Send raw bytes, read until EOF, decode the ack."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(str(path))
        try:
            conn.sendall(data)
            if shut:
                conn.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return wire.parse_ack(_read_until_eof(conn))


def _read_until_eof(conn: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
    return b"".join(chunks)


def ping(path: Path) -> dict[str, Any]:
    return wire.request(path, {"cmd": "ping"})


# --- files, modes, lock ---------------------------------------------------------

def test_modes_lock_and_cleanup(make: Make, sock_path: Path) -> None:
    server = make()
    assert stat.S_IMODE(os.stat(sock_path.parent).st_mode) == 0o700
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
    assert server.lock_path.read_text().split("\n")[0] == str(os.getpid())
    assert ping(sock_path)["status"] == "ok"
    server.close()
    assert not sock_path.exists() and not server.lock_path.exists()
    wait_until(lambda: not _server_threads(), timeout=5, message="threads to end")


def test_loose_socket_dir_of_ours_is_tightened(make: Make, sock_path: Path,
                                                rec: Recorder) -> None:
    sock_path.parent.mkdir(mode=0o755)
    os.chmod(sock_path.parent, 0o755)
    make()
    assert stat.S_IMODE(os.stat(sock_path.parent).st_mode) == 0o700
    assert "socket dir mode fixed" in rec.kinds()


def test_shared_socket_dir_is_refused(make: Make, short_tmp: Path) -> None:
    shared = short_tmp / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with pytest.raises(ServerStartError, match="shared directory"):
        make(path=shared / "s.sock")
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to chown")
def test_socket_dir_of_another_user_is_refused(make: Make, sock_path: Path) -> None:
    sock_path.parent.mkdir(mode=0o700)
    os.chown(sock_path.parent, 65534, 65534)
    with pytest.raises(ServerStartError, match="belongs to uid 65534"):
        make()


def test_symlinked_socket_dir_is_refused(make: Make, short_tmp: Path) -> None:
    (short_tmp / "real").mkdir(mode=0o700)
    (short_tmp / "link").symlink_to(short_tmp / "real")
    with pytest.raises(ServerStartError) as refused:
        make(path=short_tmp / "link" / "s.sock")
    assert refused.value.reason == (f"{short_tmp / 'link'} is not a directory (a symlink?); "
                                    "refusing to put the control socket there")


def test_second_server_in_process_is_refused_with_pid(make: Make, sock_path: Path) -> None:
    make(workdir=Path("/proj/x"))
    with pytest.raises(SessionRunning) as caught:
        make()
    assert caught.value.pid == os.getpid()
    assert f"(pid {os.getpid()}) is already running in /proj/x" in str(caught.value)
    assert ping(sock_path)["status"] == "ok"  # the first one is untouched


CHILD_SERVER = """
import sys, time
from pathlib import Path
from choragos.control import wire
from choragos.control.server import ControlServer
server = ControlServer(Path(sys.argv[1]), lambda r: wire.ok(pid=__import__("os").getpid()))
server.start()
print("ready", flush=True)
time.sleep(60)
"""


def test_session_in_another_process_then_crash(make: Make, sock_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD_SERVER, str(sock_path)],
                             stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        with pytest.raises(SessionRunning, match=f"pid {child.pid}.* in {REPO}"):
            make()
        assert ping(sock_path)["pid"] == child.pid
        child.send_signal(signal.SIGKILL)  # a crash leaves the socket file behind
        child.wait(timeout=5)
        assert sock_path.exists()
        make()
        # The server adds the peer's pid, from the kernel, to every request.
        assert ping(sock_path)["echo"] == {"cmd": "ping", "peer_pid": os.getpid()}
    finally:
        child.kill()
        child.wait(timeout=5)
        child.stdout.close()


def test_stale_socket_file_is_removed(make: Make, sock_path: Path) -> None:
    sock_path.parent.mkdir(mode=0o700)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(sock_path))
    leftover.close()
    with pytest.raises(wire.Unreachable, match="connection refused"):
        ping(sock_path)
    make()
    assert ping(sock_path)["status"] == "ok"


def test_non_socket_at_the_path_is_kept(make: Make, sock_path: Path) -> None:
    sock_path.parent.mkdir(mode=0o700)
    sock_path.write_text("precious")
    with pytest.raises(ServerStartError, match="not a socket"):
        make()
    assert sock_path.read_text() == "precious"
    assert not sock_path.with_name("s.sock.lock").exists()


def test_too_long_socket_path_is_a_plain_error(make: Make, short_tmp: Path) -> None:
    with pytest.raises(ServerStartError, match="too long for a unix socket"):
        make(path=short_tmp / ("d" * 60) / ("s" * 60 + ".sock"))


# --- bad input ----------------------------------------------------------------------

@pytest.mark.parametrize(("data", "fragment"), [
    (b"{not json}\n", "not valid JSON"),
    (b"[1, 2]\n", "must be a JSON object"),
    (b'{"cmd": "format-disk"}\n', "unknown command"),
    (b'{"cmd": "delegate", "to": ["../x"], "task": "t"}\n', "bad role name"),
    (b"\n\n", "not valid JSON"),
    (b"", "not valid JSON"),
])
def test_bad_requests_get_error_acks(make: Make, sock_path: Path, rec: Recorder,
                                     data: bytes, fragment: str) -> None:
    make()
    ack = raw_exchange(sock_path, data)
    assert ack["status"] == "error" and fragment in ack["error"]
    assert rec.requests == [] and "bad request" in rec.kinds()
    assert ping(sock_path)["status"] == "ok"


def test_ten_megabyte_request_is_refused(make: Make, sock_path: Path, rec: Recorder) -> None:
    make()
    payload = {"cmd": "delegate", "to": ["coder"], "task": "x" * (10 * 1024 * 1024)}
    ack = wire.request(sock_path, payload)
    assert ack == wire.error("request too large (limit 1 MiB)")
    assert "request too large" in rec.kinds() and rec.requests == []
    assert ping(sock_path)["status"] == "ok"


def test_request_without_newline_or_eof_is_answered_at_once(make: Make,
                                                            sock_path: Path) -> None:
    make(deadline=30.0)
    started = time.monotonic()
    ack = raw_exchange(sock_path, b'{"cmd": "ping"}', shut=False)
    assert ack["status"] == "ok" and time.monotonic() - started < 5


def test_request_split_after_a_leading_newline_is_read_whole(make: Make,
                                                            sock_path: Path) -> None:
    make()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(sock_path))
        conn.sendall(b'\n{"cmd": ')
        # The server has read the first part before the rest is sent, so a
        # server that took the leading newline for the end would answer it.
        wait_until(lambda: unread(conn) == 0, timeout=5, message="the first part read")
        conn.sendall(b'"ping"}\n')
        ack = wire.parse_ack(_read_until_eof(conn))
    assert ack["status"] == "ok"


def test_close_cuts_open_exchanges_promptly(make: Make, sock_path: Path) -> None:
    server = make(deadline=30.0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.settimeout(5)
        silent.connect(str(sock_path))
        wait_until(lambda: server.open_connections() == 1, timeout=5,
                   message="client accepted")
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 2.0
        assert wire.parse_ack(_read_until_eof(silent)) == wire.error(
            "the session is shutting down")
    assert not _server_threads()


def test_silent_client_is_cut_while_others_are_served(make: Make, sock_path: Path,
                                                      rec: Recorder) -> None:
    server = make(deadline=0.8)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.settimeout(10)
        silent.connect(str(sock_path))
        wait_until(lambda: server.open_connections() == 1, timeout=5, message="client accepted")
        started = time.monotonic()
        assert ping(sock_path)["status"] == "ok"
        assert not wait_for_readable(silent, 0)  # served while the silent one still waits
        ack = wire.parse_ack(_read_until_eof(silent))
        waited = time.monotonic() - started
    assert ack["status"] == "error" and "timed out after 0.8s" in ack["error"]
    assert 0.6 < waited < 8.0  # cut at its deadline, neither early nor never
    assert "request timeout" in rec.kinds()


def test_slow_dribbling_client_is_cut_at_the_deadline(make: Make, sock_path: Path) -> None:
    make(deadline=0.6)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
        slow.connect(str(sock_path))
        started = time.monotonic()
        for byte in b'{"cmd": "ping"':
            try:
                slow.send(bytes([byte]))
            except OSError:
                break
            if wait_for_readable(slow, 0.1):
                break
        ack = wire.parse_ack(_read_until_eof(slow))
    assert "timed out" in ack["error"] and time.monotonic() - started < 3.0


def unread(conn: socket.socket) -> int:
    """Bytes sent on a unix socket that the peer has not read yet (SIOCOUTQ)."""
    import fcntl
    import struct
    import termios

    return struct.unpack("i", fcntl.ioctl(conn.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]


def wait_for_readable(conn: socket.socket, seconds: float) -> bool:
    import select

    return bool(select.select([conn], [], [], seconds)[0])


@pytest.mark.slow
def test_default_deadline_is_five_seconds(make: Make, sock_path: Path) -> None:
    make()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.settimeout(10)
        silent.connect(str(sock_path))
        started = time.monotonic()
        assert ping(sock_path)["status"] == "ok"
        ack = wire.parse_ack(_read_until_eof(silent))
        waited = time.monotonic() - started
    assert "timed out after 5s" in ack["error"] and 4.8 < waited < 7.0


def test_busy_when_over_the_client_cap(make: Make, sock_path: Path, rec: Recorder) -> None:
    release = threading.Event()

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        if request["cmd"] == "status":
            release.wait(5)
        return wire.ok()

    server = make(max_clients=2, deadline=5.0, handler=slow)
    holders = [threading.Thread(target=wire.request, args=(sock_path, {"cmd": "status"}))
               for _ in range(2)]
    try:
        for holder in holders:
            holder.start()
        wait_until(lambda: len(server._clients) == 2, timeout=5, message="two handlers")
        ack = raw_exchange(sock_path, b'{"cmd":"ping"}\n', timeout=2)
        assert ack["status"] == "error" and ack["busy"] is True
        assert ack["error"].startswith("busy")
        assert "busy" in rec.kinds()
    finally:
        release.set()
        for holder in holders:
            holder.join()
    wait_until(lambda: ping(sock_path)["status"] == "ok", timeout=5, message="served again")


def test_idle_connections_cannot_starve_others(make: Make, sock_path: Path) -> None:
    server = make(deadline=30.0, max_pending=150)
    idle = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(200)]
    try:
        for conn in idle:
            conn.connect(str(sock_path))
        wait_until(lambda: server.open_connections() >= 150, timeout=5, message="idle ones")
        started = time.monotonic()
        assert ping(sock_path)["status"] == "ok"
        assert time.monotonic() - started < 1.0
        # Past the cap the oldest idle connections were told why they were dropped.
        assert wire.parse_ack(_read_until_eof(idle[0]))["error"].startswith("dropped")
    finally:
        for conn in idle:
            conn.close()


# --- the client's view of failures ----------------------------------------------------

def test_client_timeout_when_nobody_answers(short_tmp: Path) -> None:
    path = short_tmp / "mute.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(path))
        mute.listen(1)  # queued by the kernel, never accepted or answered
        started = time.monotonic()
        with pytest.raises(wire.Unreachable, match=r"timed out after 0\.3s"):
            wire.request(path, {"cmd": "ping"}, timeout=0.3)
        assert time.monotonic() - started < 2.0


def test_client_names_the_missing_session(short_tmp: Path) -> None:
    with pytest.raises(wire.Unreachable) as caught:
        wire.request(short_tmp / "none.sock", {"cmd": "ping"}, workdir=Path("/proj"))
    assert caught.value.reason.startswith("no choragos session is running for /proj")


def test_client_rejects_a_malformed_ack(short_tmp: Path) -> None:
    path = short_tmp / "liar.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as liar:
        liar.bind(str(path))
        liar.listen(1)

        def answer() -> None:
            conn, _ = liar.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(b"<html>hello</html>")

        thread = threading.Thread(target=answer)
        thread.start()
        with pytest.raises(wire.WireError, match="not valid JSON"):
            wire.request(path, {"cmd": "ping"}, timeout=5)
        thread.join(timeout=5)


# --- the handler -------------------------------------------------------------------

def test_handler_sees_normalised_request(make: Make, sock_path: Path, rec: Recorder) -> None:
    make()
    ack = raw_exchange(sock_path, b'{"cmd":"delegate","to":"coder","task":"t","x":1}\n')
    assert ack["status"] == "ok"
    assert rec.requests == [{"cmd": "delegate", "to": ["coder"], "task": "t", "brief": None,
                             "require_live": False, "peer_pid": os.getpid()}]


def test_handler_exception_becomes_internal_error(make: Make, sock_path: Path,
                                                  rec: Recorder) -> None:
    def explode(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("boom")

    make(handler=explode)
    assert ping(sock_path) == wire.error("internal error: RuntimeError: boom")
    assert ("handler error", {"cmd": "ping", "error": "RuntimeError: boom"}) in rec.logs


def test_handler_returning_junk_becomes_internal_error(make: Make, sock_path: Path) -> None:
    make(handler=lambda request: {"status": "ok", "thing": object()})
    ack = ping(sock_path)
    assert ack["status"] == "error" and ack["error"].startswith("internal error: TypeError")


def test_an_ack_is_encoded_once(make: Make, sock_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A big answer (a board polled every second) costs one encoding: the
    check that the handler's ack encodes is the encoding that is sent."""
    tasks = [{"id": f"T{n}", "text": "x" * 100} for n in range(100)]
    encodings: list[int] = []
    dumps = json.dumps

    def counting(obj: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(obj, dict) and obj.get("tasks") is tasks:
            encodings.append(1)
        return dumps(obj, *args, **kwargs)

    make(handler=lambda request: wire.ok(tasks=tasks))
    monkeypatch.setattr(json, "dumps", counting)
    assert ping(sock_path)["tasks"] == tasks
    assert len(encodings) == 1


def test_failing_logger_does_not_break_serving(make: Make, sock_path: Path) -> None:
    def bad_log(kind: str, fields: dict[str, Any]) -> None:
        raise OSError("disk full")

    make(log=bad_log)
    assert raw_exchange(sock_path, b"junk\n")["status"] == "error"
    assert ping(sock_path)["status"] == "ok"


def test_concurrent_clients_all_answered(make: Make, sock_path: Path, rec: Recorder) -> None:
    make()
    acks: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(n: int) -> None:
        ack = wire.request(sock_path, {"cmd": "delegate", "to": ["a"], "task": f"t{n}"})
        with lock:
            acks.append(ack)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(acks) == 50 and all(a["status"] == "ok" for a in acks)
    assert sorted(r["task"] for r in rec.requests) == sorted(f"t{n}" for n in range(50))


# --- peers of another uid --------------------------------------------------------------

FOREIGN_CLIENT = """
import socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.settimeout(5)
conn.connect(sys.argv[1])
try:
    conn.sendall(b'{"cmd": "shutdown"}\\n')
except OSError:
    pass
data = b""
while True:
    try:
        chunk = conn.recv(4096)
    except ConnectionResetError:
        break
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode())
"""


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another uid")
def test_other_uid_is_refused(make: Make, sock_path: Path, short_tmp: Path,
                              rec: Recorder) -> None:
    make()
    # Open the way on purpose, so only the peer-uid check stands in between.
    os.chmod(short_tmp, 0o711)
    os.chmod(sock_path.parent, 0o711)
    os.chmod(sock_path, 0o666)
    # The test's own interpreter may sit in a directory closed to that uid.
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 for the foreign client")
    done = subprocess.run([python, "-I", "-c", FOREIGN_CLIENT, str(sock_path)],
                          user=65534, group=65534, cwd="/", capture_output=True,
                          text=True, timeout=20)
    ack = json.loads(done.stdout)
    assert ack["status"] == "error" and "uid 65534" in ack["error"]
    assert rec.requests == []
    assert any(kind == "peer refused" and f["uid"] == 65534 for kind, f in rec.logs)


class _OsOwnedBy:
    """The os module as the server sees it, but owned by another uid: how a
    test without root meets a peer whose (real, kernel-reported) uid differs."""

    def __init__(self, uid: int) -> None:
        self._uid = uid

    def getuid(self) -> int:
        return self._uid

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def test_a_peer_of_another_uid_is_refused_without_root(make: Make, sock_path: Path,
                                                       rec: Recorder,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import choragos.control.server as ctlserver
    make()
    me = os.getuid()
    monkeypatch.setattr(ctlserver, "os", _OsOwnedBy(me + 1))  # the session's owner
    ack = raw_exchange(sock_path, b'{"cmd": "shutdown"}\n')
    reason = f"connection refused: uid {me} does not own this session"
    assert ack == wire.error(reason)
    assert rec.requests == []
    assert ("peer refused", {"reason": reason, "uid": me, "pid": os.getpid()}) in rec.logs
    monkeypatch.undo()
    assert ping(sock_path)["status"] == "ok"  # its owner still gets in


# --- garbage over the real socket -------------------------------------------------------

def test_garbage_always_gets_an_error_ack(make: Make, sock_path: Path, rec: Recorder) -> None:
    make(deadline=2.0)

    @settings(max_examples=80, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.binary(max_size=2000).filter(lambda b: not _is_valid(b)))
    def garbage(data: bytes) -> None:
        ack = raw_exchange(sock_path, data)
        assert ack["status"] == "error" and ack["error"]

    garbage()
    assert rec.requests == []
    assert ping(sock_path)["status"] == "ok"


def _is_valid(data: bytes) -> bool:
    try:
        wire.parse_request(data)
    except wire.WireError:
        return False
    return True
