"""The web view's actor: a supervised child that owns the web server.

The session starts the server once before this actor (so a port already
taken is a plain "web off" and the session runs without it); the actor
keeps it serving.  A server whose loop dies is this actor's crash: the
server tells it :class:`WebDied`, the handler raises, and the supervisor
starts a fresh actor, which serves a new server on the same address (the
one first bound, so the URL a phone holds stays good).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import singledispatchmethod
from typing import TYPE_CHECKING, Any

import pykka

from choragos.actors.base import Actor
from choragos.actors.handle import ActorGone

if TYPE_CHECKING:  # the server itself is imported only with [web] listen
    from choragos.web.server import WebServer

log = logging.getLogger("choragos.web")


@dataclass(frozen=True)
class WebDied:
    """From the web server's dying loop thread."""

    error: str


class WebServerCrash(Exception):
    """The web actor's crash when its server died: the supervisor restarts it."""


@dataclass
class WebState:
    """What a restarted web actor carries on with: the server serving now (or
    the dead one), how to make a new one, and the address to serve on."""

    server: WebServer
    make: Callable[[], WebServer]
    addr: str
    on_event: Callable[..., None] = lambda event, **fields: None
    starts: int = 0


class WebActor(Actor):
    def __init__(self, state: WebState, me: Any, supervisor: Any = None) -> None:
        super().__init__("web", supervisor)
        self.s = state
        self.me = me

    def on_start(self) -> None:
        # Told of a death first, then looked at: a server that died before this
        # actor watched it is served again here rather than missed.
        self.s.server.on_died = self._died
        if not self.s.server.serving:  # a restart after the old server died
            self.s.server = self.s.make()
            self.s.server.on_died = self._died
            self.s.server.start(self.s.addr)
            self.s.on_event("web restarted", addr=self.s.addr)
        self.s.starts += 1

    def _died(self, error: str) -> None:
        """On the dying loop thread: make it this actor's crash."""
        try:
            self.me.tell(WebDied(error))
        except (pykka.ActorDeadError, ActorGone):
            log.error("the web server died after its actor stopped: %s", error)

    def on_shutdown(self) -> None:
        self.s.server.close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(WebDied)
    def _web_died(self, message: WebDied) -> None:
        raise WebServerCrash(f"the web server died: {message.error}")
