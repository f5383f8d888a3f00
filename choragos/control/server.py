"""The session's control socket: one request in, one ack out.

The server owns the socket file and a lock file next to it.  The lock, not
the socket, says whether a session is alive: whoever holds it may remove a
leftover socket, and a second server in the same place is refused with the
holder's pid.  One thread reads every connection's request without
blocking (an idle connection costs a descriptor and a buffer, never a
thread), with a deadline on the whole exchange; each complete request is
then handled on a thread of its own.  A silent or slow client therefore
never holds up the others.  A connection closed before it sent anything is
closed in turn, unanswered and uncounted; past ``max_pending`` open
connections the server first reads every one that has something to read
(a connect-and-close storm leaves thousands closed), and only then drops
the one idle the longest -- never one whose request is waiting, unless
nothing else is left to drop.

Lifecycle: :meth:`ControlServer.bind` takes the lock and binds the socket
(connections queue in the kernel's backlog from then on);
:meth:`ControlServer.serve` starts the accept loop.  If the accept loop dies
(an unexpected error, or its socket closed under it), ``on_died(error)`` is
called on the dying thread; a later :meth:`serve` binds a fresh socket at the
same path, still under the lock, and accepts again.  The listener actor
(``actors/listener.py``) owns these calls.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import signal
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choragos.control import wire

# Connections being read at once; past it the oldest idle one is dropped.
MAX_PENDING = 1024
# Connections taken from the kernel's queue per poll round: a burst is not
# accepted a round at a time, and a storm of connects cannot keep the loop
# accepting for good while the connections it took wait to be read.
ACCEPT_BATCH = 256
# Connections the kernel queues before accept: sized for bursts of verbs.
BACKLOG = 1024
# The longest the accept loop blocks before looking at its socket again.  A
# stop wakes it through its pipe; only a descriptor closed under it (a bug
# elsewhere in the process) needs the look, so an idle server rarely wakes.
CHECK_EVERY_MS = 5000
# What the wake pipe carries: stop the accept loop, or (a test hook) make it fail.
_WAKE_STOP, _WAKE_FAULT = b"x", b"!"
# accept() errors that mean the listening socket itself is gone.
_LISTENER_GONE = (errno.EBADF, errno.ENOTSOCK, errno.EINVAL)

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


class AcceptLoopDied(Exception):
    """The accept loop cannot go on (its socket is gone, or a fault was injected)."""


def _not_ready(request: dict[str, Any]) -> dict[str, Any]:
    return wire.error("the session is still starting; try again")


class _Refused(Exception):
    """A connection is refused before the handler sees it."""

    def __init__(self, kind: str, reason: str, **fields: Any) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.fields = fields


@dataclass
class _Pending:
    """A connection whose request is still being read."""

    conn: socket.socket
    peer_pid: int | None
    end: float
    buf: bytearray = field(default_factory=bytearray)


class ControlServer:
    """Serve ``handler`` on the unix socket ``path``.

    ``log(kind, fields)`` hears about every refusal: "peer refused",
    "busy", "request too large", "request timeout", "bad request",
    "shutting down", "handler error", plus "socket dir mode fixed",
    "accept failed", "send failed", "accept loop died" and "socket rebound".
    """

    def __init__(self, path: Path, handler: Handler = _not_ready, *,
                 max_bytes: int = wire.MAX_REQUEST, deadline: float = wire.DEADLINE,
                 max_clients: int = 64, max_pending: int = MAX_PENDING, log: Log | None = None,
                 workdir: Path | None = None) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.handler = handler
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.max_clients = max_clients
        self.max_pending = max_pending
        self._pending: dict[int, _Pending] = {}
        self.workdir = workdir
        self._log = log
        self._listener: socket.socket | None = None
        self._lock_fd: int | None = None
        self._wake_r, self._wake_w = -1, -1
        self._accepter: threading.Thread | None = None
        self._clients: dict[threading.Thread, socket.socket] = {}
        self._guard = threading.Lock()
        self._stopping = threading.Event()
        self.on_died: Callable[[str], None] = lambda error: None
        self._listener_lost = False  # its fd was closed under it: never close it again
        self._accept_dead = False  # the accept loop died (its thread may still be ending)

    # --- lifecycle --------------------------------------------------------

    def start(self) -> None:
        """Take the lock, bind, listen and start accepting in the background."""
        self.bind()
        self.serve()

    def bind(self) -> None:
        """Take the lock and bind; a second session here fails now, with the holder's pid."""
        self._stopping.clear()
        _prepare_dir(self.path.parent, self._emit)
        self._lock_fd = _take_lock(self.lock_path, self._where())
        try:
            self._bind_listener()
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_w, False)
            os.set_blocking(self._wake_r, False)
        except BaseException:
            self.close()
            raise

    def _bind_listener(self) -> None:
        _remove_stale(self.path)
        self._listener = _bind(self.path)
        self._listener_lost = False

    @property
    def accepting(self) -> bool:
        return (self._accepter is not None and self._accepter.is_alive()
                and not self._accept_dead)

    def serve(self) -> None:
        """Start the accept loop; after a dead one, on a freshly bound socket."""
        if self.accepting or self._lock_fd is None:
            return
        if self._accepter is not None:  # the previous loop died
            self._accepter.join(timeout=2.0)
            self._rebind()
        self._accept_dead = False
        # Under the guard, as close() takes it: a close on another thread (a
        # stop as the session starts) sees no loop or a started one, never one
        # named but not started yet (which it cannot join).
        with self._guard:
            if self._stopping.is_set():
                return
            self._accepter = threading.Thread(target=self._run_accept, daemon=True,
                                              name=f"ctl-accept {self.path.name}")
            self._accepter.start()

    def _rebind(self) -> None:
        """A new socket at the same path; the lock was held all along."""
        self._drop_listener()
        self._bind_listener()
        with suppress(OSError):  # BlockingIOError once empty
            while os.read(self._wake_r, 512):  # a stale fault byte
                pass
        self._emit("socket rebound", {"path": str(self.path)})

    def inject_fault(self) -> None:
        """Test hook: make the accept loop raise, as a real failure would."""
        if self._wake_w >= 0:
            with suppress(OSError):
                os.write(self._wake_w, _WAKE_FAULT)

    def close(self) -> None:
        """Stop accepting, finish or cut open exchanges, remove our files."""
        self._stopping.set()
        if self._wake_w >= 0:
            with suppress(OSError):
                os.write(self._wake_w, _WAKE_STOP)
        with self._guard:
            accepter, self._accepter = self._accepter, None
        if accepter is not None:
            accepter.join(timeout=2.0)
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

    def _drop_listener(self) -> None:
        if self._listener is not None:
            if self._listener_lost:
                self._listener.detach()  # the fd number may be someone else's now
            else:
                self._listener.close()
            self._listener = None
            with suppress(FileNotFoundError):
                self.path.unlink()

    def _release_files(self) -> None:
        self._drop_listener()
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

    def open_connections(self) -> int:
        """Connections being read or handled right now."""
        with self._guard:
            return len(self._pending) + len(self._clients)

    def _run_accept(self) -> None:
        try:
            self._accept_loop()
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            self._emit("accept loop died", {"error": error})
            self._fail_pending()
            # Dead from now on, though this thread still winds down: the
            # listener started next must serve again, not find it alive.
            self._accept_dead = True
            with suppress(Exception):
                self.on_died(error)

    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        # poll, not select: a session with many PTYs can hold fds past 1024.
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._stopping.is_set():
            events = poller.poll(self._next_timeout_ms())
            for fd, _ in events:
                if fd == self._wake_r:
                    if self._woken_to_fail():
                        raise AcceptLoopDied("a fault was injected into the accept loop")
                    self._drop_all_pending(poller)
                    return
                if fd == listener.fileno():
                    self._accept_all(listener, poller)
                elif fd in self._pending:
                    self._readable(self._pending[fd], poller)
            self._expire(poller)
        self._drop_all_pending(poller)

    def _fail_pending(self) -> None:
        """The loop that was reading these is gone: tell them to try again."""
        with self._guard:
            everyone = list(self._pending.values())
            self._pending.clear()
        for pending in everyone:
            _answer_and_close(pending.conn, wire.error(
                "the control socket is restarting; try again"))

    def _woken_to_fail(self) -> bool:
        try:
            data = os.read(self._wake_r, 512)
        except OSError:
            return False
        return _WAKE_FAULT in data and not self._stopping.is_set()

    def _accept_all(self, listener: socket.socket, poller: select.poll) -> None:
        """Take the queued connections, up to a round's worth (``ACCEPT_BATCH``)."""
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                if exc.errno in _LISTENER_GONE:
                    # Its fd was closed under it and may be someone else's now.
                    self._listener_lost = True
                    raise AcceptLoopDied(f"the listening socket is gone: {exc}") from exc
                self._accept_failed(exc)
                return
            self._admit(conn, poller)

    def _admit(self, conn: socket.socket, poller: select.poll) -> None:
        conn.setblocking(False)
        try:
            pid = _check_peer(conn)
        except _Refused as refusal:
            self._emit(refusal.kind, {"reason": refusal.reason, **refusal.fields})
            _answer_and_close(conn, wire.error(refusal.reason))
            return
        with self._guard:
            self._pending[conn.fileno()] = _Pending(conn, pid, time.monotonic() + self.deadline)
        poller.register(conn, select.POLLIN)
        if len(self._pending) > self.max_pending:
            self._make_room(poller)

    def _make_room(self, poller: select.poll) -> None:
        """Over the cap: read whatever has something to read first (a closed
        connection goes, a whole request is handled), then drop the
        connection idle the longest; one with part of its request read only
        when none is idle."""
        self._read_ready(poller)
        if len(self._pending) <= self.max_pending:
            return
        with self._guard:
            waiting = list(self._pending.values())
        victim = next((p for p in waiting if not p.buf), waiting[0])
        self._emit("idle dropped", {"pending": len(waiting)})
        self._unpend(victim, poller, wire.error(
            f"dropped: {self.max_pending} connections were open and this one had "
            "sent nothing for the longest; try again", dropped=True))

    def _read_ready(self, poller: select.poll) -> None:
        """Read every pending connection that has data or was closed, now."""
        probe = select.poll()
        with self._guard:
            for fd in self._pending:
                probe.register(fd, select.POLLIN)
        for fd, _ in probe.poll(0):
            pending = self._pending.get(fd)
            if pending is not None:
                self._readable(pending, poller)

    def _accept_failed(self, exc: OSError) -> None:
        self._emit("accept failed", {"error": exc.strerror or str(exc)})
        if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
            # Out of descriptors: back off instead of spinning on accept.
            self._stopping.wait(0.1)

    def _readable(self, pending: _Pending, poller: select.poll) -> None:
        try:
            chunk = pending.conn.recv(min(65536, self.max_bytes + 1 - len(pending.buf)))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        pending.buf += chunk
        if len(pending.buf) > self.max_bytes:
            reason = f"request too large (limit {_size(self.max_bytes)})"
            self._emit("request too large", {"reason": reason})
            self._unpend(pending, poller, wire.error(reason))
        elif not chunk and not pending.buf and _hung_up(pending.conn):
            # Closed both ways having sent nothing: nobody to answer, nothing
            # to handle or log (a half-closed client still gets its error).
            self._unpend(pending, poller)
            pending.conn.close()
        elif not chunk or _request_ended(pending.buf, chunk):
            self._unpend(pending, poller)
            self._dispatch(pending)

    def _unpend(self, pending: _Pending, poller: select.poll,
                ack: dict[str, Any] | None = None) -> None:
        """Stop reading ``pending``; with ``ack``, answer it and close."""
        with self._guard:
            self._pending.pop(pending.conn.fileno(), None)
        _unregister(poller, pending.conn)
        if ack is not None:
            _answer_and_close(pending.conn, ack)

    def _next_timeout_ms(self) -> int:
        with self._guard:
            ends = [pending.end for pending in self._pending.values()]
        # Never block for good: a listening fd closed under the loop does not
        # wake a poll already waiting, but the next one reports it (POLLNVAL).
        if not ends:
            return CHECK_EVERY_MS
        return min(CHECK_EVERY_MS, max(0, int((min(ends) - time.monotonic()) * 1000) + 1))

    def _expire(self, poller: select.poll) -> None:
        now = time.monotonic()
        with self._guard:
            late = [p for p in self._pending.values() if p.end <= now]
        for pending in late:
            reason = f"timed out after {self.deadline:g}s waiting for the request"
            self._emit("request timeout", {"reason": reason})
            self._unpend(pending, poller, wire.error(reason))

    def _drop_all_pending(self, poller: select.poll) -> None:
        with self._guard:
            everyone = list(self._pending.values())
        for pending in everyone:
            self._unpend(pending, poller, wire.error("the session is shutting down"))

    def _dispatch(self, pending: _Pending) -> None:
        thread = threading.Thread(target=self._serve, args=(pending,), daemon=True,
                                  name=f"ctl-client {self.path.name}")
        with self._guard:
            busy = len(self._clients) >= self.max_clients
            if not busy:
                self._clients[thread] = pending.conn
        if busy:
            self._refuse_busy(pending.conn)
        else:
            thread.start()

    def _refuse_busy(self, conn: socket.socket) -> None:
        self._emit("busy", {"clients": self.max_clients})
        _answer_and_close(conn, wire.error(
            f"busy: the session is serving {self.max_clients} requests; try again",
            busy=True))

    # --- one exchange -----------------------------------------------------

    def _serve(self, pending: _Pending) -> None:
        conn = pending.conn
        try:
            with conn:
                conn.setblocking(True)
                ack = self._exchange(pending)
                _send_ack(conn, ack, pending.end)
        except Exception as exc:  # a vanished client is routine; deregister regardless
            self._emit("send failed", {"error": f"{type(exc).__name__}: {exc}"})
        finally:
            with self._guard:
                self._clients.pop(threading.current_thread(), None)

    def _exchange(self, pending: _Pending) -> dict[str, Any]:
        try:
            if self._stopping.is_set():
                raise _Refused("shutting down", "the session is shutting down")
            request = wire.parse_request(bytes(pending.buf))
        except _Refused as refusal:
            self._emit(refusal.kind, {"reason": refusal.reason, **refusal.fields})
            return wire.error(refusal.reason)
        except wire.WireError as exc:
            self._emit("bad request", {"reason": exc.reason})
            return wire.error(exc.reason)
        request[wire.PEER_PID] = pending.peer_pid  # from the kernel, never from the wire
        return self._call_handler(request)

    def _call_handler(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            ack = self.handler(request)
            if not isinstance(ack, dict):
                raise TypeError(f"handler returned {type(ack).__name__}, not a dict")
            # Encoded here, where one that cannot be is still answered with
            # an error; sent as encoded (a board answer encoded twice cost
            # the session as much again per request).
            encoded = _Ack(ack)
            encoded.raw = wire.encode(ack)
        except Exception as exc:
            self._emit("handler error", {"cmd": request["cmd"],
                                         "error": f"{type(exc).__name__}: {exc}"})
            return wire.error(f"internal error: {type(exc).__name__}: {exc}")
        return encoded

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
    listener.listen(BACKLOG)
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


def _answer_and_close(conn: socket.socket, ack: dict[str, Any]) -> None:
    """A best-effort answer from the reading thread, which must never block."""
    with conn:
        conn.setblocking(False)
        with suppress(OSError):
            conn.send(wire.encode(ack))


def _hung_up(conn: socket.socket) -> bool:
    """The peer closed both ways, not only its writing side.  Asked afresh:
    a poll round's answer may be about an earlier connection that had the
    same descriptor number."""
    probe = select.poll()
    probe.register(conn, 0)  # hang-ups are reported whatever is asked for
    return any(revents & select.POLLHUP for _, revents in probe.poll(0))


def _unregister(poller: select.poll, conn: socket.socket) -> None:
    with suppress(KeyError, ValueError, OSError):
        poller.unregister(conn)


class _Ack(dict):
    """A handler's ack with its bytes on the wire (``raw``), encoded once."""

    raw: bytes


def _send_ack(conn: socket.socket, ack: dict[str, Any], end: float) -> None:
    # A refused client may be out of time already; give the ack a brief
    # chance anyway so it learns why it was cut.
    conn.settimeout(max(end - time.monotonic(), 0.2))
    data = ack.raw if isinstance(ack, _Ack) else wire.encode(ack)
    with suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
        conn.sendall(data)


def _size(limit: int) -> str:
    if limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    if limit % 1024 == 0:
        return f"{limit // 1024} KiB"
    return f"{limit} bytes"


# The session binds its socket before it starts its actors; the listener
# actor (loaded after the roles' spawns) accepts on it once it starts.
# A test names the loop it kills: "accept-loop", "attach-pump" or "web".
FAULT_HOOK = "CHORAGOS_TEST_FAULTS"


def fault_hook(kind: str, inject: Callable[[], None]) -> bool:
    """Test hook, off unless the environment names ``kind``: SIGUSR2 then
    calls ``inject`` (which makes a loop raise), so a test can kill that loop
    for real in a running session.  Only the main thread may set a handler."""
    if os.environ.get(FAULT_HOOK) != kind:
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(signal.SIGUSR2, lambda signum, frame: inject())
    return True


def bind_server(path: Path, log_event: Callable[..., None]) -> ControlServer:
    """Take the session lock and bind the control socket (no accepting yet)."""

    def on_socket_event(kind: str, fields: dict) -> None:
        log_event(f"socket: {kind}", **fields)

    server = ControlServer(path, log=on_socket_event)
    server.bind()
    return server
