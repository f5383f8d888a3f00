"""The session's remote seats: one connection per host, one control socket per role.

Each remote role gets a control socket of its own on this machine, which the
host's connection forwards to a private socket there.  Every request that
arrives on it is that role's: the kernel's peer (the ssh process) says
nothing about who is calling, so the socket itself does, and no request on
it is ever the operator's.  A remote worker can report its own tasks, and
nothing an operator decides.  Each role socket is bound here and served by
a listener actor of its own in the session's tree (``supervise``), so an
accept loop that dies is a crash that is restarted on a fresh socket.
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from choragos.config.model import Config, RoleSpec
from choragos.control import wire
from choragos.control.server import ControlServer
from choragos.remote.link import HostLink
from choragos.remote.seat import RemoteRole, ssh_env
from choragos.roles.launch import Launch

__all__ = ["RemoteSeats", "RoleSocket", "session_id"]

log = logging.getLogger("choragos.remote")

Dispatch = Callable[[str, dict], dict]


@dataclass
class RoleSocket:
    """A remote role's control socket, as its listener actor serves it."""

    server: ControlServer
    role: str
    seats: RemoteSeats

    def dispatch(self, request: dict) -> dict:
        return self.seats.answer(self.role, request)


# Serve a role's socket under the session's tree: (child name, what to serve).
Supervise = Callable[[str, RoleSocket], None]


def session_id(workdir: Path) -> str:
    """A name for this session's folder on a host, the same across restarts."""
    import hashlib  # here: it loads OpenSSL's libcrypto, a session without seats not

    where = f"{socket.gethostname()}:{Path(workdir).resolve()}"
    return hashlib.sha256(where.encode()).hexdigest()[:12]


class RemoteSeats:
    """Links, role sockets and seats of the session's remote roles."""

    def __init__(self, config: Config, workdir: Path, control: Path,
                 log_event: Callable[..., None], supervise: Supervise) -> None:
        self.config = config
        self.supervise = supervise
        self.workdir = workdir
        self.control = control  # the session's own control socket
        self.log_event = log_event
        self.session = session_id(workdir)
        self.project = re.sub(r"[^A-Za-z0-9_.-]", "_", workdir.name)[:40] + "-" + \
            self.session[:8]
        self.links: dict[str, HostLink] = {}
        self.servers: dict[str, ControlServer] = {}
        self.seats: dict[str, RemoteRole] = {}
        self.dispatch: Dispatch | None = None  # the listener's, once it runs

    def seat(self, spec: RoleSpec, launched: Launch, mirror: Path,
             gateway: str) -> tuple[Launch, RemoteRole]:
        """The launch this machine runs for ``spec``, and the seat's hooks."""
        link = self._link(spec.host) if spec.host in self.config.hosts else None
        role_socket = self._role_socket(spec.name)
        remote = RemoteRole(link, launched, self.workdir, mirror, role_socket, gateway)
        self.seats[spec.name] = remote
        return replace(launched, env=ssh_env(launched.env)), remote

    def by_branch(self) -> dict[str, Callable[[str], None]]:
        """A remote role's branch -> how to bring its work back (for aftercare)."""
        from choragos.gitstore import worktrees

        return {worktrees.branch_of(name): seat.bring_back
                for name, seat in self.seats.items()}

    def by_tree(self) -> dict[Path, Callable]:
        """A remote role's mirror -> its rollback hook (a rollback there reaches the host)."""
        return {seat.mirror.resolve(): seat.roll_back for seat in self.seats.values()}

    def _link(self, name: str) -> HostLink:
        # Hosts are read at start: one a reload names that the session did not
        # start with has no link, and its role's start fails saying so.
        if name not in self.links:
            control = self.control.with_name(f"{self.control.stem}.{name}.ssh")
            self.links[name] = HostLink(self.config.hosts[name], control, self.session,
                                        self.project)
        return self.links[name]

    def _role_socket(self, role: str) -> Path:
        """This machine's end of ``role``'s forwarded socket: bound now, served at once."""
        if role in self.servers:
            return self.servers[role].path
        path = self.control.with_name(f"{self.control.stem}.role-{role}")

        def on_socket_event(kind: str, fields: dict) -> None:
            self.log_event(f"socket: {kind}", role=role, **fields)

        server = ControlServer(path, lambda request: self.answer(role, request),
                               log=on_socket_event)
        server.bind()
        self.servers[role] = server
        self.supervise(f"socket:{role}", RoleSocket(server, role, self))
        return path

    def answer(self, role: str, request: dict) -> dict:
        """A request that arrived on ``role``'s socket, as that role's."""
        request.pop(wire.PEER_PID, None)  # the ssh process: says nothing about the caller
        if self.dispatch is None:
            return wire.error("the session is still starting; try again")
        # A path in a request names a file there, never one here: a work-done's
        # report travels as its text (report_text); a brief has no way here.
        request.pop("report", None)
        if request.get("cmd") == "delegate" and request.get("brief"):
            spec = self.config.role(role)
            host = spec.host if spec is not None else "its host"
            return wire.error(f"--brief names a file on {host}, which this session cannot "
                              "read; put the details in --task instead")
        return self.dispatch(role, request)

    def close(self) -> None:
        """Nothing left running on any host; every role socket closed."""
        for server in self.servers.values():
            server.close()
        for link in self.links.values():
            link.close()
