"""Dialogs stay current while open: the gate's waiting time counts, the
board shows a decision the moment it is made (the real deck, in tmux)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

ROLES = ["orchestrator", "coder", "release"]


def test_the_gate_dialog_counts_and_the_board_follows_a_decision(deck):
    d: TmuxDeck = deck()
    d.serve()
    d.wait_booted(ROLES)
    assert "Approval needed: T1 for release" in d.delegate_gated("release", "Tag v9")
    # no key pressed: the waiting time keeps counting on its own
    d.wait_screen(lambda s: re.search(r"\(waiting [2-9]s; 1 of 1\)", s), 10)
    d.keys("Escape")
    d.wait_screen(lambda s: "Approval needed" not in s)

    d.keys("C-b", "t")
    d.wait_screen(lambda s: re.search(r"T1\s+release\s+gated", s))
    d.keys("y")  # approve from the board, which stays open
    screen = d.wait_screen(lambda s: re.search(r"T1\s+release\s+(queued|delivered|done)", s))
    assert "Task board (1)" in screen
    # a task delegated while the board is open appears in it
    d.cli("delegate", "--to", "coder", "--task", "Write the changelog")
    screen = d.wait_screen(lambda s: re.search(r"T2\s+coder\s+\w+", s))
    assert "Task board (2)" in screen
    wait_until(lambda: any("T1 exit=0" in r["text"] for r in d.agents("work-done", "release")),
               20, message="release to do T1")
    d.wait_screen(lambda s: re.search(r"T1\s+release\s+done", s))
    d.keys("h")  # the session's report page, written from the board
    d.wait_screen("report.html: open it in a browser")
    page = (d.workdir / ".choragos" / "report.html").read_text()
    assert '<svg id="timeline"' in page and 'data-task="T1"' in page


def test_inside_tmux_the_deck_says_once_how_to_change_the_prefix(deck):
    d: TmuxDeck = deck()
    d.serve()
    screen = d.wait_screen("inside tmux: C-b is tmux's prefix too")
    assert 'set [keys] prefix = "ctrl+a"' in screen.splitlines()[-1]
    d.wait_screen(lambda s: "tmux's prefix" not in s, 30)  # a status message, it fades
    d.keys("C-b", "d")
    d.wait_screen("[detached from")
    d.shell("clear; choragos attach")
    screen = d.wait_screen("C-b ? help", 30)
    assert "tmux's prefix" not in screen  # once a session, not at every attach


def test_a_prefix_set_in_the_users_own_file_drives_the_deck(deck):
    d: TmuxDeck = deck()
    config = d.root / "xdg" / "choragos"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[keys]\nprefix = "ctrl+a"\n')
    d.shell(f"export XDG_CONFIG_HOME={d.root / 'xdg'}")
    d.shell("choragos serve")
    d.wait_screen("C-a ? help", 30)
    d.keys("C-a", "t")
    d.wait_screen("Task board")
