"""Hooks: shell commands run when a human is needed.

``on_gate``, ``on_input``, ``on_timeout``, ``on_budget``, ``on_exit``,
``on_idle``, ``on_done`` and ``on_limit`` (from ``[ui]``) run through
``/bin/sh -c`` in the background, in their own process group, with the
``serve`` environment plus ``CHORAGOS_*`` variables; its PATH leaves out the
folders an agent can write (choragos/safeexec.py).  A hook runs inside the
session, so operator commands from it are refused (choragos/control/authority.py).
Task text reaches a hook only through ``$CHORAGOS_TASK``, never spliced into
the command string, so a task cannot inject shell code.  A hook that fails or outlives
its time limit is killed and reported; the deck never waits for one.
At most ``MAX_RUNNING`` run at once, started in the order they fired; a
burst beyond that waits its turn, and one beyond ``MAX_WAITING`` waiting is
not run and is reported, so a flood of events never becomes a flood of shells.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

from choragos import safeexec
from choragos.fdwait import wait_ready

HOOK_TIMEOUT = 30.0
KEEP_OUTPUT = 2000      # characters of output quoted in a "hook failed" event
KEEP_BYTES = 64 * 1024  # bytes of output held while a hook runs
MAX_OUTPUT = 1 << 20    # bytes of output read from a hook; past it, it is killed
EXITED, TIMED_OUT, FLOODED = "exited", "timed out", "flooded"  # how reading a hook ended
MAX_RUNNING = 4         # hooks running at once: a hung one holds one place
MAX_WAITING = 64        # firings waiting for a place; one more is reported, not run
# Characters of one value in a hook's environment: the kernel refuses a single
# one over 128 KiB (E2BIG), and then the hook would not run at all.
MAX_VALUE = 32 * 1024
STOP_GRACE = 2.0        # seconds hooks still running at the session's stop may finish in
STOPPED = "not run: the session stopped"
KILLED_AT_STOP = f"still running {STOP_GRACE:g}s after the session stopped; killed"


class Hooks:
    def __init__(self, commands: Mapping[str, str], workdir: Path,
                 on_failure: Callable[..., None], timeout: float = HOOK_TIMEOUT,
                 base_env: Mapping[str, str] | None = None) -> None:
        self.commands = {name: cmd for name, cmd in commands.items() if cmd.strip()}
        self.workdir = workdir
        self.on_failure = on_failure
        self.timeout = timeout
        self.base_env = base_env
        # fire() runs on the core's thread, and on the deck supervisor's when
        # the deck is given up: the waiting line and the count of runners are
        # kept under a lock.  A runner takes firings in order until none wait.
        self._lock = threading.Condition()
        self._waiting: deque[tuple[str, str, dict[str, str], str]] = deque()
        self._runners = 0
        self._procs: set[subprocess.Popen] = set()  # the shells running now
        self._closed = False
        self._killing = False  # close() kills the shells still running
        # Told of every hook that fires, configured or not: the push notifier.
        # (hook, role, task, task_id, extra): extra as the hook's environment gets it.
        self.heard: list[Callable[[str, str, str, str, Mapping[str, str]], None]] = []

    def fire(self, hook: str, role: str, task: str = "", task_id: str = "",
             extra: Mapping[str, str] | None = None) -> bool:
        """Start ``hook`` if configured; False when there is nothing to run."""
        for listener in list(self.heard):
            try:
                listener(hook, role, task, task_id, extra or {})
            except Exception as exc:  # a listener must never cost the hook
                self.on_failure(hook=hook, role=role, reason=f"listener failed: {exc}")
        command = self.commands.get(hook)
        if command is None:
            return False
        env = safeexec.trusted_env(self.base_env, self.workdir)
        env.update({key: env_value(value) for key, value in {
            "CHORAGOS_HOOK": hook, "CHORAGOS_ROLE": role, "CHORAGOS_TASK": task,
            "CHORAGOS_TASK_ID": task_id, "CHORAGOS_DIR": str(self.workdir),
            **(extra or {})}.items()})
        with self._lock:
            waiting = len(self._waiting)
            refused = self._closed or waiting >= MAX_WAITING
            if not refused:
                self._waiting.append((hook, command, env, role))
                start = self._runners < MAX_RUNNING
                self._runners += start
        if refused:
            self.on_failure(hook=hook, role=role, reason=STOPPED if self._closed else
                            f"not run: {waiting} hooks already wait behind {MAX_RUNNING} "
                            "running")
            return False
        if start:
            threading.Thread(target=self._runner, name=f"hook-{hook}", daemon=True).start()
        return True

    def _runner(self) -> None:
        """Run the waiting firings in order until none is left."""
        while True:
            with self._lock:
                if not self._waiting:
                    self._runners -= 1
                    self._lock.notify_all()
                    return
                hook, command, env, role = self._waiting.popleft()
            try:
                self._run(hook, command, env, role)
            except Exception as exc:  # the next hooks still run; this one is told
                self.on_failure(hook=hook, role=role, reason=f"could not run: {exc!r}")

    def close(self, grace: float = STOP_GRACE) -> None:
        """The session stops: a hook not started yet is reported, not run;
        one still running after ``grace`` seconds is killed with its process
        group (it would outlive the server, unwatched) and reported."""
        with self._lock:
            self._closed = True
            dropped = list(self._waiting)
            self._waiting.clear()
        for hook, _command, _env, role in dropped:
            self.on_failure(hook=hook, role=role, reason=STOPPED)
        self.wait(grace)
        with self._lock:
            self._killing = True
            running = list(self._procs)
        for proc in running:
            _kill_group(proc)
        self.wait(grace)

    def _run(self, hook: str, command: str, env: dict[str, str], role: str) -> None:
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=self.workdir, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except (OSError, ValueError) as exc:
            self.on_failure(hook=hook, role=role, reason=f"could not start: {exc}")
            return
        with self._lock:
            self._procs.add(proc)
            if self._killing:  # close() may have looked before this shell began
                _kill_group(proc)
        try:
            with proc.stdout:
                output, ended = _read_tail(proc, time.monotonic() + self.timeout)
            self._ended(proc, hook, role, output, ended)
        finally:
            with self._lock:
                self._procs.discard(proc)

    def _ended(self, proc: subprocess.Popen, hook: str, role: str, output: bytes,
               ended: str) -> None:
        if ended != EXITED:
            # The shell may be gone, leaving something it started in the
            # background holding its output: said so, not "still running".
            status = proc.poll()
            _kill_group(proc)
            proc.wait()
            reason = (f"wrote more than {MAX_OUTPUT // 1024 // 1024} MiB of output; killed"
                      if ended == FLOODED else
                      f"still running after {self.timeout:g}s; killed" if status is None else
                      f"exit status {status}, but what it left in the background was still "
                      f"running after {self.timeout:g}s; killed")
            self.on_failure(hook=hook, role=role, output=_tail(output), reason=reason)
            return
        if proc.returncode != 0:
            self.on_failure(hook=hook, role=role, output=_tail(output),
                            reason=KILLED_AT_STOP if self._closed and proc.returncode < 0
                            else f"exit status {proc.returncode}")

    def wait(self, timeout: float = 5.0) -> None:
        """Wait until no hook runs or waits (tests, and shutdown), at most ``timeout`` s."""
        with self._lock:
            self._lock.wait_for(lambda: self._runners == 0, timeout)


def env_value(text: str) -> str:
    """``text`` as an environment variable can hold it: no NUL (it would end
    the value), no lone surrogate (it cannot be encoded), at most ``MAX_VALUE``
    characters (a longer task ends with "… (cut)"), so the hook always runs."""
    text = text.replace("\0", "").encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "… (cut)"


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _read_tail(proc: subprocess.Popen, end: float) -> tuple[bytes, str]:
    """Read the hook's output as it comes, keeping only the last KEEP_BYTES
    (a hook that prints endlessly must not fill the server's memory); EXITED
    when it exited before ``end``, else TIMED_OUT.  Past MAX_OUTPUT bytes it
    is not read further (FLOODED): reading a flood took a quarter of a core
    of the server's own until the time limit."""
    tail = bytearray()
    fd = proc.stdout.fileno()
    read = 0
    while (remaining := end - time.monotonic()) > 0:
        if not wait_ready(fd, remaining):
            return bytes(tail), TIMED_OUT
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        read += len(chunk)
        tail += chunk
        if len(tail) > KEEP_BYTES:
            del tail[:-KEEP_BYTES]
        if read > MAX_OUTPUT:
            return bytes(tail), FLOODED
    try:
        proc.wait(max(end - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        return bytes(tail), TIMED_OUT
    return bytes(tail), EXITED


def _tail(output: bytes | None) -> str:
    text = (output or b"").decode(errors="replace")
    return text[-KEEP_OUTPUT:]
