"""``NO_COLOR``: the deck draws without colour for a client that sets it
(the real deck in tmux, read back with its attributes)."""

from __future__ import annotations

import re

import pytest

from tests.deck.conftest import TmuxDeck

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")


def colours(screen: str) -> set[str]:
    """The colour parameters of every SGR sequence on screen."""
    found = set()
    for params in _SGR.findall(screen):
        codes = [p for p in re.split(r"[;:]", params) if p]
        for i, code in enumerate(codes):
            n = int(code)
            colour = n in (38, 48) or 30 <= n <= 37 or 40 <= n <= 47 or 90 <= n <= 107
            # a number right after 38;5 or 48;2 is a colour's value, not a code
            if colour and (i == 0 or int(codes[i - 1]) not in (38, 48, 5, 2)):
                found.add(code)
    return found


def test_no_color_draws_the_deck_in_one_colour(deck):
    d: TmuxDeck = deck()
    d.shell("NO_COLOR=1 choragos serve")
    d.wait_screen("C-b ? help", 30)
    d.server_pids.add(d.ls()[0]["pid"])
    d.wait_booted(["orchestrator", "coder", "release"])
    d.keys("C-b", "t")  # the board: a dialog with a selected row and a border
    d.wait_screen("Task board")
    plain = d.tmux("capture-pane", "-p", "-e", "-t", ":0").stdout
    assert "Task board" in plain and colours(plain) == set(), colours(plain)
    assert "\x1b[" in plain  # emphasis (bold, reverse) is still drawn
    d.keys("Escape")
    d.wait_screen(lambda s: "Task board" not in s)
    d.keys("C-b", "d")
    d.wait_screen("[detached from")
    d.shell("clear; choragos attach")  # the same deck, for a client without NO_COLOR
    d.wait_screen("C-b ? help", 30)
    d.keys("C-b", "t")
    d.wait_screen("Task board")
    coloured = d.tmux("capture-pane", "-p", "-e", "-t", ":0").stdout
    assert colours(coloured), "a client without NO_COLOR gets colour"
