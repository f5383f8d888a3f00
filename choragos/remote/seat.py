"""A role's launch turned into its remote one.

The role's own recipe (:func:`choragos.roles.launch.launch`) is computed as for a
local role; here it becomes what this machine runs: ``ssh -tt`` through the
host's master connection, running the launcher there by role name.  The
recipe itself (command line, environment) goes to the host in a file, before
every start (:meth:`RemoteRole.prepare`), so no secret and no task text is
ever part of a command line.  The role actor calls the hooks of
:class:`RemoteRole` at its own moments: before a start, before a task is
typed, and after the process ended.
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from choragos.gitstore import worktrees
from choragos.gitstore.worktrees import WorktreeError
from choragos.remote import checkout, reach
from choragos.remote.link import HostLink, RemoteSeat
from choragos.remote.ssh import KEEPALIVE, SshError
from choragos.roles import briefs
from choragos.roles.launch import Launch
from choragos.terminal.restartpolicy import ExitStatus

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: see choragos/actors/aftercare.py
    from choragos.gitstore.checkpoints import RollbackResult

__all__ = ["RemoteRole", "SeatError", "seat_argv", "ssh_env"]

log = logging.getLogger("choragos.remote")

# What ssh itself needs from this machine's environment; nothing of the role's.
SSH_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SSH_AUTH_SOCK", "TERM", "LANG", "TZ")
SSH_FAILED = 255  # ssh's own status when the connection failed or dropped
NOT_FOUND = 127   # the launcher's when the program is not on the host's PATH


class SeatError(Exception):
    """A remote seat could not be made ready; the message says why, ``kind``
    whether the host answered (see :mod:`choragos.remote.reach`)."""

    def __init__(self, message: str, kind: str = reach.ANSWERED) -> None:
        super().__init__(message)
        self.kind = kind


def seat_argv(role: str, link: HostLink) -> list[str]:
    """What this machine runs for ``role``: ``ssh -tt`` to the launcher, by role name.

    The session's folder is named relative to the remote home, which the
    remote shell expands: the command line holds no secret and no task text.
    """
    folder = f'"$HOME"/.choragos-remote/{shlex.quote(link.session)}'
    text = f"exec python3 {folder}/seat.py run {folder} {shlex.quote(role)}"
    return [*link.ssh.options(), "-tt", *KEEPALIVE, link.host.ssh, "--", text]


def ssh_env(env: dict[str, str]) -> dict[str, str]:
    """What ssh itself needs of this machine's environment; nothing of the role's."""
    return {key: value for key, value in env.items() if key in SSH_ENV}


@dataclass
class RemoteRole:
    """The hooks a remote role's actor runs, with what they need."""

    link: HostLink | None  # None: a host added by a reload, unknown until a restart
    local: Launch          # the role's own recipe, as for a local role
    workdir: Path          # the project here
    mirror: Path           # the role's worktree here
    control_socket: Path   # this machine's end of the role's control socket
    gateway: str = ""  # the gateway's base URL here, when it is on
    # The hooks run on three threads (the role's, aftercare's, the checkpointer's):
    # one git exchange with the host at a time.
    _turn: threading.RLock = field(default_factory=threading.RLock, repr=False,
                                   compare=False)

    @property
    def argv(self) -> list[str]:
        return seat_argv(self.role, self.link)

    @property
    def role(self) -> str:
        return self.local.spec.name

    def prepare(self) -> None:
        """Connect, forward, install, and bring the checkout up to the mirror
        (after ending what an earlier run of the role may have left there)."""
        if self.link is None:
            raise SeatError(f"its host {self.local.spec.host} was added by a reload; "
                            "[hosts] apply after a restart of the session")
        try:
            # Connected first: what an earlier run left there (one a dropped
            # connection or a killed server left running) is found only then.
            self.link.up()
            self.link.stop_role(self.role)
            seat = self.link.prepare(self.role, self.local.argv, self.local.env,
                                     self.control_socket, self.gateway)
            self._program_there(seat)
            checkout.ensure(self.link, seat)
            checkout.send(self.link, seat, self.mirror)
            brief = Path(".choragos") / "briefs" / f"{self.role}.md"
            if (self.workdir / brief).is_file():
                checkout.send_file(self.link, seat, self.workdir / brief, brief.as_posix())
        except SshError as exc:
            raise SeatError(str(exc), exc.kind) from None
        except OSError as exc:
            raise SeatError(str(exc)) from None

    def _program_there(self, seat: RemoteSeat) -> None:
        program = self.local.argv[0]
        found = self.link.ssh.run(["sh", "-c", 'command -v "$1" || true', "sh", program],
                                  what="looking for the program").strip()
        if not found:
            raise SeatError(f"{program} is not on the PATH of {self.link.host.name} "
                            f"({self.link.host.ssh}); install it there or name it by "
                            "its full path in command")

    def before_task(self, task_id: str) -> None:
        """The task's file where the typed line says (with its brief's copy), and
        the mirror's latest commit."""
        relative = Path(".choragos") / "tasks" / f"{task_id}.md"
        # The brief's copy, when the task has one: the operator's file is here.
        copied = Path(briefs.brief_copy(task_id))
        try:
            with self._turn:
                seat = self.link.seat(self.role)
                checkout.send(self.link, seat, self.mirror)
                checkout.send_file(self.link, seat, self.workdir / relative,
                                   relative.as_posix())
                if (self.workdir / copied).is_file():
                    checkout.send_file(self.link, seat, self.workdir / copied, copied.as_posix())
        except (SshError, OSError) as exc:
            raise SeatError(f"the task could not be sent to {self.link.host.name}: {exc}") \
                from None

    def bring_back(self, subject: str) -> None:
        """What the role changed there, committed onto the mirror's branch."""
        try:
            with self._turn:
                checkout.bring_back(self.link, self.link.seat(self.role), self.mirror, subject)
        except SshError as exc:
            raise SeatError(str(exc)) from None

    def roll_back(self, restore: Callable[[], RollbackResult], target: str) -> RollbackResult:
        """A rollback of the role's mirror (``restore``) that reaches the host.

        What the role changed there is brought back first, so the rollback's
        own save of the tree holds it; after the restore, the restored files
        are committed on the role's branch and the checkout there is reset
        to it: the tree and the branch there are the mirror's again.
        """
        with self._turn:
            return self._roll_back(restore, target)

    def _roll_back(self, restore: Callable[[], RollbackResult], target: str) -> RollbackResult:
        if self.link is None:
            raise SeatError(f"its host {self.local.spec.host} was added by a reload; "
                            "nothing was rolled back")
        try:
            self.link.up()
            self.bring_back(f"work on {self.link.host.name} before the rollback to {target}")
        except (SshError, SeatError, OSError) as exc:
            raise SeatError(f"{self.link.host.name} cannot be reached ({exc}); nothing was "
                            "rolled back") from None
        result = restore()
        then = result.checkpoint.task_id or result.checkpoint.name
        try:
            worktrees.commit_work(self.mirror, f"rollback to before {then}",
                                  f"Restored by choragos rollback from {result.checkpoint.ref}.",
                                  worktrees.branch_of(self.role))
            seat = self.link.seat(self.role)
            checkout.reset(self.link, seat)
            checkout.send(self.link, seat, self.mirror)
        except (SshError, WorktreeError, OSError) as exc:
            raise SeatError(f"{self.mirror} was rolled back here, but the checkout on "
                            f"{self.link.host.name} was not updated ({exc})") from None
        return result

    def explain(self, status: ExitStatus) -> ExitStatus:
        """An exit as the operator should read it on the card."""
        if self.link is None:
            return status
        host = f"{self.link.host.name} ({self.link.host.ssh})"
        if status.cause:
            return status
        if status.code == SSH_FAILED:
            return replace(status, cause=f"the connection to {host} was lost")
        if status.code == NOT_FOUND:
            return replace(status, cause=f"{self.local.argv[0]} is not on the PATH of {host}")
        return status

    @staticmethod
    def lost(status: ExitStatus) -> bool:
        """The exit may be the connection's, not the agent's."""
        return status.code == SSH_FAILED

    def fault(self, status: ExitStatus) -> str:
        """Whether the host is gone (:data:`reach.UNREACHABLE`) after the seat
        ended with ``status``, or the exit was the agent's own
        (:data:`reach.ANSWERED`: its host still answers over the connection)."""
        if self.link is None or not self.lost(status) or self.link.answers():
            return reach.ANSWERED
        return reach.UNREACHABLE

    @property
    def host(self) -> str:
        """The host as the card names it: ``gpu (me@gpu-box)``."""
        if self.link is None:
            return str(self.local.spec.host)
        return f"{self.link.host.name} ({self.link.host.ssh})"

    def after_exit(self) -> None:
        """Nothing of the role left running there."""
        if self.link is None:
            return
        try:
            self.link.stop_role(self.role)
        except (SshError, OSError) as exc:
            log.warning("stopping what %s left on %s: %s", self.role, self.link.host.name, exc)
