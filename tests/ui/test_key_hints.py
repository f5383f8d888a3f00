"""A dialog's key line is never cut at the dialog's edge: at 80 columns the
gate's keys wrap onto a second row between key groups."""

from __future__ import annotations

import urwid

from choragos.board.tasks import Task, TaskState
from choragos.session import news
from choragos.ui.deck import Deck, _Loop
from choragos.ui.overlays import KeyHint
from choragos.ui.theme import build_palette
from tests.ui.test_deck import FakePort


def test_the_gate_shows_every_key_at_80_columns(tmp_path):
    deck = Deck(FakePort(tmp_path), 80, 24)
    deck.loop = _Loop(deck.view, build_palette(deck.ui.theme), screen=deck.screen)
    deck.loop.deck = deck
    deck.loop.screen_size = (80, 24)
    deck.attached = True
    try:
        deck.apply(news.GateOpened(news.GateView(Task("T4", "release", "Tag v2",
                                                      state=TaskState.GATED))))
        rows = [row.decode() for row in deck.loop.widget.render((80, 24), focus=True).text]
        text = "\n".join(rows)
        assert "Approval needed: T4 for release" in text
        for key in ("y approve", "n reject (the orchestrator is told)", "v view", "e edit",
                    "Esc later"):
            assert key in text, text
    finally:
        deck.stop()
        deck.screen.close()


def test_a_hint_breaks_only_between_key_groups():
    hint = KeyHint("y approve   n reject   e edit")
    rows = [row.decode().rstrip() for row in hint.render((20,)).text]
    assert rows == ["y approve   n reject", "e edit"]
    assert hint.rows((40,)) == 1
    assert isinstance(hint, urwid.Text)
