"""The board's rollback dialog names the nested repositories the rollback
leaves as they are although they are not as they were -- work not committed
there, another commit -- whether or not any file of the tree is restored."""

from __future__ import annotations

import pytest

from choragos.ui.deck import Deck
from tests.ui.test_deck import FakePort, ready_to_draw

COLS, ROWS = 100, 40
TASK = {"id": "T3", "role": "coder", "checkpoint": "refs/choragos/checkpoints/1-T3"}


def plan(restore: list[str]) -> dict:
    return {"status": "ok", "checkpoint": TASK["checkpoint"], "name": "1-T3", "task": "T3",
            "restore": restore, "delete": [], "restore_count": len(restore),
            "delete_count": 0, "conflicts": [], "conflicts_count": 0,
            "submodules": ["vendor/moved"], "submodules_count": 1,
            "nested_changes": ["lib", "tools/deep\x1b[2J"], "nested_changes_count": 2,
            "head_then": "a" * 40, "head_now": "a" * 40, "head_moved": False,
            "empty": not restore}


class PlanPort(FakePort):
    answer: dict | None = None  # the dry run's ack, set by the test

    def dispatch(self, request: dict) -> dict:
        if request.get("cmd") == "rollback":
            return self.answer
        return super().dispatch(request)


@pytest.fixture
def deck(tmp_path):
    made = ready_to_draw(Deck(PlanPort(tmp_path), COLS, ROWS))
    made.loop.screen_size = (COLS, ROWS)
    yield made
    made.stop()
    made.screen.close()


def _screen(deck: Deck) -> str:
    rows = deck.loop.widget.render((COLS, ROWS), focus=True).text
    return "\n".join(row.decode("utf-8") for row in rows)


@pytest.mark.parametrize("restore", [["a.txt"], []], ids=["files restored", "files match"])
def test_the_dialog_names_nested_repositories_left_as_they_are(deck, restore) -> None:
    deck.port.answer = plan(restore)
    deck.dialogs._plan_rollback(TASK)
    deck.commands.shutdown(wait=True)
    deck.mailbox._wake(b"")  # the answer, on the loop's thread as the loop would
    screen = _screen(deck)
    assert "Roll back to before T3" in screen
    assert "Nested repositories with work not committed" in screen
    assert "  lib " in screen and "tools/deep" in screen
    assert "\x1b" not in screen  # a name is shown inert
    assert "Nested repositories at another commit" in screen and "vendor/moved" in screen
