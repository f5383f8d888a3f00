"""The IPC listener: a supervised actor that owns the control server.

The session binds the socket first (so a second session in the same place
fails before anything else starts, and early clients wait in the kernel's
backlog); the listener actor starts the accept loop when it starts and stops
it on a deliberate stop.  A dead accept loop is this actor's crash: the
server tells it :class:`AcceptDied`, the handler raises, and the supervisor
starts a fresh listener, which binds a new socket under the same lock and
accepts again.  A remote role's own control socket is served the same way,
by a listener of its own (``socket:<role>``, see ``remoteseats.py``).

The socket server reads and parses on its own threads; each valid request
goes to the core actor as a :class:`~actors.messages.Dispatch` ``ask``,
bounded by the wire deadline, so a slow core answers with an error rather
than hanging a client.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import Any, Protocol

import pykka

from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.actors.durable import durable_ack
from choragos.actors.handle import ActorCrashed, ActorGone
from choragos.control import wire
from choragos.control.server import ControlServer
from choragos.session import hopstamps

log = logging.getLogger("choragos.listener")

CORE_ANSWER_TIMEOUT = 4.0  # inside the client's 5 s deadline
# A request the core has not started by then is refused unread; a started
# one has this long to finish before the listener stops waiting.
CORE_START_MARGIN = 1.0


@dataclass(frozen=True)
class AcceptDied:
    """From the control server's dying accept thread."""

    error: str


class AcceptLoopCrash(Exception):
    """The listener's crash when its accept loop died: the supervisor restarts it."""


class Gate(Protocol):
    """What may be refused before the core sees it (an enforced gateway that is down)."""

    def refusal(self, request: dict) -> str | None: ...


class Callers(Protocol):
    """Whom a process acts for (``actors/rolesview.py``)."""

    def caller_of(self, pid: int | None) -> str | None: ...


class _Open:
    """No gate, and no role behind any pid (a listener on its own, in tests)."""

    def refusal(self, request: dict) -> str | None:
        return None

    def caller_of(self, pid: int | None) -> str | None:
        return None


@dataclass
class ListenerState:
    """What a restarted listener carries on with: the bound server, the core's
    handle, the gateway gate, who-is-calling, and the journal acks wait on."""

    server: ControlServer
    core: Any  # the core actor's Handle
    gate: Gate = field(default_factory=_Open)
    callers: Callers = field(default_factory=_Open)
    journal: Any = None

    def dispatch(self, request: dict) -> dict:
        """One request from a socket thread, to the core as a message."""
        return self._dispatch(request, self.callers.caller_of(request.pop(wire.PEER_PID, None)))

    def dispatch_as(self, role: str, request: dict) -> dict:
        """One request from a socket that only ``role`` reaches (a remote seat's)."""
        request.pop(wire.PEER_PID, None)
        return self._dispatch(request, role)

    def _dispatch(self, request: dict, caller: str | None) -> dict:
        if hopstamps.ON:
            hopstamps.mark("req-in", str(request.get("cmd")))
        request[wire.CALLER] = caller
        refusal = self.gate.refusal(request)
        if refusal:
            return wire.error(refusal)
        try:
            expires = time.monotonic() + CORE_ANSWER_TIMEOUT - CORE_START_MARGIN
            ack = self.core.ask(m.Dispatch(request, expires), timeout=CORE_ANSWER_TIMEOUT)
        except pykka.Timeout:
            return wire.error("the session core is busy; try again")
        except (ActorCrashed, ActorGone) as exc:
            return wire.error(f"the session could not handle the request: {exc}")
        if hopstamps.ON:
            hopstamps.mark("core-answered", str(request.get("cmd")))
        ack = durable_ack(self.journal, settle(ack))
        if hopstamps.ON:
            hopstamps.mark("req-acked", str(request.get("cmd")))
        return ack


def settle(ack: Any) -> Any:
    """The ack itself, or, when the core handed the work on (``Deferred``),
    the ack of the actor doing it, waited for on the caller's thread."""
    if not isinstance(ack, m.Deferred):
        return ack
    try:
        return ack.actor.ask(ack.message, timeout=ack.timeout)
    except pykka.Timeout:
        return wire.error(f"{type(ack.message).__name__.lower()} did not finish within "
                          f"{ack.timeout:g}s; it may still complete: the event log will say")
    except (ActorCrashed, ActorGone) as exc:
        return wire.error(f"the session could not finish the request: {exc}")


class Served(Protocol):
    """What a listener serves: a bound control server and who answers it
    (the session's :class:`ListenerState`, or a remote role's socket)."""

    server: ControlServer

    def dispatch(self, request: dict) -> dict: ...


class ListenerActor(Actor):
    def __init__(self, state: Served, me: Any, supervisor: Any = None,
                 name: str = "listener") -> None:
        super().__init__(name, supervisor)
        self.s = state
        self.me = me

    def on_start(self) -> None:
        server = self.s.server
        server.handler = self.s.dispatch
        server.on_died = self._died
        server.serve()  # after a dead loop: a fresh socket, same lock

    def _died(self, error: str) -> None:
        """On the dying accept thread: make it this actor's crash."""
        self.me.tell(AcceptDied(error))

    def on_shutdown(self) -> None:
        self.s.server.close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(AcceptDied)
    def _accept_died(self, message: AcceptDied) -> None:
        raise AcceptLoopCrash(f"the control socket's accept loop died: {message.error}")

