"""A deck that crashes at every restart, for real in a running session (the
test fault hook makes its loop raise): its own supervisor gives it up alone.
The session, its roles and their agents go on; the event log, the server log
and the ``on_exit`` hook say so; the attached client is told in one sentence
and exits; a later ``choragos attach`` is refused with the same sentence."""

from __future__ import annotations

import os
import re
import signal

import pytest

from tests.conftest import pid_alive, wait_until
from tests.deck.conftest import TmuxDeck
from tests.integration.harness import role_toml

TEAM = (role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
        + '\n[ui]\non_exit = \'echo "$CHORAGOS_ROLE: $CHORAGOS_EXIT" >> hook.out\'\n')
SENTENCE = "the deck stopped after repeated failures"


def _flat(text: str) -> str:
    """The screen without whitespace: a long line wraps in the pane."""
    return "".join(text.split())


def _events(d: TmuxDeck, kind: str, **fields: str) -> list[dict]:
    from choragos.board.events import default_path, read_events

    return [e for e in read_events(default_path(d.workdir)) if e["event"] == kind
            and all(e.get(k) == v for k, v in fields.items())]


@pytest.mark.timeout(180)
def test_a_deck_that_keeps_crashing_is_given_up_alone_and_the_crew_goes_on(deck):
    from choragos.ui.uiactor import DECK_INTENSITY

    d: TmuxDeck = deck(TEAM)
    d.shell("export CHORAGOS_TEST_FAULTS=deck-loop")  # the session's environment
    d.serve()
    d.wait_booted(["orchestrator", "coder"])
    agents = d.agent_pids()
    server = d.ls()[0]["pid"]

    for crash in range(1, DECK_INTENSITY + 1):  # each one restarted, the deck drawn again
        os.kill(server, signal.SIGUSR2)
        wait_until(lambda c=crash: len(_events(d, "actor restarted", actor="ui")) == c, 15,
                   message=f"deck restart {crash}")
        d.wait_screen("the deck crashed and restarted", 15)
    os.kill(server, signal.SIGUSR2)  # one more within the period: the deck is given up

    # The client was told and exited: its last words are on the shell's screen.
    d.wait_screen(lambda s: all(_flat(part) in _flat(s) for part in (
        f"[detached from {d.workdir}: {SENTENCE}", "`choragos status`, `choragos gate` reach it",
        "`choragos shutdown` then `choragos serve --resume` brings the deck back]")), 20)
    given = wait_until(lambda: _events(d, "actor given up"), 10, message="the give-up")
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
    assert hook.read_text() == "deck: given up after repeated failures\n"

    # The crew goes on: the same agents, the control socket answers.
    assert d.ls()[0]["pid"] == server and pid_alive(server)
    assert d.agent_pids() == agents and all(pid_alive(p) for p in agents.values())
    status = d.cli("status")
    assert status.returncode == 0 and "coder" in status.stdout, status.stderr

    # A later attach is refused with the same sentence, and returns.
    d.shell("choragos attach; echo attach-exit=$?")
    screen = d.wait_screen(lambda s: re.search(r"attach-exit=\d", s), 20)
    assert _flat(f"choragos attach: refused: {SENTENCE}") in _flat(screen), screen
    assert "attach-exit=1" in screen
    assert _events(d, "deck: attach refused")

    # What the sentence says brings the deck back does.
    assert d.cli("shutdown").returncode == 0
    wait_until(lambda: not pid_alive(server), 30, message="the session stopped")
    d.shell("choragos serve --resume")
    d.wait_screen("C-b ? help", 30)
    d.server_pids.add(d.ls()[0]["pid"])
    assert d.ls()[0]["pid"] != server and _events(d, "session resumed")


@pytest.mark.timeout(180)
def test_an_attach_relay_that_keeps_dying_gives_the_deck_up_and_attach_is_refused(deck):
    """The other half of the deck: its relay (the attach pump) dies at every
    restart.  The deck is given up alone; a dead pump is no reason to leave
    a later client hanging: it is refused with the sentence."""
    from choragos.ui.uiactor import DECK_INTENSITY

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

    d.shell("choragos attach; echo attach-exit=$?")
    screen = d.wait_screen(lambda s: re.search(r"attach-exit=\d", s), 20)
    assert _flat(f"choragos attach: refused: {SENTENCE}") in _flat(screen), screen
    assert "attach-exit=1" in screen
    assert d.agent_pids() == agents and all(pid_alive(p) for p in agents.values())
    assert d.cli("status").returncode == 0
