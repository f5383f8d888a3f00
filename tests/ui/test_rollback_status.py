"""After a rollback from the board, the status line keeps the undo command
whole at 80 columns; before it, the dialog names the nested repositories
the rollback leaves as they are although they are not as they were (work
not committed there, another commit), whether or not any file is restored."""

from __future__ import annotations

import pytest

from choragos.session import news
from choragos.ui.deck import Deck
from tests.ui.test_deck import FakePort, ready_to_draw

COLS, ROWS = 80, 24


class RollbackPort(FakePort):
    plan: dict | None = None  # a dry run's answer, when a test sets one

    def dispatch(self, request: dict) -> dict:
        if request.get("cmd") == "rollback" and request.get("dry_run"):
            return self.plan or {"status": "error"}
        if request.get("cmd") == "rollback":
            self.requests.append(request)
            return {"status": "ok", "saved": "pre-rollback-T12", "restored": 123,
                    "deleted": 45}
        return super().dispatch(request)


@pytest.fixture
def deck(tmp_path):
    made = ready_to_draw(Deck(RollbackPort(tmp_path), COLS, ROWS))
    made.loop.screen_size = (COLS, ROWS)
    yield made
    made.stop()
    made.screen.close()


def _status(deck: Deck) -> str:
    return deck.loop.widget.render((COLS, ROWS), focus=True).text[-1].decode("utf-8")


def _screen(deck: Deck, size: tuple[int, int]) -> str:
    rows = deck.loop.widget.render(size, focus=True).text
    return "\n".join(row.decode("utf-8") for row in rows)


@pytest.mark.parametrize("gates", [0, 2])
def test_the_undo_command_is_on_the_status_line_whole(deck, gates) -> None:
    deck.apply(news.RoleChanged(news.RoleView("orchestrator", "working")))
    deck.state.gates.update({f"T{n}": {"id": f"T{n}"} for n in range(gates)})
    assert "▸ orchestrator" in _status(deck)  # the focused role, before
    deck.dialogs._rollback({"id": "T12"}, "refs/choragos/checkpoints/T12")
    deck.commands.shutdown(wait=True)
    deck.mailbox._wake(b"")  # the answer, on the loop's thread as the loop would
    assert {"cmd": "rollback", "target": "refs/choragos/checkpoints/T12"} in deck.port.requests
    line = _status(deck)
    assert len(line) == COLS
    assert "rolled back T12; undo: choragos rollback pre-rollback-T12 " in line, line
    assert "…" not in line
    assert ("gates waiting" in line) == bool(gates)  # kept, the message or not


NESTED_SIZE = (100, 40)
TASK = {"id": "T3", "role": "coder", "checkpoint": "refs/choragos/checkpoints/1-T3"}


def plan(restore: list[str]) -> dict:
    return {"status": "ok", "checkpoint": TASK["checkpoint"], "name": "1-T3", "task": "T3",
            "restore": restore, "delete": [], "restore_count": len(restore),
            "delete_count": 0, "conflicts": [], "conflicts_count": 0,
            "submodules": ["vendor/moved"], "submodules_count": 1,
            "nested_changes": ["lib", "tools/deep\x1b[2J"], "nested_changes_count": 2,
            "head_then": "a" * 40, "head_now": "a" * 40, "head_moved": False,
            "empty": not restore}


@pytest.mark.parametrize("restore", [["a.txt"], []], ids=["files restored", "files match"])
def test_the_dialog_names_nested_repositories_left_as_they_are(deck, restore) -> None:
    deck.port.plan = plan(restore)
    deck.dialogs._plan_rollback(TASK)
    deck.commands.shutdown(wait=True)
    deck.mailbox._wake(b"")  # the answer, on the loop's thread as the loop would
    screen = _screen(deck, NESTED_SIZE)
    assert "Roll back to before T3" in screen
    assert "Nested repositories with work not committed" in screen
    assert "  lib " in screen and "tools/deep" in screen
    assert "\x1b" not in screen  # a name is shown inert
    assert "Nested repositories at another commit" in screen and "vendor/moved" in screen


def test_the_dialog_says_which_nested_repositories_are_put_back_and_what_is_not(deck) -> None:
    deck.port.plan = {**plan(["lib/inside.txt"]), "nested_changes": [],
                      "nested_changes_count": 0, "nested_restored": ["lib"],
                      "nested_notes": ["lib: its HEAD moved from aaaa to bbbb: its commits "
                                       "are not undone\x1b[2J"]}
    deck.dialogs._plan_rollback(TASK)
    deck.commands.shutdown(wait=True)
    deck.mailbox._wake(b"")
    screen = _screen(deck, NESTED_SIZE)
    assert "Nested repositories whose files are put back" in screen and "  lib " in screen
    assert "its HEAD moved from aaaa to bbbb" in screen and "\x1b" not in screen
    assert "Nested repositories with work not committed" not in screen
