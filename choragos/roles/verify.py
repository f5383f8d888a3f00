"""A role's ``verify`` command: run after each work-done, in the role's tree.

The command line comes from the config and is split into words (never run
through a shell, and no task text is ever put into it).  Its program is
looked up on the role's PATH without the folders an agent can write
(choragos/safeexec.py), and while it runs its pid counts as the role's own
(choragos/control/authority.py): a verify script the worker rewrote has the
worker's authority, never the operator's.  It runs in its own process group
with a timeout, and whatever it left running is killed when it ends; the
whole output goes to ``.choragos/reports/<task>.verify.log`` and its tail
goes back to the worker when the check fails.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from choragos import safeexec, statedir

TAIL_LINES = 40
TAIL_CHARS = 4000
OUTPUT_LIMIT = 4 * 1024 * 1024  # what the log keeps of a chatty command


@dataclass(frozen=True)
class VerifyResult:
    """How a role's verify went: its exit, its time, its output's tail and where the rest is."""

    ok: bool
    code: int | None        # None when it timed out or could not start
    seconds: float
    tail: str               # the last lines of its output
    log: str                # workspace-relative path of the whole output
    why: str = ""           # "exit 1", "timed out after 600s", "could not start: ..."


def log_path(workdir: Path, task_id: str) -> Path:
    return workdir / ".choragos" / "reports" / f"{task_id}.verify.log"


Tracker = Callable[[int], AbstractContextManager[None]]


def run(command: str, cwd: Path, workdir: Path, task_id: str, timeout: float,
        env: dict[str, str] | None = None, tracker: Tracker | None = None) -> VerifyResult:
    """Run ``command`` in ``cwd`` with ``env`` (the role's environment, the one
    its agent process gets; None inherits ours); its output is logged under
    ``workdir``.  ``tracker`` is told the pid and held while the command runs."""
    began = time.monotonic()
    output, code, why = _execute(shlex.split(command), cwd, timeout,
                                 safeexec.trusted_env(env, workdir), tracker)
    seconds = round(time.monotonic() - began, 3)
    text = output[-OUTPUT_LIMIT:].decode("utf-8", "replace")
    path = log_path(workdir, task_id)
    statedir.make_dir(path.parent)
    statedir.write_text(path, f"$ {command}\n# in {cwd}\n{text}\n# {why or 'exit 0'} "
                              f"after {seconds:g}s\n")
    return VerifyResult(code == 0 and not why, code, seconds, tail(text),
                        str(path.relative_to(workdir)), why)


def tail(text: str) -> str:
    lines = text.rstrip("\n").splitlines()[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]


def _execute(argv: list[str], cwd: Path, timeout: float, env: dict[str, str],
             tracker: Tracker | None) -> tuple[bytes, int | None, str]:
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as exc:
        return b"", None, f"could not start: {exc.strerror or exc}"
    with tracker(proc.pid) if tracker is not None else nullcontext():
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            output, _ = proc.communicate()
            return output, None, f"timed out after {timeout:g}s"
        finally:
            # Nothing it started outlives it: an orphan would leave the role's tree.
            _kill_group(proc.pid)
    code = proc.returncode
    return output, code, "" if code == 0 else f"exit {code}"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
