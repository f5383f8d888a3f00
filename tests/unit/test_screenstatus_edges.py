"""Screen reading at its edges: what counts as near the input box, paste
placeholders with odd line endings, and a line editor's text at the cursor."""

from __future__ import annotations

from choragos.agents.profiles import CLAUDE
from choragos.agents.screenstatus import IDLE, WAITING, WORKING, classify, input_pending

RULE = "─" * 80


def boxed(above: list[str], typed: str = "", footer: str = "  ? for shortcuts") -> list[str]:
    return [*above, RULE, f"❯ {typed}", RULE, footer]


def test_only_the_three_lines_above_the_box_can_say_busy() -> None:
    spinner = "✻ Thinking… (esc to interrupt)"
    assert classify(boxed([spinner, "a", "", "b"]), CLAUDE) == WORKING
    assert classify(boxed([spinner, "a", "b", "c"]), CLAUDE) == IDLE  # four lines up


def test_words_typed_into_the_box_are_not_a_busy_marker() -> None:
    assert classify(boxed(["● Done."], typed="esc to interrupt"), CLAUDE) == IDLE


def test_role_markers_count_only_when_the_screen_shows_them() -> None:
    lines = boxed(["● All tests pass."])
    assert classify(lines, CLAUDE, extra_input_prompts=("shall i",)) == IDLE
    asking = boxed(["● Shall I push?"])
    assert classify(asking, CLAUDE, extra_input_prompts=("shall i",)) == WAITING


def test_a_placeholder_counts_the_text_lines_whatever_their_endings() -> None:
    lines = boxed(["● Done."], typed="[Pasted text #1 +2 lines]")
    assert input_pending(lines, "one\r\ntwo\rthree")
    assert input_pending(lines, "\none\ntwo\nthree\n\n")  # outer newlines do not count
    assert not input_pending(lines, "one\ntwo\nthree\n ")  # a blank last line does
    assert input_pending(boxed(["● Done."], typed="[Pasted text #1 +3 lines]"),
                         "one\ntwo\nthree\n ")


def test_a_placeholder_wrapped_over_two_box_lines_is_found() -> None:
    lines = ["● Done.", RULE, "❯ [Pasted text #1", "  +2 lines]", RULE, "  ? for shortcuts"]
    assert input_pending(lines, "a\nb\nc")


def test_a_line_editor_text_wrapped_up_to_the_cursor_is_pending() -> None:
    lines = ["$ echo the", "quick brown", "fox jumps", ""]
    assert input_pending(lines, "echo thequick brownfox jumps", prompts=(), cursor=(9, 2))
    assert not input_pending(lines, "echo thequick brownfox jumps", prompts=(),
                             cursor=(3, 2))


def test_a_cursor_off_the_screen_holds_nothing() -> None:
    lines = ["$ typed", ""]
    assert not input_pending(lines, "typed", prompts=(), cursor=(7, 2))
    assert not input_pending(lines, "typed", prompts=(), cursor=(7, -1))
    assert input_pending(lines, "typed", prompts=(), cursor=(7, 0))
