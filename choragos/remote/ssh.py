"""Every ``ssh`` command line choragos runs, built in one place.

The user's ``ssh_args`` come first, so their options win over ours (ssh
keeps the first value it is given); then ours: no password prompt ever
(``BatchMode``), the host's one multiplexed connection (``-S``), and a dead
peer noticed within seconds.  A remote command is always one string quoted
word by word for the remote shell, made from the configuration and from
choragos's own paths, never from task text.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from choragos.remote import reach
from choragos.remote.hosts import HostSpec

__all__ = ["Ssh", "SshError"]

KEEPALIVE = ("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
DIRECT_TIMEOUT = 5  # seconds a cleanup waits for a host that may be gone


class SshError(Exception):
    """An ssh command failed; the message says what and why, in one sentence.

    ``kind`` says whether the host did not answer (:data:`reach.UNREACHABLE`),
    turned the login away (:data:`reach.REFUSED`), or answered and the
    command itself failed (:data:`reach.ANSWERED`)."""

    def __init__(self, message: str, kind: str = reach.ANSWERED) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Ssh:
    """How to reach one host through its master connection's socket."""

    host: HostSpec
    control: Path  # the master's socket on this machine

    def options(self, direct: bool = False) -> list[str]:
        """``direct``: a connection of its own, briefly tried, for when the
        master is gone (its socket may still answer for a dead one)."""
        if direct:
            return ["ssh", *self.host.ssh_args, "-o", "BatchMode=yes", "-S", "none",
                    "-o", f"ConnectTimeout={DIRECT_TIMEOUT}"]
        return ["ssh", *self.host.ssh_args, "-o", "BatchMode=yes", "-S", str(self.control)]

    def master(self) -> list[str]:
        """The master connection: no command, no TTY, forwards fail loudly."""
        return [*self.options(), "-M", "-N", "-T", "-o", "ControlPersist=no",
                "-o", "ExitOnForwardFailure=yes", *KEEPALIVE, self.host.ssh]

    def control_command(self, operation: str, *forward: str) -> list[str]:
        """``ssh -O check|exit|forward|cancel`` on the master."""
        return [*self.options(), "-O", operation, *forward, self.host.ssh]

    def command(self, remote: Sequence[str], tty: bool = False,
                direct: bool = False) -> list[str]:
        """Run ``remote`` (one word per item) over the master connection."""
        return [*self.options(direct), "-tt" if tty else "-T", *KEEPALIVE, self.host.ssh,
                "--", shlex.join(remote)]

    def git_ssh_command(self) -> str:
        """``GIT_SSH_COMMAND`` for git over the same connection."""
        return shlex.join([*self.options(), "-T"])

    def run(self, remote: Sequence[str], stdin: bytes = b"", timeout: float = 60.0,
            what: str = "", direct: bool = False) -> str:
        """Run ``remote`` to completion; its output, or SshError naming ``what``."""
        try:
            done = subprocess.run(self.command(remote, direct=direct), input=stdin,
                                  capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SshError(f"{what or remote[0]} on {self.host.name} did not finish within "
                           f"{timeout:g}s") from None
        except OSError as exc:
            raise SshError(f"cannot run ssh: {exc.strerror or exc}") from None
        if done.returncode != 0:
            raise SshError(f"{what or remote[0]} on {self.host.name} failed "
                           f"({_why(done.returncode, done.stderr)})",
                           reach.classify(done.returncode, done.stderr.decode("utf-8", "replace")))
        return done.stdout.decode("utf-8", "replace")

    def probe(self) -> subprocess.Popen:
        """One connection of its own that runs ``true`` there and ends: does the
        host answer?  Started, not waited for (:meth:`HostLink.probe` waits)."""
        return subprocess.Popen(self.command(["true"], direct=True), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _why(code: int, stderr: bytes) -> str:
    text = reach.last_line(stderr.decode("utf-8", "replace"))
    if code == 255:
        return f"the connection failed: {text}" if text else "the connection failed"
    return f"exit {code}: {text}" if text else f"exit {code}"
