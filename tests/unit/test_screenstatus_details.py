"""Screen reading in detail: side borders, where the agent's area starts, a
box that is not finished, the plain-line CLIs' input area, which lines the
markers are looked in, and the line editor's wrapped text."""

from __future__ import annotations

from choragos.agents.profiles import CLAUDE, GEMINI, AgentProfile
from choragos.agents.screenstatus import (
    IDLE,
    WAITING,
    WORKING,
    activity_preview,
    agent_area_start,
    classify,
    find_input_box,
    input_landed,
    input_pending,
    is_rule,
    squash,
)
from tests.unit.test_screenstatus import RULE
from tests.unit.test_seat_profiles import screen as seat_screen

# -- side borders -----------------------------------------------------------------


def test_a_border_on_one_side_only_is_dropped() -> None:
    lines = ["● Done.", RULE, "│ > fix the tests", "  and the docs  │", RULE]
    box = find_input_box(lines)
    assert box is not None and box.content == (" fix the tests", "and the docs")
    assert activity_preview(["│ left only", "right only │", "│ │ nested │ │"], AgentProfile(
        "plain")) == ["left only", "right only", "nested"]
    assert activity_preview(["│Xenon lamp│"], AgentProfile("plain")) == ["Xenon lamp"]


def test_a_rule_is_twenty_rule_characters_of_any_kind() -> None:
    assert is_rule("─" * 20) and not is_rule("─" * 19)
    assert is_rule("─━═╭╮╰╯" * 3)


# -- where the agent's own area starts -------------------------------------------------


def test_a_rule_on_the_last_line_starts_the_agent_area() -> None:
    assert agent_area_start(["● Done.", "text", RULE]) == 2


def test_without_any_entry_the_topmost_rule_starts_the_agent_area() -> None:
    assert agent_area_start([RULE, "❯", RULE]) == 0
    assert agent_area_start(["● Done.", RULE, "❯", RULE, "  • not an entry, indented"]) == 1


# -- a box that is not (yet) complete --------------------------------------------------


def test_a_rule_on_the_last_line_is_no_box() -> None:
    assert find_input_box(["● Done.", RULE]) is None


def test_a_box_without_its_bottom_rule_is_no_box() -> None:
    assert find_input_box(["● Done.", RULE, "❯ typed", "  more"]) is None


def test_a_profile_reads_the_box_with_its_own_prompt_glyphs() -> None:
    guillemet = AgentProfile("boxed", box_prompts=("»",), unmatched_status=WAITING)
    lines = ["● Done.", RULE, "» ", RULE]
    assert classify(lines, guillemet) == IDLE  # read as its box, not as an unknown screen
    assert input_pending(["● Done.", RULE, "» hello", RULE], "hello", prompts=("»",))
    # Told there is no box, a boxed-looking screen is a line editor's.
    assert not input_pending(["● Done.", RULE, "❯ hello", RULE], "hello", prompts=())


# -- a plain-line CLI's input area -------------------------------------------------------


def _gemini_reply(text: str) -> list[str]:
    lines = seat_screen("gemini_idle_reply")
    reply = next(i for i, line in enumerate(lines) if line.startswith("✦ Hi!"))
    lines[reply] = f"✦ {text}"
    return lines


def test_model_text_quoting_a_question_above_gemini_input_area_is_idle() -> None:
    lines = _gemini_reply("The tool would ask: Do you want to proceed?")
    assert classify(lines, GEMINI) == IDLE


def test_role_prompts_above_gemini_input_area_are_waiting() -> None:
    lines = _gemini_reply("Shall I push the branch?")
    assert classify(lines, GEMINI) == IDLE
    assert classify(lines, GEMINI, extra_input_prompts=("shall i push",)) == WAITING


def test_claude_footer_without_its_box_is_no_input_area() -> None:
    # A dialog replaced the box; the footer's idle marker does not make it idle.
    lines = ["● Shall I run it?", RULE, "  Do you want to proceed?", "  1. Yes", RULE,
             "  ? for shortcuts"]
    assert classify(lines, CLAUDE) == WAITING


def test_a_line_prompt_programs_idle_marker_is_no_input_area() -> None:
    repl = AgentProfile("repl", idle_markers=("ready",), line_prompt_ends=(">",))
    assert classify(["ready", "Overwrite config? [y/N]"], repl) == WAITING


# -- which lines markers are looked in ----------------------------------------------------


def test_claude_without_a_box_reads_markers_below_the_last_entry_only() -> None:
    lines = ["● Press esc to interrupt me, I said.", RULE, "  Pick a session", RULE]
    assert classify(lines, CLAUDE) == WAITING  # the busy words are the model's, above


