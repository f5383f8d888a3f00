"""The start's notices in the deck: a dialog before any gate, whose keys
are its own, read once."""

from __future__ import annotations

from choragos.board.tasks import Task, TaskState
from choragos.session import news
from tests.ui.test_deck import deck, keys, screen_text  # noqa: F401 (a fixture)

KEPT = ("a previous session's state (3 tasks, 1 open) was kept in .choragos/state.kept-1, "
        "not applied; to resume it, stop this session and run "
        "`choragos serve --resume .choragos/state.kept-1`")


def shown(made) -> str:
    return " ".join(" ".join(screen_text(made)).split())


def test_notices_come_before_a_gate_keep_their_keys_and_are_shown_once(deck):  # noqa: F811
    deck.notices.hold((KEPT, "warning: [x] y is not built yet"))
    deck.apply(news.GateOpened(news.GateView(Task("T4", "release", "Tag", state=TaskState.GATED))))
    text = shown(deck)
    assert deck.overlays.kind == "notices" and "Approval needed" not in text
    assert "`choragos serve --resume .choragos/state.kept-1`" in text
    assert "warning: [x] y is not built yet" in text
    keys(deck, b"hi")  # the dialog's, never the agent's
    assert deck.port.typed("orchestrator") == b""
    assert deck.overlays.kind == "notices"
    keys(deck, b"\r")
    assert deck.overlays.kind == "gate"  # the gate waited behind them
    keys(deck, b"\x1b")
    deck._show_waiting()  # as the next attach does
    assert deck.overlays.widget is None and deck.notices.unread == ()


def test_a_start_with_nothing_to_say_opens_nothing(deck):  # noqa: F811
    deck._show_waiting()
    assert deck.overlays.widget is None
    assert "Start notices" not in shown(deck)
