"""Durable sessions through the real deck: stop → resume and handoff → resume.

The deck is attached in tmux; after each resume the layout, the board and
the pending gate must be as they were, seen the way a person sees them.
"""

from __future__ import annotations

import json

import pytest

from tests.deck.conftest import TmuxDeck
from tests.deck.test_deck_tmux import shown
from tests.integration.harness import role_toml

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TEAM = (role_toml("orchestrator", "--handoff", start=True) + role_toml("coder", "--worker")
        + role_toml("release", "--worker", approve=True)
        + "\n[ui]\nauto_focus = false\n")


def board(d: TmuxDeck) -> dict[str, str]:
    out = d.cli("board", "--json")
    return {t["id"]: t["state"] for t in json.loads(out.stdout)["tasks"]}


def resume(d: TmuxDeck) -> str:
    """Resume; the deck's first frame tells what was resumed, and Enter closes that."""
    d.shell("choragos serve --resume")
    screen = d.wait_screen(lambda s: "C-b ? help" in s and "Start notices" in s, 30)
    d.server_pids.add(d.ls()[0]["pid"])
    d.keys("Enter")
    d.wait_screen(lambda s: "Start notices" not in s)
    return screen


def test_stop_and_handoff_each_resume_with_layout_board_and_gate(deck):
    d: TmuxDeck = deck(TEAM)
    d.serve()
    d.wait_booted(["orchestrator", "coder", "release"])
    d.cli("delegate", "--to", "coder", "--task", "Add retry with jitter")
    d.wait_screen(lambda s: board(d).get("T1") == "done")
    d.cli("delegate", "--to", "release", "--task", "Tag v9")
    d.wait_screen("Approval needed: T2 for release")
    d.keys("Escape")
    d.wait_screen(lambda s: "Approval needed" not in s)
    d.keys("C-b", "l")  # focus coder, then hide its pane
    d.wait_screen(lambda s: "▸ coder" in s.splitlines()[-1])
    d.keys("C-b", "x")
    d.wait_screen(lambda s: shown(s) == {"orchestrator", "release"})

    # a clean stop, then resume: the same layout, board and pending gate
    assert d.cli("shutdown").returncode == 0
    d.wait_screen(lambda s: "ended]" in s and not d.sock.exists(), 30)
    screen = resume(d)
    assert "resuming the session that ran as pid" in screen and " died at " not in screen
    d.wait_screen(lambda s: shown(s) == {"orchestrator", "release"}
                  and "1 gate waiting" in s.splitlines()[-1])
    assert board(d) == {"T1": "done", "T2": "gated"}

    # a handoff, then resume: the same again, and the new orchestrator is told
    out = d.cli("handoff", "--wait", "20")
    assert out.returncode == 0 and "wrote .choragos/handoff.md" in out.stdout, out.stderr
    d.wait_screen(lambda s: s.count("ended]") == 2 and not d.sock.exists(), 30)
    resume(d)
    d.wait_screen(lambda s: shown(s) == {"orchestrator", "release"}
                  and "1 gate waiting" in s.splitlines()[-1])
    assert board(d) == {"T1": "done", "T2": "gated"}
    brief = (d.workdir / ".choragos" / "briefs" / "orchestrator.md").read_text()
    assert "This session was resumed" in brief and "Goal: the fixture goal." in brief
    d.wait_screen("Approval needed: T2 for release")
    d.keys("y")  # a restored gate decides like a live one
    d.wait_screen(lambda s: board(d).get("T2") == "done", 30)
