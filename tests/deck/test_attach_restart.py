"""The attach pump killed for real in a running session (the test fault hook):
the attached terminal is told why and let go, the session's tree restarts the
attach actor, and attaching again shows the deck."""

from __future__ import annotations

import os
import signal

import pytest

from choragos.board.events import default_path, read_events
from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck
from tests.integration.harness import role_toml


@pytest.mark.timeout(120)
def test_a_killed_attach_pump_is_restarted_and_the_deck_attaches_again(deck):
    d: TmuxDeck = deck(role_toml("orchestrator", start=True) + role_toml("coder", "--worker"))
    d.shell("export CHORAGOS_TEST_FAULTS=attach-pump")  # the session's environment
    d.serve()
    d.wait_booted(["coder"])
    os.kill(d.ls()[0]["pid"], signal.SIGUSR2)
    d.wait_screen("the deck's relay failed")

    def restarted() -> list[dict]:
        return [e for e in read_events(default_path(d.workdir))
                if e["event"] == "actor restarted" and e.get("actor") == "attach"]
    found = wait_until(restarted, 10, message="the attach actor restarted")[0]
    assert "a fault was injected into the attach pump" in found["error"]
    d.shell("choragos attach")
    d.wait_screen("C-b ? help", 20)
    assert d.cli("ping").returncode == 0
