"""The IPC listener: the control socket, as a supervised actor.

The socket server accepts and parses on its own threads; each valid request
is handed to the session core with an ``ask`` bounded by the wire deadline,
so a slow core answers with an error rather than hanging a client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import singledispatchmethod
from pathlib import Path
from typing import Any

import pykka

from choragos import wire
from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.actors.handle import ActorCrashed, ActorGone
from choragos.ctlserver import ControlServer

log = logging.getLogger("choragos.listener")

CORE_ANSWER_TIMEOUT = 4.0  # inside the client's 5 s deadline
# A request the core has not started by then is refused unread; a started
# one has this long to finish before the listener stops waiting.
CORE_START_MARGIN = 1.0


class ListenerActor(Actor):
    def __init__(self, server: ControlServer, supervisor: Any = None) -> None:
        super().__init__("listener", supervisor)
        self.server = server

    def on_shutdown(self) -> None:
        self.server.close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)


def make_server(path: Path, core: Any, gate: Callable[[dict], str | None],
                log_event: Callable[..., None],
                caller: Callable[[int | None], str | None] = lambda pid: None
                ) -> ControlServer:
    """Build the socket server; ``gate`` may refuse a request with a reason;
    ``caller`` names the role whose process tree a peer pid belongs to."""

    def dispatch(request: dict) -> dict:
        request[wire.CALLER] = caller(request.pop(wire.PEER_PID, None))
        refusal = gate(request)
        if refusal:
            return wire.error(refusal)
        try:
            expires = time.monotonic() + CORE_ANSWER_TIMEOUT - CORE_START_MARGIN
            return core.ask(m.Dispatch(request, expires), timeout=CORE_ANSWER_TIMEOUT)
        except pykka.Timeout:
            return wire.error("the session core is busy; try again")
        except (ActorCrashed, ActorGone) as exc:
            return wire.error(f"the session could not handle the request: {exc}")

    def on_socket_event(kind: str, fields: dict) -> None:
        log_event(f"socket: {kind}", **fields)

    return ControlServer(path, dispatch, log=on_socket_event)
