"""The deck's subtree: its supervisor, the attach and UI actors, and the
core's news to them; built as ``serve`` starts, and built again when an
attach finds the deck given up.

:func:`start_ui` wires the deck, its attach socket (owned by the attach
actor, ``attachactor.py``) and the UI actor (``uiactor.py``) into a running
:class:`~actors.session.Session`, under a supervisor of their own ("deck",
temporary): a deck that keeps failing is given up alone, the crew goes on
without it (the control socket, the CLI, the web view, the notifier), and
the give-up is said (:func:`deck_given_up`).

The attach socket stays bound through a give-up.  The next ``choragos
attach`` asks for the deck back (:meth:`DeckTree.revive`): a new deck on
the same access to the session, a new "deck" supervisor with fresh actors
and handles, a new subscription to the core, the roles' terminals let go by
the dead deck (they would keep it, and post into its stopped loop), and the
attach goes on as any other.  Only an attach brings it back, once per attach: a deck that fails
again is given up again, and the client told so, with no loop of restarts
that nobody asked for.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors.children import Child
from choragos.actors.handle import Handle
from choragos.actors.subtree import Subtree, tell_exit_hook
from choragos.control.server import fault_hook
from choragos.ui.attachactor import AttachActor, install_fault_hook
from choragos.ui.attachserver import AttachServer
from choragos.ui.deck import Deck
from choragos.ui.framing import ENDED_REASON
from choragos.ui.uiactor import News, SessionAccess, UIActor

if TYPE_CHECKING:
    from choragos.actors.session import Session

log = logging.getLogger("choragos.ui")

# The deck's own allowance: its restarts do not count against the session's.
DECK_INTENSITY = 5
DECK_PERIOD = 60.0


class DeckTree:
    """The deck's subtree in a session: what it is built of, the deck it runs
    now, and its revival after a give-up."""

    def __init__(self, session: Session, access: SessionAccess, server: AttachServer) -> None:
        self.session = session
        self.access = access
        self.server = server
        self.deck = server.deck
        self.handle: Handle | None = None  # the UI actor's, while the deck runs
        self.gave_up = ""  # why the deck was given up last
        self._reviving = threading.Lock()  # two attaches at once: one revival
        self.subtree = Subtree("deck", session,
                               (Child("attach", self._attach, needs=("deck",)),
                                Child("ui", self._ui, needs=("deck",))),
                               intensity=DECK_INTENSITY, period=DECK_PERIOD,
                               on_given_up=self._given_up)

    def _attach(self, deps: dict) -> Any:
        server = self.server
        return lambda h: AttachActor.start(server, h, deps["deck"])

    def _ui(self, deps: dict) -> Any:
        deck = self.deck  # the deck of this build: a restart within it keeps it
        return lambda h: UIActor.start(deck, deps["deck"])

    def build(self) -> Handle:
        """Start the "deck" supervisor, its actors and the core's news to the UI actor."""
        handle = self.handle = self.subtree.build()["ui"]
        # The old deck's subscription ends by itself: its closed handle
        # refuses the next item and the core drops it.
        self.session.core.tell(m.Subscribe(lambda item: handle.tell(News(item))))
        return handle

    def _given_up(self, reason: str) -> None:
        self.gave_up = reason
        deck_given_up(self.session, self.server, reason)

    def revive(self, pid: int) -> bool:
        """An attach (client ``pid``) found the deck given up: build it anew;
        True when it runs again.  On the attach's handshake thread."""
        with self._reviving:
            if not self.server.refusal:
                return True  # another attach brought it back meanwhile
            try:
                self._rebuild()
            except Exception as exc:
                log.exception("the deck could not be restarted on attach")
                self.session.events.write("deck restart failed", pid=pid, error=str(exc))
                self.server.give_up(given_up_sentence(self.session))
                return False
        log.info("deck restarted on attach (client pid %d)", pid)
        self.session.events.write("actor restarted", actor="deck", supervisor="session",
                                  error=self.gave_up, on="attach", pid=pid)
        return True

    def _rebuild(self) -> None:
        # Under the attach client's wait for an answer (5 s).
        self.subtree.await_dropped()
        old = self.deck
        old.pacer.let_go()  # before the new deck watches them: the roles' terminals are shared
        self.deck = Deck(self.access, *old.screen.get_cols_rows())
        self.deck.notices.hold(old.notices.unread)  # not read yet: still to be shown
        self.server.adopt(self.deck)  # the old relay has stopped: its screen goes
        old.screen.close()
        self.build()


@dataclass
class UI:
    """What start_ui started, for stopping it."""

    tree: DeckTree
    attach: AttachServer

    @property
    def deck(self) -> Deck:
        """The deck running now (a new one after a revival)."""
        return self.tree.deck

    @property
    def handle(self) -> Handle | None:
        return self.tree.handle

    def stop(self, reason: str = ENDED_REASON) -> None:
        """``reason``: what the attached client says as it leaves (why a
        session that failed, its start's end too, stopped)."""
        self.attach.close(reason)
        self.tree.deck.stop()


def start_ui(session: Session, ui_socket: Path, cols: int, rows: int,
             on_client: Any = None, notices: tuple[str, ...] = ()) -> UI:
    """Start the deck, bind its attach socket and subscribe it to the core:
    the attach and UI actors, under the "deck" supervisor, a temporary child
    of the session's (after the session's own table).  ``notices``: what
    the start said, shown in a dialog on the first attach's first frame."""
    restored = session.restored
    access = SessionAccess(session.roles, session.core, session.workdir,
                           restored.layout if restored is not None else None)
    deck = Deck(access, cols, rows)
    deck.notices.hold(notices)
    server = AttachServer(ui_socket, deck, role_pids=access.role_pids,
                          workdir=session.workdir,
                          on_event=lambda kind, **fields: session.events.write(
                              f"deck: {kind}", **fields),
                          on_client=on_client)
    server.bind()
    tree = DeckTree(session, access, server)
    server.revive = tree.revive
    install_fault_hook(server)
    install_deck_fault_hook(tree)
    tree.build()
    return UI(tree, server)


def deck_given_up(session: Session, server: AttachServer, reason: str) -> None:
    """The deck's supervisor gives up (on its thread, before it stops): the
    server log says so, a person is told as for a role stopped for good (the
    ``on_exit`` hook, with ``CHORAGOS_EXITED=part`` so a role named ``deck``
    is not mistaken for it, and the notifier), and the attached client, and
    any later one whose attach cannot bring it back, hear what still
    reaches the crew."""
    log.error("the deck is given up after repeated failures; the crew goes on without it "
              "(an attach starts it again): %s", reason)
    tell_exit_hook(session, "deck", "the deck", reason)
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
            "`choragos attach` starts the deck again")


def install_deck_fault_hook(tree: DeckTree) -> bool:
    """Test hook (``CHORAGOS_TEST_FAULTS=deck-loop``): SIGUSR2 makes the
    deck's loop raise (the deck running then, a revived one too), so a test
    can crash it for real in a running session."""

    def crash() -> None:
        raise RuntimeError("a fault was injected into the deck loop")

    return fault_hook("deck-loop", lambda: tree.deck.post(crash))
