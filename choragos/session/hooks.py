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
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from choragos import safeexec
from choragos.fdwait import wait_ready

HOOK_TIMEOUT = 30.0
KEEP_OUTPUT = 2000      # characters of output quoted in a "hook failed" event
KEEP_BYTES = 64 * 1024  # bytes of output held while a hook runs


class Hooks:
    def __init__(self, commands: Mapping[str, str], workdir: Path,
                 on_failure: Callable[..., None], timeout: float = HOOK_TIMEOUT,
                 base_env: Mapping[str, str] | None = None) -> None:
        self.commands = {name: cmd for name, cmd in commands.items() if cmd.strip()}
        self.workdir = workdir
        self.on_failure = on_failure
        self.timeout = timeout
        self.base_env = base_env
        self._threads: list[threading.Thread] = []
        # fire() runs on the core's thread, and on the deck supervisor's when
        # the deck is given up: the list of running hooks is kept under a lock.
        self._lock = threading.Lock()
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
        env.update({"CHORAGOS_HOOK": hook, "CHORAGOS_ROLE": role, "CHORAGOS_TASK": task,
                    "CHORAGOS_TASK_ID": task_id, "CHORAGOS_DIR": str(self.workdir),
                    **(extra or {})})
        thread = threading.Thread(target=self._run, args=(hook, command, env, role),
                                  name=f"hook-{hook}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return True

    def _run(self, hook: str, command: str, env: dict[str, str], role: str) -> None:
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=self.workdir, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            self.on_failure(hook=hook, role=role, reason=f"could not start: {exc}")
            return
        with proc.stdout:
            output, finished = _read_tail(proc, time.monotonic() + self.timeout)
        if not finished:
            _kill_group(proc)
            proc.wait()
            self.on_failure(hook=hook, role=role, output=_tail(output),
                            reason=f"still running after {self.timeout:g}s; killed")
            return
        if proc.returncode != 0:
            self.on_failure(hook=hook, role=role, output=_tail(output),
                            reason=f"exit status {proc.returncode}")

    def wait(self, timeout: float = 5.0) -> None:
        """Wait for running hooks (tests, and shutdown)."""
        with self._lock:
            running = list(self._threads)
        for thread in running:
            thread.join(timeout)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _read_tail(proc: subprocess.Popen, end: float) -> tuple[bytes, bool]:
    """Read the hook's output as it comes, keeping only the last KEEP_BYTES
    (a hook that prints endlessly must not fill the server's memory); True
    when it exited before ``end``."""
    tail = bytearray()
    fd = proc.stdout.fileno()
    while (remaining := end - time.monotonic()) > 0:
        if not wait_ready(fd, remaining):
            return bytes(tail), False
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        tail += chunk
        if len(tail) > KEEP_BYTES:
            del tail[:-KEEP_BYTES]
    try:
        proc.wait(max(end - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        return bytes(tail), False
    return bytes(tail), True


def _tail(output: bytes | None) -> str:
    text = (output or b"").decode(errors="replace")
    return text[-KEEP_OUTPUT:]
