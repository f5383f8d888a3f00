"""The session server in the background: daemonizing and the sidecar file.

:func:`spawn` double-forks and ``setsid``\\ s *before any thread exists* (a
fork keeps only the calling thread, so threads must be born in the final
process), then waits on a pipe until the server says it is ready (both
sockets bound) or why it is not.  The server's stdout and stderr go to
``.choragos/logs/server.log``; a crash leaves its traceback in
``.choragos/logs/crash.log``.

Next to the control socket each server keeps ``<hash>.json``, the
*sidecar*: its pid, directory, roles, start time and who is attached.
``choragos ls`` reads these across projects; the control socket's ``ping``
says whether the server behind one is really alive.

Standard library only: ``choragos ls`` and ``kill`` import this.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from choragos import statedir

READY_TIMEOUT = 60.0


def ui_path_for(control: Path) -> Path:
    """The attach socket next to a control socket: ``<hash>.ui.sock``."""
    return control.with_name(control.name.removesuffix(".sock") + ".ui.sock")


def sidecar_for(control: Path) -> Path:
    return control.with_name(control.name.removesuffix(".sock") + ".json")


def crash_log(workdir: Path) -> Path:
    return Path(workdir) / ".choragos" / "logs" / "crash.log"


def write_crash(workdir: Path, what: str, trace: str) -> Path | None:
    """Append a traceback to the project's crash log; None if it cannot be written."""
    path = crash_log(workdir)
    try:
        with statedir.open_append(path) as out:
            out.write(f"--- {what} {time.strftime('%Y-%m-%d %H:%M:%S')} (pid {os.getpid()})\n"
                      f"{trace}\n")
    except OSError:
        return None
    return path


# -- readiness -------------------------------------------------------------------------

class Ready:
    """The server's end of the readiness pipe: say ``ok`` once, or ``fail``."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def announce(self) -> None:
        """The server's pid, ahead of its answer: a start interrupted before
        the answer can still stop the server it began."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.write(self._fd, f"pid {os.getpid()}\n".encode())

    def ok(self, **info: object) -> None:
        self._say("ok " + json.dumps(info))

    def fail(self, reason: str) -> None:
        self._say("error " + " ".join(reason.split()))

    @property
    def pending(self) -> bool:
        return self._fd is not None

    def _say(self, line: str) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._fd, (line + "\n").encode())
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = None


@dataclass
class Started:
    """What starting the server as a daemon came to: ready (with its info), or why not."""

    ok: bool
    reason: str = ""
    info: dict | None = None
    interrupted: bool = False  # ctrl-c while waiting: the server was stopped again


STOP_WAIT = 60.0  # for an interrupted start's server to stop (longer than a stop takes)


class _Answer:
    """The server's lines on the readiness pipe as they come: its pid, then
    ``ok {json}`` or ``error reason``."""

    def __init__(self, reader: int) -> None:
        self.reader = reader
        self.pid: int | None = None
        self.line: str | None = None
        self._buffer = b""

    def read(self, timeout: float) -> bool:
        """Take what arrived within ``timeout``; False at end of file."""
        ready, _, _ = select.select([self.reader], [], [], max(timeout, 0.0))
        if not ready:
            return True
        chunk = os.read(self.reader, 4096)
        self._buffer += chunk
        while b"\n" in self._buffer and self.line is None:
            raw, self._buffer = self._buffer.split(b"\n", 1)
            text = raw.decode("utf-8", "replace")
            word, _, rest = text.partition(" ")
            if word == "pid" and rest.isdigit():
                self.pid = int(rest)
            else:
                self.line = text
        return bool(chunk)


def spawn(run: Callable[[Ready], int], workdir: Path, log_path: Path,
          timeout: float = READY_TIMEOUT, meanwhile: Callable[[], object] | None = None
          ) -> Started:
    """Run ``run(ready)`` in a daemon; return once it is ready or has failed.
    ``meanwhile`` runs here while the daemon starts (the caller's own set-up
    for after, off the daemon's way: the machine's other core does it)."""
    reader, writer = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the first child: new session, then fork again and leave
        os.close(reader)
        try:
            os.setsid()
            if os.fork() > 0:
                os._exit(0)
            _become_daemon(run, Ready(writer), workdir, log_path)
        finally:
            os._exit(1)
    os.close(writer)
    answer = _Answer(reader)
    try:
        if meanwhile is not None:
            meanwhile()
        os.waitpid(pid, 0)
        started = _wait_ready(answer, timeout, log_path)
        if not started.ok and answer.line is not None and answer.pid is not None:
            # A server that failed stops what it had started (roles, sockets):
            # the command ends once it has, so nothing of it outlives the error.
            _wait_gone(answer.pid, time.monotonic() + STOP_WAIT)
        return started
    except KeyboardInterrupt:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # the first child, if not reaped yet: it leaves at once
        return _stop_interrupted(answer)
    finally:
        os.close(reader)


