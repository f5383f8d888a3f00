"""Screen classification against real Claude Code captures and generic screens.

The captures in tests/fixtures/screens/ are plain text of a 120x40 (or
80x24) pyte screen showing the real CLI; the file name says the state a
human sees on it: claude_<idle|working|waiting>_<detail>.txt.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from choragos.agents.profiles import AIDER, CLAUDE, CODEX, GEMINI, GENERIC, profile_for
from choragos.agents.screenstatus import (
    IDLE,
    WAITING,
    WORKING,
    activity_preview,
    classify,
    find_input_box,
    input_landed,
    input_pending,
    is_rule,
    squash,
)

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
STATES = (IDLE, WORKING, WAITING)
LONG = ("Read the file .choragos/worker-task-coder.md and do what it says; when done run "
        "choragos work-done exactly as the file instructs you to, with the id and a summary.")
WORDS = " ".join(f"word{i}" for i in range(200))
BRIEF_LINES = "\n".join(f"line {i} of a pasted brief" for i in range(40))
RULE = "─" * 80


def screen(name: str) -> list[str]:
    return (SCREENS / f"claude_{name}.txt").read_text().split("\n")


def captures() -> list[Path]:
    return sorted(p for p in SCREENS.glob("claude_*.txt") if p.stem.split("_")[1] in STATES)


def test_there_are_captures_of_every_state() -> None:
    seen = {p.stem.split("_")[1] for p in captures()}
    assert seen == set(STATES)


@pytest.mark.parametrize("path", captures(), ids=lambda p: p.stem)
def test_real_claude_screens_classify_as_captured(path: Path) -> None:
    expected = path.stem.split("_")[1]
    assert classify(path.read_text().split("\n"), CLAUDE) == expected


@pytest.mark.parametrize("path", captures(), ids=lambda p: p.stem)
def test_preview_never_shows_chrome(path: Path) -> None:
    preview = activity_preview(path.read_text().split("\n"), CLAUDE, max_lines=40)
    for line in preview:
        assert not is_rule(line)
        assert not any(m in line.lower() for m in CLAUDE.chrome_markers), line


def test_preview_of_a_permission_dialog_names_the_tool_call() -> None:
    preview = activity_preview(screen("waiting_bash"), CLAUDE)
    assert preview[-2].startswith("● Bash(echo hello-from-bash")
    assert preview[-1] == "⎿  Waiting…"


def test_untrusted_workspace_warning_reaches_the_preview() -> None:
    # A trusted *parent* folder skips the trust dialog but switches off the
    # workspace's allow rules; this warning is the operator's only hint.
    preview = activity_preview(screen("idle_untrusted_parent"), CLAUDE)
    assert preview[0].startswith("Ignoring 5 permissions.allow entries")


def test_preview_while_a_tool_runs() -> None:
    assert activity_preview(screen("working_tool"), CLAUDE) == [
        "❯ nap", "● Bash(sleep 3)", "⎿  Running…"]


def test_preview_skips_spinner_tips_and_welcome() -> None:
    assert activity_preview(screen("idle_boot"), CLAUDE) == []
    assert activity_preview(screen("working_stream"), CLAUDE)[-1] == (
        "● Here is a slow answer, streamed in pieces.")


def test_preview_respects_role_chrome_and_max_lines() -> None:
    lines = screen("idle_after_tool")
    assert activity_preview(lines, CLAUDE, max_lines=1) == ["● The command printed done-42."]
    assert activity_preview(lines, CLAUDE, extra_chrome=("printed done",), max_lines=1) == [
        "⎿  done-42"]
    assert activity_preview(lines, CLAUDE, max_lines=0) == []


def test_input_box_is_found_with_its_text() -> None:
    box = find_input_box(screen("idle_typed_wrapped"))
    assert box is not None and box.bottom == box.top + 3
    assert squash("".join(box.content)) == squash(LONG)
    assert find_input_box(screen("waiting_question")) is None


def test_typed_text_is_pending_until_enter_is_taken() -> None:
    assert input_pending(screen("idle_typed"), "hello world please say hi")
    assert not input_pending(screen("idle_reply"), "hello world please say hi")
    assert input_landed(screen("idle_reply"), "hello world please say hi")


def test_wrapped_text_and_swallowed_enter_are_pending() -> None:
    assert input_pending(screen("idle_typed_wrapped"), LONG)
    # Text and Enter in one write: the Enter became a newline in the box.
    assert input_pending(screen("idle_enter_swallowed"), LONG)


def test_paste_placeholder_counts_when_its_line_count_matches() -> None:
    assert input_pending(screen("idle_typed_placeholder"), WORDS)
    assert input_pending(screen("idle_typed_placeholder_lines"), BRIEF_LINES)
    assert not input_pending(screen("idle_typed_placeholder_lines"), "a\nb\nc")


def test_long_submitted_text_is_echoed_in_full() -> None:
    lines = screen("idle_after_placeholder")
    assert not input_pending(lines, WORDS)
    assert input_landed(lines, WORDS)


def test_text_that_never_arrived_has_not_landed() -> None:
    lines = screen("idle_reply")
    assert not input_landed(lines, "delegate the parser work to the coder")
    assert not input_landed(lines, "")
    assert not input_pending(screen("idle_boot"), "anything")


def test_waiting_screen_keeps_the_sent_message() -> None:
    assert input_landed(screen("waiting_bash"), "run it")
    assert not input_pending(screen("waiting_bash"), "run it")


def test_text_typed_while_working_is_queued_and_counts_as_taken() -> None:
    lines = screen("working_queued")
    queued = "Read the file .choragos/worker-task-coder.md now"
    assert classify(lines, CLAUDE) == WORKING
    assert input_landed(lines, queued) and not input_pending(lines, queued)
    assert activity_preview(lines, CLAUDE)[-1] == f"❯ {queued}"


def test_role_input_prompts_catch_a_question_above_the_box() -> None:
    lines = ["● I refactored the parser.", "", "● Shall I continue with the lexer?", "",
             RULE, "❯", RULE, "  ? for shortcuts"]
    assert classify(lines, CLAUDE) == IDLE
    assert classify(lines, CLAUDE, extra_input_prompts=("shall i continue",)) == WAITING


def test_busy_footer_wins_over_role_prompts() -> None:
    lines = ["● Shall I continue?", "✻ Thinking… (3s)", RULE, "❯", RULE,
             "  esc to interrupt"]
    assert classify(lines, CLAUDE, extra_input_prompts=("shall i",)) == WORKING


def test_older_claude_box_with_side_borders() -> None:
    top, bottom = "╭" + "─" * 60 + "╮", "╰" + "─" * 60 + "╯"
    lines = ["⏺ Done.", "", top, "│ > fix the tests" + " " * 44 + "│", bottom,
             "  ? for shortcuts"]
    assert classify(lines, CLAUDE) == IDLE
    assert input_pending(lines, "fix the tests")
    working = [*lines[:-1], "  ✻ Thinking… (esc to interrupt)"]
    assert classify(working, CLAUDE) == WORKING


def test_busy_marker_on_the_spinner_line_above_the_box_is_working() -> None:
    # Older versions print the hint on the spinner line, not in the footer.
    lines = screen("working_stream")
    spinner = next(i for i, line in enumerate(lines) if "Crunching" in line)
    footer = next(i for i, line in enumerate(lines) if "esc to interrupt" in line)
    lines[spinner] = "✽ Crunching… (3s · ↑ 11 tokens · esc to interrupt)"
    lines[footer] = "  ? for shortcuts"
    assert sum("esc to interrupt" in line for line in lines) == 1
    assert classify(lines, CLAUDE) == WORKING
    lines[spinner] = "✽ Crunched for 3s"
    assert classify(lines, CLAUDE) == IDLE


def test_claude_without_box_or_marker_is_waiting_on_something() -> None:
    # A full-screen picker or an unknown dialog: the box is gone.
    assert classify(["  Select a session to resume", "  > yesterday"], CLAUDE) == WAITING
    assert classify(["", ""], CLAUDE) == WORKING


def test_model_text_quoting_a_dialog_does_not_fool_the_box() -> None:
    lines = ["● The tool will ask: Do you want to proceed? Esc to cancel.", "",
             "✻ Baked for 2s", "", RULE, "❯", RULE, "  ? for shortcuts"]
    assert classify(lines, CLAUDE) == IDLE


# -- generic programs -----------------------------------------------------------------


def test_shell_prompt_is_idle_and_output_is_work() -> None:
    assert classify(["$ ls", "a  b  c", "user@host:~/w$"], GENERIC) == IDLE
    assert classify(["$ make", "cc -c main.c"], GENERIC) == WORKING
    assert classify(["$ make", "cc -c main.c", ""], GENERIC, cursor=(0, 2)) == WORKING


def test_shell_prompt_needs_the_cursor_when_given() -> None:
    lines = ["user@host:~$", "", ""]
    assert classify(lines, GENERIC, cursor=(13, 0)) == IDLE
    assert classify(lines, GENERIC, cursor=(0, 2)) == WORKING  # the live line is elsewhere
    assert classify(["bash-5.1#", "partial"], GENERIC, cursor=(0, 0)) == WORKING


def test_generic_questions_wait() -> None:
    assert classify(["Removing build/", "Overwrite config? [y/N]"], GENERIC) == WAITING
    assert classify(["[sudo] password for user:"], GENERIC) == WAITING
    assert classify(["ready.", "Deploy now (staging)"], GENERIC, ("deploy now",)) == WAITING


def test_generic_questions_only_count_on_the_last_lines() -> None:
    lines = ["Overwrite? [y/N] y", "copying", "copying", "copying", "$"]
    assert classify(lines, GENERIC) == IDLE


def test_generic_preview_drops_blank_and_role_chrome() -> None:
    lines = ["compiling", "", "== status bar ==", "linking", ""]
    assert activity_preview(lines, GENERIC, extra_chrome=("status bar",)) == [
        "compiling", "linking"]


def test_plain_prompt_input_pending() -> None:
    assert input_pending(["$ ls", "a b", "$ echo hello wor"], "echo hello wor")
    assert not input_pending(["$ ls", "a b", "$"], "echo hello")


def test_plain_prompt_uses_the_cursor_when_known() -> None:
    typed = ["agent> run the tests", ""]
    assert input_pending(typed, "run the tests", cursor=(20, 0))
    echoed = ["agent> run the tests", "you said: run the tests", "agent> "]
    assert not input_pending(echoed, "run the tests", cursor=(7, 2))
    assert input_landed(echoed, "run the tests", cursor=(7, 2))
    wrapped = ["agent> a long line that", "wraps here", ""]
    assert input_pending(wrapped, "a long line that wraps here", cursor=(10, 1))


@given(st.lists(st.text(max_size=130), max_size=45),
       st.sampled_from([CLAUDE, GENERIC, GEMINI, CODEX, AIDER]))
def test_any_screen_gets_a_status_and_a_short_preview(lines: list[str], profile) -> None:
    assert classify(lines, profile) in STATES
    assert len(activity_preview(lines, profile)) <= 3
    input_landed(lines, "some text")


# -- profiles -------------------------------------------------------------------------


@pytest.mark.parametrize("command,name", [
    ("claude", "claude"),
    ("/usr/local/bin/claude --model opus", "claude"),
    (".cache/claude/node_modules/.bin/claude", "claude"),
    ("claude.exe", "claude"),
    ("gemini", "gemini"),
    ("codex", "codex"),
    ("aider", "aider"),
    ("bash", "shell"),
    ("/bin/sh", "shell"),
    ("/bin/sh script.sh", "generic"),
    ("", "generic"),
])
def test_profile_for_picks_by_basename(command: str, name: str) -> None:
    assert profile_for(command).name == name


def test_role_markers_extend_a_profile() -> None:
    extended = CLAUDE.with_extras(("approve?",), ("my status line",))
    assert extended.input_prompts[-1] == "approve?"
    assert extended.chrome_markers[-1] == "my status line"
    assert CLAUDE.input_prompts[-1] != "approve?"


def test_claude_profile_carries_the_verified_input_facts() -> None:
    assert CLAUDE.verified and CLAUDE.needs_split_enter
    assert CLAUDE.enter_delay == 0.0 and CLAUDE.inline_input_limit == 800
    assert GEMINI.verified and CODEX.verified and not AIDER.verified


def test_an_answered_question_above_a_fresh_prompt_is_idle() -> None:
    answered = ["Do you want to proceed? (y/n) y", "agent> "]
    assert classify(answered, GENERIC, cursor=(7, 1)) == "idle"
    asking = ["agent> run", "Do you want to proceed? (y/n) "]
    assert classify(asking, GENERIC, cursor=(30, 1)) == "waiting"
    assert classify(["Overwrite? [y/n] >"], GENERIC, cursor=(18, 0)) == "waiting"
