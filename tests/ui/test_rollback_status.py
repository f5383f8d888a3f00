"""After a rollback from the board, the status line keeps the undo command
whole at 80 columns."""

from __future__ import annotations

import pytest

from choragos.session import news
from choragos.ui.deck import Deck
from tests.ui.test_deck import FakePort, ready_to_draw

COLS, ROWS = 80, 24


class RollbackPort(FakePort):
    def dispatch(self, request: dict) -> dict:
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
