"""The deck's reload key and a file that loosens what only the operator
decides: the refusal's list is shown in a dialog, nothing is typed into a
role meanwhile, and ``y`` confirms exactly what was shown (its mark sent
back); ``n`` changes nothing."""

from __future__ import annotations

import time

import pytest

from choragos.ui.deck import Deck
from tests.ui.test_deck import FakePort, keys, ready_to_draw, screen_text

COLS, ROWS = 100, 30
LOOSENED = ["coder approve true -> false", "coder budget_tokens 5000 -> 90000"]


class ReloadPort(FakePort):
    def dispatch(self, request: dict) -> dict:
        if request.get("cmd") != "reload":
            return super().dispatch(request)
        self.requests.append(request)
        if request.get("loosen") and request.get("seen") == "m1":
            return {"status": "ok", "message": "reloaded the configuration: updated coder"}
        return {"status": "error", "error": "nothing changed: it loosens …",
                "loosened": LOOSENED, "seen": "m1"}


@pytest.fixture
def deck(tmp_path):
    made = ready_to_draw(Deck(ReloadPort(tmp_path), COLS, ROWS))
    yield made
    made.stop()
    made.screen.close()


def _until(deck: Deck, predicate, what: str) -> None:
    """Run the answers posted to the loop's thread, as the loop would, until
    ``predicate`` holds."""
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        deck.mailbox._wake(b"")
        time.sleep(0.01)


def _reloads(deck: Deck) -> list[dict]:
    return [r for r in deck.port.requests if r.get("cmd") == "reload"]


def _shown(deck: Deck) -> str:
    return "\n".join(screen_text(deck))


def test_a_loosening_is_shown_and_applied_only_on_yes(deck):
    keys(deck, b"\x02C")
    _until(deck, lambda: "only you decide" in _shown(deck), "the dialog")
    text = _shown(deck)
    assert "The config loosens what only you decide" in text
    for change in LOOSENED:
        assert change in text
    keys(deck, b"zy")  # the stray key goes nowhere: the dialog holds the keys
    assert deck.port.typed("orchestrator") == b""
    _until(deck, lambda: "updated coder" in screen_text(deck)[-1], "the reload's answer")
    assert _reloads(deck) == [{"cmd": "reload"},
                              {"cmd": "reload", "loosen": True, "seen": "m1"}]


def test_no_keeps_the_file_unapplied(deck):
    keys(deck, b"\x02C")
    _until(deck, lambda: "only you decide" in _shown(deck), "the dialog")
    keys(deck, b"n")
    assert _reloads(deck) == [{"cmd": "reload"}]
    assert "reload cancelled: nothing changed" in screen_text(deck)[-1]
