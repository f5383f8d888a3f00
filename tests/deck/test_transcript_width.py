"""A transcript holds each line as the program wrote it, whatever the tile:
a line printed in a wide (zoomed) pane stays whole in ``.choragos/logs/<role>.log``
after the pane narrows again (the real deck in tmux, a real agent)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

LINE = "wide-" + "".join(chr(ord("a") + n % 26) for n in range(95))  # 100 columns


def test_a_wide_line_is_whole_in_the_transcript_after_the_pane_narrows(deck):
    d: TmuxDeck = deck()
    d.serve()
    d.wait_booted(["orchestrator", "coder", "release"])
    d.keys("C-b", "z")  # the orchestrator alone, 160 columns wide
    d.wait_screen(lambda s: "ZOOM" in s)
    d.type(LINE)
    d.wait_screen(LINE)
    d.keys("Enter")
    d.wait_screen(f"you said: {LINE}")
    d.keys("C-b", "z")  # back to three panes: the orchestrator's is ~60 columns
    screen = d.wait_screen(lambda s: "ZOOM" not in s and "you said: wide-" in s)
    widths = [len(m) for m in re.findall(r"you said: wide-[a-z]*", screen)]
    assert widths and max(widths) < 70  # the pane shows what fits, nothing wraps in
    # the deck stops: the screen's last lines are flushed into the transcript
    assert d.cli("shutdown").returncode == 0
    transcript = d.workdir / ".choragos" / "logs" / "orchestrator.log"
    wait_until(lambda: transcript.exists() and f"you said: {LINE}" in transcript.read_text(),
               20, message="the whole line in the transcript")
    assert f"agent> {LINE}" in transcript.read_text()
