"""The deck's frame budget (ui/deckpace.py): when a shown pane's new output
is drawn, counted from the alarms the pacer asks its loop for."""

from __future__ import annotations

from choragos.ui.deckbase import FRAME
from choragos.ui.deckpace import FramePacer


class _Loop:
    """Records the delay of every alarm asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def set_alarm_in(self, delay: float, callback: object) -> object:
        self.delays.append(delay)
        return object()


def _pacer() -> tuple[FramePacer, _Loop]:
    pacer = FramePacer(lambda role: None, lambda role: None, lambda: 0, lambda: None)
    pacer.loop = _Loop()
    return pacer, pacer.loop


def test_output_after_a_new_clients_whole_frame_waits_for_no_budget() -> None:
    """The whole frame a client gets as it attaches is drawn for the client,
    not for output: an agent's prompt coming just after it is drawn at once
    (at start-up the agents' prompts come while the client attaches)."""
    pacer, loop = _pacer()
    pacer.forget()  # a client attached
    pacer.drawn()  # its whole frame
    assert pacer.pane_changed("r1", shown=True) is False  # waits for the loop's alarm...
    assert loop.delays == [0.0]  # ... which is due at once
    pacer._frame_up()
    pacer.drawn()  # that output's frame: the budget runs from it
    pacer.pane_changed("r2", shown=True)
    assert FRAME * 0.5 < loop.delays[-1] <= FRAME


def test_output_after_a_frame_drawn_for_output_waits_for_the_budget() -> None:
    pacer, loop = _pacer()
    pacer.drawn()
    pacer.pane_changed("r1", shown=True)
    assert FRAME * 0.5 < loop.delays[-1] <= FRAME
