"""A session that fails while its deck is attached says why on the terminal
the deck leaves (tmux), not only in the server's log: its supervision tree
gives up (the listener killed more often than it allows, through the test
fault hook), and ``serve``'s client ends with the reason and a failing
status, the state kept for ``serve --resume``."""

from __future__ import annotations

import signal

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck
from tests.integration.harness import role_toml

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _flat(text: str) -> str:
    return "".join(text.split())


def _restarts(d: TmuxDeck) -> int:
    from choragos.board.events import default_path, read_events

    return sum(e["event"] == "actor restarted" and e.get("actor") == "listener"
               for e in read_events(default_path(d.workdir)))


def test_a_session_that_gives_up_under_its_deck_says_why_on_the_terminal(deck):
    import os

    from choragos.actors.session import SESSION_INTENSITY

    d: TmuxDeck = deck(role_toml("orchestrator", start=True))
    d.shell("export CHORAGOS_TEST_FAULTS=accept-loop")  # the session's environment
    d.serve()
    d.wait_booted(["orchestrator"])
    server = d.ls()[0]["pid"]
    for death in range(1, SESSION_INTENSITY + 1):  # each one restarted
        os.kill(server, signal.SIGUSR2)
        wait_until(lambda n=death: _restarts(d) == n, 15, message=f"listener restart {death}")
        # Served again (its fault hook with it) before the next death.
        wait_until(lambda: d.cli("ping").returncode == 0, 15, message=f"ping after {death}")
    os.kill(server, signal.SIGUSR2)  # one more within the period: the session gives up
    said = (f"[the session in {d.workdir} ended: it stopped: supervisor session gave up: "
            "listener failed")
    screen = d.wait_screen(lambda s: _flat(said) in _flat(s), 30)
    assert "`choragos serve --resume` takes it up again]" in " ".join(screen.split()), screen
    d.shell("echo status=$?")
    d.wait_screen("status=1", 10)
