"""What `choragos serve` says as it starts reaches the deck (tmux, 80x24).

Its stderr lines come just before the deck's alternate screen hides them: a
previous session's state kept aside must be told on the deck's first frame,
read whole, closed by a key, and not told again on the next attach.
"""

from __future__ import annotations

import json

import pytest

from tests.deck.conftest import TmuxDeck

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

TITLE = "Start notices"


def status(screen: str) -> str:
    return screen.splitlines()[-1] if screen.strip() else ""


def dialog_text(screen: str) -> str:
    """The dialog's rows (between its side borders) as one line of words."""
    rows = [line.split("│")[1] for line in screen.splitlines() if line.count("│") >= 2]
    return " ".join(" ".join(rows).split())


def kept_notice(d: TmuxDeck) -> str:
    events = (d.workdir / ".choragos" / "logs" / "events.jsonl").read_text().splitlines()
    said = [json.loads(line) for line in events if '"session state"' in line]
    assert said, "the event log has no kept-aside notice"
    return said[-1]["message"]


def attach(d: TmuxDeck) -> str:
    d.shell("choragos attach")
    return d.wait_screen(lambda s: "C-b ? help" in status(s), 20)


def detach(d: TmuxDeck) -> None:
    d.keys("C-b", "d")
    d.wait_screen("[detached from", 20)


def test_a_state_kept_aside_is_told_in_the_deck_once_and_a_plain_start_tells_nothing(deck):
    d: TmuxDeck = deck()
    d.tmux("resize-window", "-t", ":0", "-x", "80", "-y", "24")
    d.serve()
    d.wait_booted(["orchestrator"])
    assert TITLE not in d.screen()  # a first start has nothing to say
    d.delegate_gated("release", "Tag v9")  # an open task, so the state is kept
    d.keys("Escape")
    d.wait_screen(lambda s: "Approval needed" not in s)
    assert d.cli("shutdown").returncode == 0
    d.wait_screen(lambda s: "ended]" in s and not d.sock.exists(), 30)
    d.keys("clear", "Enter")

    d.serve()
    screen = d.wait_screen(TITLE)
    notice = kept_notice(d)
    assert notice.startswith("a previous session's state (1 task, 1 open) was kept in ")
    # The whole sentence, with the way to resume it, on the 80x24 screen.
    assert " ".join(notice.split()) in dialog_text(screen), screen
    assert "↓ more below" not in screen and "Enter / Esc close" in screen
    d.type("zz")  # keys while it is open are the dialog's, never the agent's
    d.keys("Enter")
    d.wait_screen(lambda s: TITLE not in s)
    assert not any("zz" in text for text in d.submitted("orchestrator"))
    # The terminal keeps what the start said on stderr once the deck leaves it.
    detach(d)
    assert f"choragos: {notice[:60]}" in d.screen().replace("\n", "")
    d.keys("clear", "Enter")
    # Read: the next attach does not tell it again.
    screen = attach(d)
    d.wait_booted(["orchestrator"])
    assert TITLE not in d.screen()
