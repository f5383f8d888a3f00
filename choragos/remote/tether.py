"""A long-lived process that ends when the server that started it dies.

The master ssh connection of a host runs in a session of its own (a
Ctrl-C meant for the server must not drop every remote seat), so nothing
ends it when the server is killed outright.  :func:`spawn` starts it on a
tether instead: the server holds the write end of a pipe; this script,
run by the same interpreter, reads the command line from it, forks a
watcher that keeps the pipe, and becomes the command (``exec``), so the
process the server holds is the command itself.  When the pipe reaches its
end, the server is gone (or let go on purpose) and the watcher sends the
command SIGTERM; when the command ends first, the watcher sees its parent
change and leaves.  The same on Linux and macOS: a pipe, ``fork``, ``exec``.

Run as a script with the standard library only: it is not imported by the
child.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["spawn"]

POLL = 0.5  # how often the watcher checks that the command is still its parent


def spawn(argv: Sequence[str], **popen: object) -> subprocess.Popen:
    """``argv`` started as :class:`subprocess.Popen` would, but ended (SIGTERM)
    when this process dies; ``popen`` takes Popen's options but ``stdin``
    (the command gets /dev/null).  Closing the returned process's ``stdin``
    lets go of the command on purpose, ending it too."""
    process = subprocess.Popen([sys.executable, "-I", __file__], stdin=subprocess.PIPE,
                               **popen)  # type: ignore[call-overload]
    assert process.stdin is not None
    # The command line goes through the pipe, not argv: the watcher's own
    # command line must not look like the command's to pgrep or ps.
    try:
        process.stdin.write(json.dumps(list(argv)).encode() + b"\n")
        process.stdin.flush()
    except BrokenPipeError:  # it ended at once: its exit status and stderr say why
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    return process


def _watch(command: int) -> None:
    """Until the pipe ends (then SIGTERM ``command``) or ``command`` ends."""
    while os.getppid() == command:
        ready, _, _ = select.select([0], [], [], POLL)
        if ready and not os.read(0, 4096):
            if os.getppid() == command:  # still our parent, so its pid is its own
                os.kill(command, signal.SIGTERM)
            return


def main() -> None:
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit("tether: no command given (the server ended first)")
    argv = json.loads(line)
    command = os.getpid()
    null = os.open(os.devnull, os.O_RDWR)
    if os.fork() == 0:
        # The watcher holds neither the command's output nor its errors: a
        # reader of those sees their end when the command ends.
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            _watch(command)
        finally:
            os._exit(0)
    os.dup2(null, 0)
    os.close(null)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.exit(f"tether: cannot run {argv[0]}: {exc.strerror or exc}")


if __name__ == "__main__":
    main()
