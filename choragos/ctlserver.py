"""The session's control socket: one request in, one ack out (spec P1/P2).

The server owns the socket file and a lock file next to it.  The lock, not
the socket, says whether a session is alive: whoever holds it may remove a
leftover socket, and a second server in the same place is refused with the
holder's pid.  Every connection gets its own thread and a deadline on the
whole exchange, so a silent or slow client never holds up the others.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from choragos import wire

Handler = Callable[[dict[str, Any]], dict[str, Any]]
Log = Callable[[str, dict[str, Any]], None]


class ServerStartError(Exception):
    """The control socket could not be set up; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SessionRunning(ServerStartError):
    """Another live session holds the lock for this socket."""

    def __init__(self, pid: int | None, where: str) -> None:
        who = f"pid {pid}" if pid else "pid unknown"
        super().__init__(f"a choragos session ({who}) is already running in {where}; "
                         "attach to it or stop it with `choragos shutdown`")
        self.pid = pid
        self.where = where


class _Refused(Exception):
    """A connection is refused before the handler sees it."""

    def __init__(self, kind: str, reason: str, **fields: Any) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.fields = fields


class ControlServer:
    """Serve ``handler`` on the unix socket ``path``.

    ``log(kind, fields)`` hears about every refusal: "peer refused",
    "busy", "request too large", "request timeout", "bad request",
    "shutting down", "handler error", plus "socket dir mode fixed",
    "accept failed" and "send failed".
    """

    def __init__(self, path: Path, handler: Handler, *, max_bytes: int = wire.MAX_REQUEST,
                 deadline: float = wire.DEADLINE, max_clients: int = 64,
                 log: Log | None = None, workdir: Path | None = None) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.handler = handler
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.max_clients = max_clients
        self.workdir = workdir
        self._log = log
        self._listener: socket.socket | None = None
        self._lock_fd: int | None = None
        self._wake_r, self._wake_w = -1, -1
        self._accepter: threading.Thread | None = None
        self._clients: dict[threading.Thread, socket.socket] = {}
        self._guard = threading.Lock()
        self._stopping = threading.Event()

    # --- lifecycle --------------------------------------------------------

    def start(self) -> None:
        """Take the lock, bind, listen and start accepting in the background."""
        self._stopping.clear()
        _prepare_dir(self.path.parent, self._emit)
        self._lock_fd = _take_lock(self.lock_path, self._where())
        try:
            _remove_stale(self.path)
            self._listener = _bind(self.path)
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_w, False)
        except BaseException:
            self.close()
            raise
        self._accepter = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"ctl-accept {self.path.name}")
        self._accepter.start()

    def close(self) -> None:
        """Stop accepting, finish or cut open exchanges, remove our files."""
        self._stopping.set()
        if self._wake_w >= 0:
            with suppress(OSError):
                os.write(self._wake_w, b"x")
        if self._accepter is not None:
            self._accepter.join(timeout=2.0)
            self._accepter = None
        self._cut_clients()
        self._release_files()

    def __enter__(self) -> ControlServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _where(self) -> str:
        # The session runs in its project directory unless told otherwise.
        if self.workdir is not None:
            return str(self.workdir)
        try:
            return str(Path.cwd())
        except OSError:
            return str(self.path)

    def _cut_clients(self) -> None:
        with self._guard:
            clients = list(self._clients.items())
        for _, conn in clients:
            # Wakes a thread blocked in recv; it then answers and exits.
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RD)
        end = time.monotonic() + min(self.deadline, 2.0)
        for thread, _ in clients:
            thread.join(timeout=max(0.0, end - time.monotonic()))

    def _release_files(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            with suppress(FileNotFoundError):
                self.path.unlink()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        if self._lock_fd is not None:
            # Unlink before unlocking: a newcomer that opened the old file
            # notices the inode is gone and retries on a fresh one.
            with suppress(FileNotFoundError):
                self.lock_path.unlink()
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- accepting --------------------------------------------------------

    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        # poll, not select: a session with many PTYs can hold fds past 1024.
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._stopping.is_set():
            ready = {fd for fd, _ in poller.poll()}
            if self._wake_r in ready:
                return
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as exc:
                self._accept_failed(exc)
                continue
            self._dispatch(conn)

    def _accept_failed(self, exc: OSError) -> None:
        self._emit("accept failed", {"error": exc.strerror or str(exc)})
        if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
            # Out of descriptors: back off instead of spinning on accept.
            self._stopping.wait(0.1)

    def _dispatch(self, conn: socket.socket) -> None:
        conn.setblocking(True)
        thread = threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                  name=f"ctl-client {self.path.name}")
        with self._guard:
            busy = len(self._clients) >= self.max_clients
            if not busy:
                self._clients[thread] = conn
        if busy:
            self._refuse_busy(conn)
        else:
            thread.start()

    def _refuse_busy(self, conn: socket.socket) -> None:
        self._emit("busy", {"clients": self.max_clients})
        ack = wire.error(f"busy: the session is serving {self.max_clients} requests; "
                         "try again", busy=True)
        with conn:
            conn.setblocking(False)
            with suppress(OSError):
                conn.send(wire.encode(ack))

    # --- one exchange -----------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        end = time.monotonic() + self.deadline
        try:
            with conn:
                ack = self._exchange(conn, end)
                _send_ack(conn, ack, end)
        except Exception as exc:  # a vanished client is routine; deregister regardless
            self._emit("send failed", {"error": f"{type(exc).__name__}: {exc}"})
        finally:
            with self._guard:
                self._clients.pop(threading.current_thread(), None)

    def _exchange(self, conn: socket.socket, end: float) -> dict[str, Any]:
        try:
            peer_pid = _check_peer(conn)
            raw = self._read_request(conn, end)
            if self._stopping.is_set():
                raise _Refused("shutting down", "the session is shutting down")
            request = wire.parse_request(raw)
        except _Refused as refusal:
            self._emit(refusal.kind, {"reason": refusal.reason, **refusal.fields})
            return wire.error(refusal.reason)
        except wire.WireError as exc:
            self._emit("bad request", {"reason": exc.reason})
            return wire.error(exc.reason)
        request[wire.PEER_PID] = peer_pid  # from the kernel; parse_request dropped any sent
        return self._call_handler(request)

    def _call_handler(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            ack = self.handler(request)
            if not isinstance(ack, dict):
                raise TypeError(f"handler returned {type(ack).__name__}, not a dict")
            json.dumps(ack)
        except Exception as exc:
            self._emit("handler error", {"cmd": request["cmd"],
                                         "error": f"{type(exc).__name__}: {exc}"})
            return wire.error(f"internal error: {type(exc).__name__}: {exc}")
        return ack

    def _read_request(self, conn: socket.socket, end: float) -> bytes:
        buf = bytearray()
        while True:
            chunk = self._recv(conn, end, self.max_bytes + 1 - len(buf))
            if not chunk:
                return bytes(buf)
            buf += chunk
            if len(buf) > self.max_bytes:
                raise _Refused("request too large",
                               f"request too large (limit {_size(self.max_bytes)})")
            if _request_ended(buf, chunk):
                return bytes(buf)

    def _recv(self, conn: socket.socket, end: float, size: int) -> bytes:
        remaining = end - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            conn.settimeout(remaining)
            return conn.recv(min(size, 65536))
        except TimeoutError:
            raise _Refused("request timeout", f"timed out after {self.deadline:g}s "
                           "waiting for the request") from None

    def _emit(self, kind: str, fields: dict[str, Any]) -> None:
        if self._log is None:
            return
        with suppress(Exception):  # a failing logger must not take the socket down
            self._log(kind, fields)


# --- setup helpers ----------------------------------------------------------

def _prepare_dir(directory: Path, emit: Log) -> None:
    """Make ``directory`` exist, be ours, and be closed to everyone else."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        info = os.lstat(directory)
    except OSError as exc:
        raise ServerStartError(f"cannot create the socket directory {directory}: "
                               f"{exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise ServerStartError(f"{directory} is not a directory (a symlink?); "
                               "refusing to put the control socket there")
    if info.st_uid != os.getuid():
        raise ServerStartError(f"the socket directory {directory} belongs to uid "
                               f"{info.st_uid}, not to you; remove it or set CHORAGOS_SOCK")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        _tighten(directory, mode, emit)


def _tighten(directory: Path, mode: int, emit: Log) -> None:
    # A shared directory such as /tmp is ours only when running as root;
    # closing it would break every other user, so refuse instead.
    if mode & (stat.S_ISVTX | 0o002):
        raise ServerStartError(f"{directory} is a shared directory (mode {mode:o}); "
                               "point CHORAGOS_SOCK into a private one")
    os.chmod(directory, 0o700)
    emit("socket dir mode fixed", {"dir": str(directory), "was": f"{mode:o}"})


def _take_lock(lock_path: Path, where: str) -> int:
    """Hold an exclusive flock on ``lock_path`` for the server's lifetime."""
    while True:
        fd = _open_lock(lock_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, holder_dir = _read_holder(fd)
            os.close(fd)
            raise SessionRunning(pid, holder_dir or where) from None
        if _same_file(fd, lock_path):
            break
        # The previous holder unlinked the file as it closed; lock a fresh one.
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n{where}\n".encode())
    return fd


def _open_lock(lock_path: Path) -> int:
    try:
        return os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise ServerStartError(f"cannot open the lock file {lock_path}: "
                               f"{exc.strerror or exc}") from None


def _read_holder(fd: int) -> tuple[int | None, str | None]:
    """The pid and directory the lock holder wrote, as far as readable."""
    try:
        lines = os.pread(fd, 8192, 0).decode("utf-8", "replace").split("\n")
    except OSError:
        return None, None
    pid = int(lines[0]) if lines[0].isdigit() else None
    return pid, (lines[1] if len(lines) > 1 and lines[1] else None)


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _remove_stale(path: Path) -> None:
    """Under the lock, any socket left at ``path`` is from a crashed run."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not (stat.S_ISSOCK(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise ServerStartError(f"{path} exists and is not a socket; "
                               "refusing to replace it")
    path.unlink()


def _bind(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The umask makes the socket 0600 from the moment it exists; the chmod
    # only repeats it for platforms that ignore the umask on sockets.
    previous = os.umask(0o177)
    try:
        listener.bind(os.fspath(path))
    except OSError as exc:
        listener.close()
        raise ServerStartError(_bind_reason(path, exc)) from None
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    listener.listen(128)
    listener.setblocking(False)
    return listener


def _bind_reason(path: Path, exc: OSError) -> str:
    size = len(os.fsencode(path))
    if size >= 104 or "too long" in str(exc):
        return (f"the socket path {path} is {size} bytes, too long for a unix socket "
                "(about 100 at most); set CHORAGOS_SOCK to a shorter path")
    return f"cannot bind {path}: {exc.strerror or exc}"


# --- exchange helpers -------------------------------------------------------

def _check_peer(conn: socket.socket) -> int | None:
    """The peer's pid, after refusing another user's connection."""
    creds = _peer_creds(conn)
    if creds is None:
        return None
    pid, uid = creds
    if uid != os.getuid():
        raise _Refused("peer refused", f"connection refused: uid {uid} does not own "
                       "this session", uid=uid, pid=pid)
    return pid


def _peer_creds(conn: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the peer; None where the platform cannot say (the 0700
    directory is then the only guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    size = struct.calcsize("3i")
    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, size))
    return pid, uid


def _request_ended(buf: bytearray, chunk: bytes) -> bool:
    """True at a newline after some content, or once ``buf`` holds a whole
    JSON value (clients that neither close nor end the line still get an
    answer without waiting for the deadline)."""
    newline = chunk.rfind(b"\n")
    if newline >= 0 and buf[: len(buf) - len(chunk) + newline].strip():
        return True
    text = bytes(buf).decode("utf-8", errors="replace").lstrip()
    if not text:
        return False
    try:
        json.JSONDecoder().raw_decode(text)
    except RecursionError:
        return True
    except ValueError:
        return False
    return True


def _send_ack(conn: socket.socket, ack: dict[str, Any], end: float) -> None:
    # A refused client may be out of time already; give the ack a brief
    # chance anyway so it learns why it was cut.
    conn.settimeout(max(end - time.monotonic(), 0.2))
    with suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
        conn.sendall(wire.encode(ack))


def _size(limit: int) -> str:
    if limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    if limit % 1024 == 0:
        return f"{limit // 1024} KiB"
    return f"{limit} bytes"
