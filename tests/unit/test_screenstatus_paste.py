"""Typed input and long pastes: a line editor that shows a paste as
"[Pasted Text: N chars]" (Gemini CLI) or "[Pasted Content N chars]" (Codex
CLI) counts it as the text pending when N is within
2 + 2 % of the text's length (the CLI counts UTF-16 units), and text
pending in the box has reached the agent."""

from __future__ import annotations

import pytest

from choragos.agents.screenstatus import input_landed, input_pending
from tests.unit.test_screenstatus import screen

TEXT = "x" * 500  # slack: 2 + 500 // 50 = 12


def pasted(count: int, row: int = 0) -> tuple[list[str], tuple[int, int]]:
    line = f"> [Pasted Text: {count} chars]"
    lines = ["some output"] * row + [line, ""]
    return lines, (len(line), row)


@pytest.mark.parametrize("count, pending", [
    (500, True), (512, True), (488, True),  # within the slack
    (513, False), (487, False),  # just past it
])
def test_a_paste_counts_when_its_size_is_close_enough(count: int, pending: bool) -> None:
    lines, cursor = pasted(count, row=2)
    assert input_pending(lines, TEXT, cursor=cursor) is pending


def test_the_slack_grows_with_the_text() -> None:
    lines, cursor = pasted(104)  # 100 characters: 2 + 100 // 50 = 4
    assert input_pending(lines, "y" * 100, cursor=cursor)
    lines, cursor = pasted(105)
    assert not input_pending(lines, "y" * 100, cursor=cursor)


@pytest.mark.parametrize("count, pending", [(1234, True), (1300, False)])
def test_codex_shows_a_long_paste_by_its_size(count: int, pending: bool) -> None:
    """Without it a long report typed into Codex never showed, and was typed twice."""
    line = f"› [Pasted Content {count} chars]"
    assert input_pending(["some output", line, ""], "z" * 1234,
                         cursor=(len(line), 1)) is pending


def test_a_paste_on_the_top_line_counts() -> None:
    lines, cursor = pasted(500, row=0)
    assert input_pending(lines, TEXT, cursor=cursor)


def test_a_paste_away_from_the_cursor_does_not_count() -> None:
    lines, (column, _) = pasted(500, row=0)
    assert not input_pending(lines, TEXT, cursor=(column, 1))
    assert not input_pending(lines, TEXT, cursor=(column, 5))  # below the screen


def test_text_pending_in_the_box_has_landed() -> None:
    assert input_landed(screen("idle_typed"), "hello world please say hi")
