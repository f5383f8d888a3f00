"""The web view wired into a running session (``[web] listen``).

:class:`WebAccess` is the narrow view of the session the web server gets:
commands go through the listener's own path (the registry, the caller's
authority from the peer's process, the gateway's gate), panes are read as
the deck reads them, the timeline from the event log as the report reads it.
:func:`web` binds once (a taken port: the session runs without it,
loudly), subscribes the news hub to the core and starts the supervised
web actor.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from choragos import namedfile
from choragos.actors import messages as m
from choragos.actors.children import Start
from choragos.actors.listener import ListenerState
from choragos.actors.rolesview import RolesView
from choragos.actors.session import cannot_listen
from choragos.actors.web import WebActor, WebState
from choragos.board import events, runfollow, timeline
from choragos.control import tcppeer, wire
from choragos.control.server import fault_hook
from choragos.terminal.emulator import Snapshot
from choragos.web import access as webaccess
from choragos.web.news import NewsHub

if TYPE_CHECKING:
    from choragos.actors.session import Session

DOCUMENT_LIMIT = 64 * 1024  # characters of a gate's file shown on the page


class WebAccess:
    """What the web server may do in the session; looked up on every call."""

    def __init__(self, roles: RolesView, listening: ListenerState, workdir: Path) -> None:
        self.roles = roles
        self.listening = listening
        self.workdir = workdir
        self._timeline_lock = threading.Lock()
        self._follower = runfollow.RunFollower(events.default_path(workdir))
        self._builder = timeline.Builder([], None)

    def dispatch(self, parsed: dict, peer_pid: int | None) -> dict:
        """A request ``wire.parse_request`` checked, with the caller's pid, through
        the listener's path (authority, the gateway's gate, the journal's ack)."""
        parsed[wire.PEER_PID] = peer_pid
        return self.listening.dispatch(parsed)

    def snapshot(self, role: str) -> Snapshot | None:
        return self.roles.snapshot(role)

    def timeline(self) -> dict:
        """The last run's timeline, folded on from the last look (the page asks
        every few seconds while tasks move; several may ask at once)."""
        config = self.roles.config
        names = [spec.name for spec in config.roles]
        with self._timeline_lock:
            try:
                fresh, records = self._follower.poll()
            except OSError:
                fresh, records = True, []
            if fresh or self._builder.roles != names or self._builder.price_for != config.price_for:
                self._builder = timeline.Builder(names, config.price_for)
                records = self._follower.run
            for record in records:
                self._builder.add(record)
            line = self._builder.timeline()
            if line is None:
                return {"t0": 0, "t1": 0, "roles": [], "bars": [], "marks": [], "spans": [],
                        "cost": []}
            return timeline.to_wire(line)

    def document(self, path: str) -> str | None:
        """Only files under the session's own ``.choragos`` are read, and only so much."""
        state = (self.workdir / ".choragos").resolve()
        try:
            target = (self.workdir / path).resolve()
            if not target.is_relative_to(state) or not target.is_file():
                return None
            # Read without waiting: the file may have become a FIFO since.
            text = namedfile.read_regular(target, 4 * DOCUMENT_LIMIT + 4).decode(
                "utf-8", errors="replace")
            size = target.stat().st_size
        except OSError:
            return None
        if len(text) <= DOCUMENT_LIMIT:
            return text
        # Cut, and saying so: the operator must not approve thinking this was all.
        return (text[:DOCUMENT_LIMIT] + f"\n\n[… cut here: the page shows the first "
                f"{DOCUMENT_LIMIT:,} characters; the whole file is {path}, {size:,} bytes]\n")


def install_fault_hook(session: Session) -> bool:
    """Test hook, off unless the environment asks for it (``CHORAGOS_TEST_FAULTS=web``):
    SIGUSR2 makes the web server's loop die, so a test can see it restarted."""

    def fault() -> None:
        if session.web is not None:
            session.web.server.inject_fault()

    return fault_hook("web", fault)


def web(session: Session, hub: NewsHub, access: WebAccess) -> tuple[WebState, Start] | None:
    """Bind ``[web] listen``: the web actor's state and its start (under the
    session's supervisor), or None when it is not wanted or could not bind."""
    listen = session.config.web.listen
    webaccess.clear_addr(session.workdir)  # a crashed run's address is no one's now
    if not listen:
        return None
    # Imported only with [web] listen (see Session): aiohttp and asyncio are
    # most of the server's memory at rest.
    from choragos.web.server import WebServer

    def make() -> WebServer:
        return WebServer(access, hub, peer_pid=tcppeer.peer_pid)

    server = make()
    try:
        webaccess.ensure_token(session.workdir)
        addr = server.start(listen)
    except OSError as exc:
        session.events.write("web off", listen=listen, reason=str(exc))
        session.notices.warn(cannot_listen("the web view", "web", listen, exc))
        return None
    webaccess.write_addr(session.workdir, addr)
    session.events.write("web on", addr=addr)
    session.core.tell(m.Subscribe(hub.publish))
    state = WebState(server, make, addr, on_event=session.events.write)
    sup = session.supervisor
    return state, lambda h: WebActor.start(state, h, sup)