def _stop_interrupted(answer: _Answer) -> Started:
    """Ctrl-C while the server was starting: it is stopped again, whatever
    it had started (roles included), before the interrupt is reported."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second ctrl-c waits too
    try:
        deadline = time.monotonic() + STOP_WAIT
        while answer.pid is None and time.monotonic() < deadline:
            if not answer.read(deadline - time.monotonic()):
                break  # gone before it said who it was
        reason = stop_started(answer.pid, deadline) if answer.pid is not None else None
    finally:
        signal.signal(signal.SIGINT, previous)
    return Started(False, f"interrupted; {reason or 'the session it was starting was stopped'}",
                   interrupted=True)


def stop_started(pid: int, deadline: float) -> str | None:
    """Stop a server this process started (SIGTERM: a clean stop, roles
    included) and wait for it until ``deadline``; None once it is gone,
    else what to tell the user."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    _wait_gone(pid, deadline)
    return f"the server (pid {pid}) is still stopping" if alive(pid) else None


def _wait_gone(pid: int, deadline: float) -> None:
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # not our child: nothing to wait on but its pid


def _become_daemon(run: Callable[[Ready], int], ready: Ready, workdir: Path,
                   log_path: Path) -> None:
    code = 1
    try:
        _redirect(log_path)
        ready.announce()
        code = run(ready)
    except BaseException:
        trace = traceback.format_exc()
        where = write_crash(workdir, "server crash", trace)
        with contextlib.suppress(Exception):
            sys.stderr.write(trace)
        ready.fail(f"the server crashed while starting; see {where or log_path}")
    finally:
        ready.fail(f"the server stopped before it was ready; see {log_path}")
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _redirect(log_path: Path) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out = statedir.append_fd(log_path)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)


def _wait_ready(answer: _Answer, timeout: float, log_path: Path) -> Started:
    end = time.monotonic() + timeout
    while answer.line is None:
        remaining = end - time.monotonic()
        if remaining <= 0:
            return Started(False, f"the server did not get ready within {timeout:g}s; "
                                  f"see {log_path}")
        if not answer.read(remaining) and answer.line is None:
            return Started(False, f"the server exited before it was ready; see {log_path}")
    word, _, rest = answer.line.partition(" ")
    if word == "ok":
        try:
            info = json.loads(rest)
        except ValueError:
            info = {}
        return Started(True, info=info if isinstance(info, dict) else {})
    return Started(False, rest or f"the server failed to start; see {log_path}")


# -- the sidecar -----------------------------------------------------------------------

class Sidecar:
    """``<hash>.json`` next to the control socket, rewritten whole on each change."""

    def __init__(self, control: Path, **fields: object) -> None:
        self.path = sidecar_for(control)
        self.fields: dict = {"pid": os.getpid(), "started": time.time(),
                             "socket": str(control), "attached": None, **fields}

    def write(self, **changes: object) -> None:
        self.fields.update(changes)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self.fields, out)
            os.replace(tmp, self.path)
        except OSError:
            pass  # ls will just not list this session

    def attached(self, pid: int | None) -> None:
        self.write(attached=pid)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()


def read_sidecars(directories: list[Path]) -> list[dict]:
    """Every sidecar in ``directories`` whose server process still exists."""
    found: dict[str, dict] = {}
    for directory in directories:
        try:
            entries = sorted(directory.glob("*.json"))
        except OSError:
            continue
        for path in entries:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
                continue
            if not alive(data["pid"]):
                with contextlib.suppress(OSError):
                    path.unlink()  # the server died without cleaning up
                continue
            data["sidecar"] = str(path)
            found.setdefault(str(data.get("socket", path)), data)
    return list(found.values())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
