"""A deck given up and built anew by an attach (ui/decktree.py) takes the
roles' terminals over: none of them still calls the dead deck, which would
keep it (its screen, its state, its stopped loop's mailbox) for the
session's life."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from choragos.ui.deck import Deck
from choragos.ui.decktree import DeckTree
from tests.ui.test_deck import FakePort, deck_on, ready_to_draw, screen_text


class _Server:
    """The attach server's side of a rebuild: it adopts the new deck."""

    def __init__(self) -> None:
        self.adopted: list[Deck] = []

    def adopt(self, deck: Deck) -> None:
        self.adopted.append(deck)


class _Subtree:
    def await_dropped(self) -> None:
        """The old "deck" supervisor is gone (it gave up before the attach)."""


def _rebuilt(port: FakePort, old: Deck) -> DeckTree:
    tree = DeckTree.__new__(DeckTree)  # the session's half (actors, news) is not this test's
    tree.access, tree.server, tree.subtree, tree.deck = port, _Server(), _Subtree(), old
    tree.build = lambda: None
    tree._rebuild()
    return tree


def _calls(callback: object) -> object:
    return getattr(getattr(callback, "func", None), "__self__", None)


def test_a_rebuilt_deck_leaves_no_terminal_calling_the_dead_one(tmp_path: Path) -> None:
    port = FakePort(tmp_path)
    old = deck_on(port)
    screen_text(old)  # drawn: it watches the shown panes' terminals
    watched = dict(old.pacer.watched)
    assert watched and all(_calls(t.on_change) is old for t in watched.values())
    old.stop()  # as the give-up stops it
    tree = _rebuilt(port, old)
    new = tree.deck
    try:
        assert new is not old and tree.server.adopted == [new]
        assert not [role for role, t in port.terminals.items()
                    if old in (_calls(t.on_change), _calls(t.on_echo))]
        # Output before the new deck draws them reaches nobody and fails nothing.
        before = len(old.mailbox._inbox)
        for terminal in watched.values():
            terminal.feed(b"more output\r\n")
        assert len(old.mailbox._inbox) == before
        dead = weakref.ref(old)
        del old
        gc.collect()
        assert dead() is None, [r for r in gc.get_referrers(dead()) if r is not watched]
        # The new deck watches what it draws, and hears of its output.
        screen_text(ready_to_draw(new))
        assert new.pacer.watched.keys() == watched.keys()
        assert all(_calls(t.on_change) is new for t in watched.values())
    finally:
        new.stop()
        new.screen.close()
