"""A deck that crashes at every restart, for real in a running session (the
test fault hook makes its loop raise): its own supervisor gives it up alone.
The session, its roles and their agents go on; the event log, the server log
and the ``on_exit`` hook say so (as a part of the session, not a role); the
attached client is told in one sentence and exits; the next ``choragos
attach`` builds the deck again on the same crew, as often as it is given up."""

from __future__ import annotations

import os
import re
import signal

import pytest

from tests.conftest import pid_alive, wait_until
from tests.deck.conftest import TmuxDeck
from tests.integration.harness import role_toml

TEAM = (role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
        + '\n[ui]\non_exit = \'echo "$CHORAGOS_ROLE $CHORAGOS_EXITED=$CHORAGOS_PART: '
        '$CHORAGOS_EXIT" >> hook.out\'\n')
SENTENCE = "the deck stopped after repeated failures"


def _flat(text: str) -> str:
    """The screen without whitespace: a long line wraps in the pane."""
    return "".join(text.split())


def _events(d: TmuxDeck, kind: str, **fields: str) -> list[dict]:
    from choragos.board.events import default_path, read_events

    return [e for e in read_events(default_path(d.workdir)) if e["event"] == kind
            and all(e.get(k) == v for k, v in fields.items())]


def _crash_until_given_up(d: TmuxDeck, server: int, given: int) -> None:
    """Crash the deck's loop once more than its supervisor allows (each crash
    restarted and the deck drawn again) until the ``given``-th give-up."""
    from choragos.ui.decktree import DECK_INTENSITY

    before = len(_events(d, "actor restarted", actor="ui"))
    for crash in range(1, DECK_INTENSITY + 1):
        os.kill(server, signal.SIGUSR2)
        wait_until(lambda c=crash: len(_events(d, "actor restarted", actor="ui")) == before + c,
                   15, message=f"deck restart {crash}")
        d.wait_screen("the deck crashed and restarted", 15)
    os.kill(server, signal.SIGUSR2)  # one more within the period: the deck is given up
    wait_until(lambda: len(_events(d, "actor given up", supervisor="deck")) == given, 10,
               message=f"give-up {given}")


def _told_and_detached(d: TmuxDeck) -> None:
    """The attached client heard the sentence and exited: its last words
    are on the shell's screen."""
    d.wait_screen(lambda s: all(_flat(part) in _flat(s) for part in (
        f"[detached from {d.workdir}: {SENTENCE}", "`choragos status`, `choragos gate` reach it",
        "`choragos attach` starts the deck again]")), 20)


def _attach_brings_it_back(d: TmuxDeck, agents: dict[str, int], line: str) -> None:
    """``choragos attach`` builds the deck again: a frame with both roles'
    panes and cards, and a line typed there reaches the focused role."""
    d.shell("clear; choragos attach")
    screen = d.wait_screen(lambda s: "C-b ? help" in s and all(
        f"fixture agent {role} starting" in s for role in agents), 20)
    for number, role in enumerate(("orchestrator", "coder"), 1):
        assert re.search(rf"│ {number} [○●◌] {role}", screen), screen
    assert d.agent_pids() == agents and all(pid_alive(p) for p in agents.values())
    d.type(line)
    d.wait_screen(line)
    d.keys("Enter")
    wait_until(lambda: line in d.submitted("orchestrator"), 10,
               message="the line to reach the orchestrator")


@pytest.mark.timeout(240)
def test_a_deck_that_keeps_crashing_is_given_up_alone_and_an_attach_brings_it_back(deck):
    d: TmuxDeck = deck(TEAM)
    d.shell("export CHORAGOS_TEST_FAULTS=deck-loop")  # the session's environment
    d.serve()
    d.wait_booted(["orchestrator", "coder"])
    agents = d.agent_pids()
    server = d.ls()[0]["pid"]

    _crash_until_given_up(d, server, 1)
    _told_and_detached(d)
    given = _events(d, "actor given up")
    assert [(e["actor"], e["supervisor"]) for e in given] == [("ui", "deck")]
    assert "a fault was injected into the deck loop" in given[0]["reason"]
    # The session's supervisor drops its temporary child (on its own thread, just after).
    exited = wait_until(lambda: _events(d, "actor exited", restart="temporary"), 10,
                        message="the deck child dropped")
    assert [e["actor"] for e in exited] == ["deck"]
    assert not _events(d, "session gave up")
    assert "the deck is given up after repeated failures" in d.server_log()
    hook = d.workdir / "hook.out"
    wait_until(lambda: hook.exists() and hook.read_text(), 10, message="the on_exit hook")
    assert hook.read_text() == "deck part=deck: given up after repeated failures\n"

    # The crew goes on: the same agents, the control socket answers.
    assert d.ls()[0]["pid"] == server and pid_alive(server)
    assert d.agent_pids() == agents and all(pid_alive(p) for p in agents.values())
    status = d.cli("status")
    assert status.returncode == 0 and "coder" in status.stdout, status.stderr

    # An attach builds the deck again, on the same crew.
    _attach_brings_it_back(d, agents, "back after one give-up")
    back = _events(d, "actor restarted", actor="deck")
    assert [(e["supervisor"], e["on"]) for e in back] == [("session", "attach")]
    assert "a fault was injected into the deck loop" in back[0]["error"]
    assert "deck restarted on attach" in d.server_log()
    assert not _events(d, "deck: attach refused")

    # The new deck has an allowance of its own, and is given up again alone;
    # nothing brings it back but the next attach.
    _crash_until_given_up(d, server, 2)
    _told_and_detached(d)
    wait_until(lambda: len(_events(d, "actor exited", actor="deck")) == 2, 10,
               message="the second deck dropped")
    assert len(_events(d, "actor restarted", actor="deck")) == 1
    _attach_brings_it_back(d, agents, "back after two give-ups")
    assert len(_events(d, "actor restarted", actor="deck")) == 2
    assert d.ls()[0]["pid"] == server and not _events(d, "session gave up")


@pytest.mark.timeout(180)
def test_an_attach_relay_that_keeps_dying_gives_the_deck_up_and_attach_brings_it_back(deck):
    """The other half of the deck: its relay (the attach pump) dies at every
    restart.  The deck is given up alone; a dead pump is no reason to leave
    a later client hanging: the attach starts the relay and the deck again."""
    from choragos.ui.decktree import DECK_INTENSITY

    d: TmuxDeck = deck(TEAM)
    d.shell("export CHORAGOS_TEST_FAULTS=attach-pump")
    d.serve()
    d.wait_booted(["orchestrator", "coder"])
    agents = d.agent_pids()
    server = d.ls()[0]["pid"]
    for death in range(1, DECK_INTENSITY + 2):  # one more than the deck's supervisor allows
        os.kill(server, signal.SIGUSR2)
        wait_until(lambda n=death: len(_events(d, "deck: relay died")) == n, 15,
                   message=f"relay death {death}")
        if death <= DECK_INTENSITY:
            wait_until(lambda n=death: len(_events(d, "actor restarted", actor="attach")) == n,
                       15, message=f"attach restart {death}")
    given = wait_until(lambda: _events(d, "actor given up", supervisor="deck"), 10,
                       message="the give-up")
    assert given[0]["actor"] == "attach"
    wait_until(lambda: _events(d, "actor exited", actor="deck"), 10, message="deck dropped")
    assert not _events(d, "session gave up")

    _attach_brings_it_back(d, agents, "back after the relay gave up")
    assert [e["on"] for e in _events(d, "actor restarted", actor="deck")] == ["attach"]
    assert not _events(d, "deck: attach refused")
    assert d.cli("status").returncode == 0
