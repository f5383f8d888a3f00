"""The UI actor is a supervised child like any other: a crash in it is
restarted, and crashes past the supervisor's intensity escalate to the top."""

from __future__ import annotations

import pykka

from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor, SupervisorState
from choragos.session import news
from choragos.ui.uiactor import News, UIActor
from tests.conftest import wait_until


class BrokenDeck:
    """A deck whose every news item raises, as a deck bug would."""

    def __init__(self) -> None:
        self.seen: list = []
        self.starts = 0
        self.on_loop_crash = None

    def start(self) -> None:  # each (re)started UI actor runs the loop again
        self.starts += 1

    def news(self, item) -> None:
        self.seen.append(item)
        raise RuntimeError(f"cannot draw {item!r}")


def event(n: int) -> News:
    return News(news.EventLogged("note", fields={"n": n}))


def test_a_ui_crashing_past_the_intensity_takes_the_session_down():
    gave_up, events = [], []
    sup = Supervisor.start(SupervisorState(intensity=2), on_give_up=gave_up.append,
                           on_event=lambda kind, **f: events.append((kind, f)))
    deck = BrokenDeck()
    try:
        handle = sup.ask(StartChild(ChildSpec("ui", lambda h: UIActor.start(deck, sup))))
        for n in (1, 2):
            handle.tell(event(n))
            wait_until(lambda n=n: sum(e[0] == "actor restarted" for e in events) == n, 5,
                       message=f"ui restart {n}")
        assert gave_up == []
        handle.tell(event(3))
        wait_until(lambda: gave_up, 5, message="the top gave up on the ui")
        assert "ui failed 3 times" in gave_up[0] and "cannot draw" in gave_up[0]
        assert [item.fields["n"] for item in deck.seen] == [1, 2, 3]
        assert deck.starts == 3  # the first start and two restarts
    finally:
        sup.ask(StopAll())
        sup.stop()
    wait_until(lambda: not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()], 5,
               message="every actor stopped")
