"""The one seam between choragos and the operating system's processes.

A role's agent runs in a pseudo-terminal as the leader of its own session
and process group, so signals (stop, pause, resume) reach everything it
started.  Spawning, writing, signalling and reaping go through
:class:`PtyChild`; the reading happens on a :class:`Reader` thread that hands
bytes to a callback and reports the exit exactly once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ptyprocess import PtyProcess

from choragos.restartpolicy import ExitStatus

READ_CHUNK = 65536


class SpawnError(Exception):
    """The agent could not be started; the message says why in one sentence."""


def resolve_command(command: str, env: Mapping[str, str]) -> str:
    """Find ``command`` on the role's own PATH, the one it will really run with."""
    if os.sep in command:
        if os.access(command, os.X_OK) and not os.path.isdir(command):
            return command
        raise SpawnError(f"{command} is not an executable file")
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise SpawnError(f"command {command!r} was not found on PATH; install it or fix "
                         f"`command` in .choragos.toml")
    return found


class PtyChild:
    def __init__(self, proc: PtyProcess) -> None:
        self.proc = proc
        self.pid: int = proc.pid
        self.fd: int = proc.fd
        self._exit: ExitStatus | None = None
        self._lock = threading.Lock()
        # Writes come from several threads (the role actor's injections, the
        # deck's keys, the terminal's replies on the reader thread): one write
        # at a time, so each call's bytes reach the agent contiguous, and
        # never after close (the fd number may be another pane's by then).
        self._write_lock = threading.Lock()
        os.set_blocking(self.fd, False)

    @classmethod
    def spawn(cls, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
              cols: int = 120, rows: int = 40) -> PtyChild:
        argv = [resolve_command(argv[0], env), *argv[1:]]
        try:
            proc = PtyProcess.spawn(argv, cwd=str(cwd), env=dict(env), dimensions=(rows, cols))
        except OSError as exc:
            raise SpawnError(f"could not start {argv[0]}: {exc.strerror or exc}") from exc
        return cls(proc)

    def write(self, data: bytes) -> bool:
        """Write everything, waiting for the PTY to drain when it is full.

        False when the PTY is gone: the reader reports the exit, so a write
        racing with it is not an error of its own.
        """
        with self._write_lock:
            if self.proc.closed:
                return False
            view = memoryview(data)
            while view:
                try:
                    written = os.write(self.fd, view)
                except BlockingIOError:
                    select.select([], [self.fd], [], 1.0)
                    if self._exit is not None or self.poll() is not None:
                        return False  # nobody will ever read the rest
                    continue
                except OSError:
                    return False
                view = view[written:]
            return True

    def try_write(self, data: bytes) -> bytes | None:
        """Write what the PTY takes now, never waiting: another thread's write
        in progress or a full PTY leave the rest.  Returns the bytes not
        written (empty when all went in), None when the PTY is gone."""
        if not self._write_lock.acquire(blocking=False):
            return data
        try:
            if self.proc.closed:
                return None
            try:
                written = os.write(self.fd, data)
            except BlockingIOError:
                return data
            except OSError:
                return None
            return data[written:]
        finally:
            self._write_lock.release()

    def signal_group(self, sig: int) -> bool:
        """Signal the whole process group; False when it is already gone."""
        try:
            os.killpg(self.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def stopped(self) -> bool:
        """The process is stopped (SIGSTOP, SIGTSTP, a tracer), as /proc says."""
        try:
            with open(f"/proc/{self.pid}/stat", encoding="ascii", errors="replace") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
        except (OSError, IndexError):
            return False

    def resize(self, cols: int, rows: int) -> None:
        with contextlib.suppress(OSError):
            self.proc.setwinsize(rows, cols)

    def poll(self) -> ExitStatus | None:
        """Reap the child if it has exited; never blocks."""
        with self._lock:
            if self._exit is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    self._exit = ExitStatus(code=None)
                    return self._exit
                if pid == 0:
                    return None
                self._exit = _decode(status)
            return self._exit

    def wait(self, timeout: float) -> ExitStatus | None:
        stop = threading.Event()
        for _ in range(max(1, int(timeout / 0.02))):
            status = self.poll()
            if status is not None:
                return status
            stop.wait(0.02)
        return self.poll()

    def close(self) -> None:
        """Close our end once.  ptyprocess would close the same fd number again
        from ``__del__`` (by then perhaps another pane's PTY), so mark it closed."""
        with self._write_lock:  # a write in progress finishes on the fd it started on
            if self.proc.closed:
                return
            with contextlib.suppress(OSError):
                self.proc.fileobj.close()
            self.proc.closed = True
            self.proc.fd = -1

    def terminate(self, grace: float = 3.0) -> ExitStatus | None:
        """SIGHUP+SIGTERM the group, then SIGKILL after ``grace`` seconds."""
        if self.poll() is not None:
            return self._exit
        self.signal_group(signal.SIGCONT)  # a paused group cannot act on SIGTERM
        self.signal_group(signal.SIGHUP)
        self.signal_group(signal.SIGTERM)
        status = self.wait(grace)
        if status is None:
            self.signal_group(signal.SIGKILL)
            status = self.wait(2.0)
        return status


def _decode(status: int) -> ExitStatus:
    if os.WIFSIGNALED(status):
        return ExitStatus(signal=os.WTERMSIG(status))
    return ExitStatus(code=os.WEXITSTATUS(status))


class Reader(threading.Thread):
    """Reads a child's PTY until it exits; reports data and the exit status."""

    def __init__(self, child: PtyChild, on_data: Callable[[bytes], None],
                 on_exit: Callable[[ExitStatus], None], name: str = "pty-reader") -> None:
        super().__init__(name=name, daemon=True)
        self.child = child
        self.on_data = on_data
        self.on_exit = on_exit
        self._halt = threading.Event()

    def halt(self) -> None:
        self._halt.set()

    def run(self) -> None:
        fd = self.child.fd
        while not self._halt.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.25)
            except (OSError, ValueError):
                break  # closed under us: the pane is being torn down
            if not ready:
                if self.child.poll() is not None:
                    break  # exited, though a grandchild may still hold the PTY
                continue
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.EIO, errno.EBADF):
                    raise
                data = b""
            if not data:
                break
            self.on_data(data)
        if self._halt.is_set():
            return
        status = self.child.poll() or self.child.wait(5.0) or ExitStatus(code=None)
        self.on_exit(status)
