"""The UI actor: the deck's seat among the session's actors.

The session core publishes every state change (typed news, see
``choragos/session/news.py``) to its subscribers on its own thread.  The UI actor
is that subscriber: the core ``tell``s it the news, and it hands each item
to the deck, its view, whose urwid loop reduces it to a new state.  The
actor owns the deck and starts its loop; a crash of the loop is a crash of
this actor (the loop tells it :class:`DeckCrashed`), so its supervisor
sees it, counts it against its intensity and starts the actor (and with it
the loop) again, on the same deck state.

:class:`SessionAccess` is the narrow view of the session the deck gets
(terminals to read, roles to type into, the control commands).  The
deck's subtree (its supervisor, this actor and the attach actor) is built,
and built again after a give-up, in ``decktree.py``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import singledispatchmethod
from pathlib import Path
from typing import Any

import pykka

from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.actors.durable import SaveLayout
from choragos.actors.handle import Handle
from choragos.actors.listener import settle
from choragos.actors.rolesview import RolesView
from choragos.config.model import Config
from choragos.control import wire
from choragos.session import news
from choragos.terminal.emulator import Terminal
from choragos.ui.deck import COMMAND_TIMEOUT, Deck

log = logging.getLogger("choragos.ui")


@dataclass(frozen=True)
class News:
    """One item the core published (a ``choragos.session.news`` message)."""

    item: news.News


@dataclass(frozen=True)
class DeckCrashed:
    """The deck's loop raised; the actor crashes with it."""

    error: str


class DeckLoopCrashed(Exception):
    """Raised by the UI actor so its supervisor sees the deck's crash."""


class UIActor(Actor):
    def __init__(self, deck: Deck, supervisor: Any = None) -> None:
        super().__init__("ui", supervisor)
        self.deck = deck

    def on_start(self) -> None:
        # The first start, or the restart after a crash: the loop runs again.
        self.deck.on_loop_crash = self._loop_crashed
        self.deck.start()

    def _loop_crashed(self, error: str) -> None:
        """On the deck's thread: crash this actor with the loop."""
        try:
            self.actor_ref.tell(DeckCrashed(error))
        except pykka.ActorDeadError:
            log.error("the deck crashed after its UI actor stopped: %s", error)

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(News)
    def _news(self, message: News) -> None:
        self.deck.news(message.item)

    @handle.register(DeckCrashed)
    def _deck_crashed(self, message: DeckCrashed) -> None:
        raise DeckLoopCrashed(f"the deck crashed: {message.error}")


class SessionAccess:
    """The deck's way into the session: the roles' view (terminals to read,
    roles to type into), the control commands through the core, the saved
    layout.  The roles are looked up on every call, so roles added or
    respawned by a reload are found."""

    def __init__(self, roles: RolesView, core: Handle, workdir: Path,
                 layout: dict | None = None) -> None:
        self.roles = roles
        self.core = core
        self.workdir = workdir
        self.layout = layout  # the resumed session's, if any
        # Bound once: a keystroke's way into the role, and its echo's end of
        # the wait, go through no method of ours (the roles' wait is theirs
        # for the session's life).
        self.type_echoed = roles.type_echoed
        self.echo_drawn = roles.echo_wait.drawn

    @property
    def config(self) -> Config:
        return self.roles.config

    def dispatch(self, request: dict) -> dict:
        """A control command through the core's one registry, validated as the
        socket validates it."""
        parsed = wire.parse_request(json.dumps(request).encode())
        return settle(self.core.ask(m.Dispatch(parsed), timeout=COMMAND_TIMEOUT))

    def saved_layout(self) -> dict | None:
        return self.layout

    def save_layout(self, layout: dict) -> None:
        self.layout = layout  # a deck built again after a give-up shows it as it was
        self.core.tell(SaveLayout(layout))

    def tell_role(self, role: str, message: Any) -> None:
        self.roles.tell(role, message)

    def type_keys(self, role: str, data: bytes) -> None:
        """The operator's keys, written to the role's PTY on the calling thread
        (the deck's) when nothing waits ahead of them; see ``actors/roleio.py``."""
        self.roles.type_keys(role, data)

    def expect_echo(self, role: str, size: int) -> None:
        """``size`` bytes of keys were written straight to ``role``: other
        roles' output waits (briefly) for their echo."""
        self.roles.expect_echo(role, size)

    def terminal(self, role: str) -> Terminal | None:
        return self.roles.terminal(role)

    def role_pids(self) -> list[int]:
        return list(self.roles.pids())
