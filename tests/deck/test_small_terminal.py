"""The real deck in a terminal smaller than its tiles, and back (tmux): it
draws what fits, keeps its focus, and a dialog there still shows its
question and its keys."""

from __future__ import annotations

import json

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

ROLES = ["orchestrator", "coder", "release"]


def status(screen: str) -> str:
    return screen.splitlines()[-1] if screen.strip() else ""


def test_a_terminal_shrunk_below_its_tiles_and_back_keeps_the_deck_and_its_focus(deck):
    d: TmuxDeck = deck()
    d.serve()
    d.wait_booted(ROLES)
    d.keys("C-b", "2")
    d.wait_screen(lambda s: "▸ coder" in status(s))
    # Three rows hold a title each; two rows once put a tile's title below
    # the deck, and the deck crashed at every restart until the session gave up.
    for cols, rows, shows in ((10, 3, " choragos…"), (3, 2, " c…"), (25, 6, " choragos ▸ coder")):
        d.tmux("resize-window", "-t", ":0", "-x", str(cols), "-y", str(rows))
        d.wait_screen(lambda s, shows=shows: status(s).startswith(shows))
    d.tmux("resize-window", "-t", ":0", "-x", "80", "-y", "24")
    screen = d.wait_screen(lambda s: "C-b ? help" in status(s))
    assert "▸ coder" in status(screen)
    assert " 1 orchestrator" in screen and " 3 release" in screen
    assert not (d.workdir / ".choragos" / "logs" / "crash.log").exists(), d.server_log()[-2000:]
    assert [s["pid"] for s in d.ls()] == list(d.server_pids)


def test_a_gate_in_a_small_terminal_shows_its_task_keys_and_that_more_is_below(deck):
    d: TmuxDeck = deck()
    d.tmux("resize-window", "-t", ":0", "-x", "50", "-y", "15")
    d.serve()
    d.wait_booted(ROLES)
    out = d.cli("delegate", "--to", "release", "--task", "Tag v9 and push it")
    assert "waiting for approval" in out.stdout, out.stderr
    screen = d.wait_screen("Approval needed: T1 for release")
    for shown in ("task   Tag v9 and push it", "↓ more below: ↓ PgDn", "y approve   n reject",
                  "v view   e edit   Esc later"):
        assert shown in screen, screen
    d.keys("y")
    d.wait_screen(lambda s: "Approval needed" not in s)

    def state() -> str:
        tasks = json.loads(d.cli("board", "--json").stdout).get("tasks", [])
        return tasks[0]["state"] if tasks else ""
    wait_until(lambda: state() in ("queued", "delivered", "done"), 20,
               message="T1 approved")
