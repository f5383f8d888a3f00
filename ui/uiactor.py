"""The UI actor: the deck's seat among the session's actors.

The session core publishes every state change (typed news, see
``choragos/session/news.py``) to its subscribers on its own thread.  The UI actor
is that subscriber: the core ``tell``s it the news, and it hands each item
to the deck, its view, whose urwid loop reduces it to a new state.  The
actor owns the deck and starts its loop; a crash of the loop is a crash of
this actor (the loop tells it :class:`DeckCrashed`), so its supervisor
sees it, counts it against its intensity and starts the actor (and with it
the loop) again, on the same deck state.

:func:`start_ui` wires deck, attach socket (owned by its own actor, see
``attachactor.py``) and this actor into a running
:class:`~actors.session.Session`, under a supervisor of their own ("deck",
temporary): a deck that keeps failing is given up alone, the crew goes on
without it (the control socket, the CLI, the web view, the notifier), and
the give-up is said (:func:`deck_given_up`).  :class:`SessionAccess` is the narrow view
of the session the deck gets (terminals to read, roles to type into, the
control commands).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import singledispatchmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pykka

from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.actors.children import Child, build, nested
from choragos.actors.durable import SaveLayout
from choragos.actors.handle import Handle
from choragos.actors.listener import settle
from choragos.actors.rolesview import RolesView
from choragos.actors.supervisor import TEMPORARY, SupervisorState
from choragos.config.model import Config
from choragos.control import wire
from choragos.control.server import fault_hook
from choragos.session import news
from choragos.terminal.emulator import Terminal
from choragos.ui.attachactor import AttachActor, install_fault_hook
from choragos.ui.attachserver import AttachServer
from choragos.ui.deck import COMMAND_TIMEOUT, Deck

if TYPE_CHECKING:
    from choragos.actors.session import Session

log = logging.getLogger("choragos.ui")

# The deck's own allowance: its restarts do not count against the session's.
DECK_INTENSITY = 5
DECK_PERIOD = 60.0


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


@dataclass
class UI:
    """What start_ui started, for stopping it."""

    deck: Deck
    attach: AttachServer
    handle: Any

    def stop(self) -> None:
        self.attach.close("the session ended")
        self.deck.stop()


def start_ui(session: Session, ui_socket: Path, cols: int, rows: int,
             on_client: Any = None) -> UI:
    """Start the deck, bind its attach socket and subscribe it to the core:
    the attach and UI actors, under the "deck" supervisor, a temporary child
    of the session's (after the session's own table)."""
    restored = session.restored
    access = SessionAccess(session.roles, session.core, session.workdir,
                           restored.layout if restored is not None else None)
    deck = Deck(access, cols, rows)
    server = AttachServer(ui_socket, deck, role_pids=access.role_pids,
                          workdir=session.workdir,
                          on_event=lambda kind, **fields: session.events.write(
                              f"deck: {kind}", **fields),
                          on_client=on_client)
    server.bind()
    install_fault_hook(server)
    install_deck_fault_hook(deck)
    tree = SupervisorState("deck", intensity=DECK_INTENSITY, period=DECK_PERIOD)

    def on_event(kind: str, **fields: Any) -> None:
        session.events.write(kind, **fields)
        if kind == "actor given up" and fields.get("supervisor") == "deck":
            try:
                deck_given_up(session, server, str(fields.get("reason", "")))
            except Exception:  # the give-up itself must still happen
                log.exception("telling of the deck's give-up failed")

    def attach(deps: dict) -> Any:
        return lambda h: AttachActor.start(server, h, deps["deck"])

    def ui(deps: dict) -> Any:
        return lambda h: UIActor.start(deck, deps["deck"])

    handles = build((nested("deck", tree, session.supervisor, on_event, restart=TEMPORARY,
                            children=(Child("attach", attach, needs=("deck",)),
                                      Child("ui", ui, needs=("deck",)))),),
                    session.supervisor)
    handle = handles["ui"]
    session.core.tell(m.Subscribe(lambda item: handle.tell(News(item))))
    return UI(deck, server, handle)


def deck_given_up(session: Session, server: AttachServer, reason: str) -> None:
    """The deck's supervisor gives up (on its thread, before it stops): the
    server log says so, a person is told as for a role stopped for good (the
    ``on_exit`` hook and the notifier, role ``deck``), and the attached
    client, and any later one, hear what still reaches the crew."""
    log.error("the deck is given up after repeated failures; the crew goes on without it: %s",
              reason)
    hooks = session.core_state.hooks if session.core_state is not None else None
    if hooks is not None:
        hooks.fire("on_exit", role="deck", task=f"the deck stopped: {reason}",
                   extra={"CHORAGOS_EXIT": "given up after repeated failures"})
    server.deck.stop()  # its loop, if the attach socket's threads were what failed
    server.give_up(given_up_sentence(session))


def given_up_sentence(session: Session) -> str:
    """What an attached (or attaching) client is told: true for this session."""
    page = ""
    if session.web is not None:
        from choragos.web.access import page_url

        page = f", the web view at {page_url(session.web.addr)}"
    return ("the deck stopped after repeated failures (the server log says why) and the crew "
            f"goes on without it: `choragos status`, `choragos gate`{page} reach it; "
            "`choragos shutdown` then `choragos serve --resume` brings the deck back")


def install_deck_fault_hook(deck: Deck) -> bool:
    """Test hook (``CHORAGOS_TEST_FAULTS=deck-loop``): SIGUSR2 makes the deck's
    loop raise, so a test can crash it for real in a running session."""

    def crash() -> None:
        raise RuntimeError("a fault was injected into the deck loop")

    return fault_hook("deck-loop", lambda: deck.post(crash))