def test_a_profile_without_a_tail_reads_the_whole_screen_rules_or_not() -> None:
    plain = AgentProfile("plain", busy_markers=("compiling",), unmatched_status=IDLE)
    assert classify(["compiling main.c", "─" * 30, "warning: unused"], plain) == WORKING


# -- the preview -------------------------------------------------------------------------


def test_an_indented_glyph_below_the_box_is_no_transcript_entry() -> None:
    lines = ["● Done.", RULE, "❯ ", RULE, "  • footer item"]
    assert activity_preview(lines, CLAUDE) == ["● Done."]


def test_dashed_separators_are_not_activity() -> None:
    lines = ["text", "╌╌╌╌", "┄┄┄┄", "----", "-┄╌-"]
    assert activity_preview(lines, AgentProfile("plain"), max_lines=9) == ["text"]


# -- what counts as typed or sent ----------------------------------------------------------


def test_text_shown_only_below_the_box_has_not_landed() -> None:
    lines = ["● Done.", RULE, "❯ ", RULE, "  • sent: hello there"]
    assert not input_landed(lines, "hello there")
    mine = ["● Done.", RULE, "» ", RULE, "  sent: hello there"]
    assert not input_landed(mine, "hello there", prompts=("»",))


def test_a_paste_placeholder_at_the_cursor_has_landed() -> None:
    line = "> [Pasted Text: 500 chars]"
    assert input_landed(["output", line, ""], "x" * 500, prompts=(), cursor=(len(line), 1))


def test_a_long_text_counts_only_with_its_last_160_characters() -> None:
    text = "".join(f"{i:03d}" for i in range(100))  # 300 characters, all distinct runs
    assert input_landed(["sent:", text[-160:]], text)
    assert not input_landed(["sent:", text[-150:]], text)


def test_placeholder_lines_ignore_outer_line_ends_of_any_kind() -> None:
    box = ["● Done.", RULE, "❯ [Pasted text #1 +2 lines]", RULE]
    assert input_pending(box, "one\ntwo\nthree\r\n")
    assert input_pending(box, "one\ntwo\nthree\r")
    assert input_pending(box, "X\nmiddle\nX")


def test_a_line_editor_text_wrapped_over_the_last_lines_is_pending() -> None:
    lines = ["$ ls", "a b", "$ echo hello", "world again"]
    assert input_pending(lines, "echo hello world again", prompts=())
    # The last line is as long as the text, but holds only part of it.
    assert input_pending(["$ ec", "hoXY"], "echo", prompts=())


def test_squash_drops_escapes_and_borders() -> None:
    assert squash("│ a\x1bb │ c") == "abc"


def test_a_preview_compiles_its_chrome_patterns_once_per_screen(monkeypatch) -> None:
    """Counted: a role's preview is read at every change of its view, and
    each line compiled (looked up) every chrome pattern again and lowered
    every chrome marker (Codex's idle screen: 95 compiles for one preview);
    now once per screen, with the same preview."""
    import re

    from choragos.agents.profiles import CODEX

    lines = seat_screen("codex_idle_boot")
    expected = activity_preview(lines, CODEX)
    compiled = 0
    real = re.compile

    def counted(*args, **kwargs):
        nonlocal compiled
        compiled += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(re, "compile", counted)
    assert activity_preview(lines, CODEX) == expected
    assert compiled == len(CODEX.chrome_patterns), compiled


def test_a_preview_looks_at_the_last_lines_only(monkeypatch) -> None:
    """Counted: a preview asked about every line above the input area, so a
    screen filled by a long conversation cost more at every change of the
    role's view than a sparse one; it now looks up from the bottom and stops
    at its last meaningful lines.  The previews are the same."""
    from choragos.agents import screenstatus
    from tests.unit.test_seat_profiles import BY_CLI, SCREENS

    asked = 0
    real = screenstatus._meaningful

    def counted(line, chrome):
        nonlocal asked
        asked += 1
        return real(line, chrome)

    conversation = [f"• line {i} of an earlier answer" for i in range(60)]
    checked = 0
    for path in sorted(SCREENS.glob("*_*.txt")):
        profile = BY_CLI.get(path.stem.split("_")[0])
        lines = path.read_text().split("\n")
        if profile is None or len(activity_preview(lines, profile)) < 3:
            continue
        expected = activity_preview(lines, profile)
        monkeypatch.setattr(screenstatus, "_meaningful", counted)
        asked = 0
        assert activity_preview(conversation + lines, profile) == expected, path.name
        monkeypatch.setattr(screenstatus, "_meaningful", real)
        assert asked < len(lines), (path.name, asked)
        checked += 1
    assert checked >= 10
