"""The real Claude Code TUI's output, replayed into a choragos pane's terminal
with its fast paths on and off: what a reader sees must be the same.

The fast paths (rows kept as text while a TUI redraws them, runs of text
and colour as one token, log blocks) are proved against the cell-by-cell
emulation by property tests on synthetic streams; this one checks them on
the bytes a real agent CLI writes, booting, working, asking and answering.
"""

from __future__ import annotations

import pyte
import pytest

from choragos.agents.profiles import CLAUDE
from choragos.agents.screenstatus import IDLE, WAITING, activity_preview, classify
from choragos.terminal.emulator import Terminal as Pane
from choragos.terminal.vtcells import TextRow
from tests.e2e.claudeenv import Terminal
from tests.e2e.fakemodel import FakeModel, text, tool
from tests.e2e.test_claude_tui import StartClaude, approve, booted, status_is

pytestmark = [pytest.mark.claude, pytest.mark.timeout(90)]


def _replayed(chunks: list[bytes], fast: bool) -> tuple[object, ...]:
    scrolled: list[str] = []
    pane = Pane(120, 40, fast_path=fast, on_scrolled=scrolled.extend)
    for chunk in chunks:
        pane.feed(chunk)
    kept_as_text = sum(pane._screen.row(y).__class__ is TextRow for y in range(40))
    seen = (pane.display(), pane.history(), scrolled, pane.cursor, pane.render_rows(),
            pane.whole_display(), pane.errors)
    return seen, kept_as_text


def test_a_claude_session_shows_the_same_with_the_fast_paths_on_and_off(
        claude_tui: StartClaude, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks: list[bytes] = []
    feed = pyte.ByteStream.feed

    def recording(stream: pyte.ByteStream, data: bytes) -> None:
        chunks.append(bytes(data))  # as the PTY delivered them, in order
        feed(stream, data)

    monkeypatch.setattr(pyte.ByteStream, "feed", recording)
    fake_model.on("run the check", tool("Bash", {"command": "sh -c 'echo check-$((6*7))'",
                                                 "description": "Run the check"}))
    fake_model.on("check-42", text("The check printed 42, in \x1b[1mbold\x1b[0m words."),
                  delay=2)
    terminal: Terminal = booted(claude_tui)
    terminal.submit("run the check")
    terminal.wait_for(status_is(WAITING), 20, "the permission dialog")
    approve(terminal)
    terminal.wait_for(lambda ls: classify(ls, CLAUDE) == IDLE
                      and "The check printed 42" in "\n".join(activity_preview(ls, CLAUDE)),
                      30, "the final reply")
    with terminal._lock:
        recorded = list(chunks)
    (fast, kept_as_text), (slow, _) = _replayed(recorded, True), _replayed(recorded, False)
    assert fast == slow
    assert kept_as_text > 0  # the fast path did take part
    assert any("The check printed 42" in line for line in fast[0])
    assert fast[-1] == 0  # no input the emulator could not apply
