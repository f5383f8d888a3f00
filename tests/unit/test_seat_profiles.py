"""Gemini CLI and Codex CLI screens, the every-seat question rule, wrappers.

The captures in tests/fixtures/screens/{gemini,codex}_<state>_<detail>.txt
are 120x40 screens of Gemini CLI 0.61.0 and Codex CLI 0.171.0 run in a PTY
against the fake servers (tests/e2e/fakegemini.py, fakeopenai.py); the state
in the file name is what a person sees on that screen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.agents.profiles import (
    CLAUDE,
    CODEX,
    GEMINI,
    GENERIC,
    PROFILES,
    AgentProfile,
    profile_for,
    profile_named,
    question_markers,
    typed_form,
)
from choragos.agents.screenstatus import (
    IDLE,
    WAITING,
    WORKING,
    activity_preview,
    classify,
    has_marker,
    input_pending,
    shows_question,
)
from choragos.agents.wrappers import program_names

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
STATES = (IDLE, WORKING, WAITING)
BY_CLI = {"gemini": GEMINI, "codex": CODEX, "claude": CLAUDE}


def screen(name: str) -> list[str]:
    return (SCREENS / f"{name}.txt").read_text().split("\n")


def captures(*clis: str) -> list[Path]:
    return sorted(p for cli in clis for p in SCREENS.glob(f"{cli}_*.txt")
                  if p.stem.split("_")[1] in STATES)


def test_each_cli_has_captures_of_every_state() -> None:
    for cli in ("gemini", "codex"):
        assert {p.stem.split("_")[1] for p in captures(cli)} == set(STATES), cli


@pytest.mark.parametrize("path", captures("gemini", "codex"), ids=lambda p: p.stem)
def test_real_screens_classify_as_captured(path: Path) -> None:
    profile = BY_CLI[path.stem.split("_")[0]]
    assert classify(path.read_text().split("\n"), profile) == path.stem.split("_")[1]


@pytest.mark.parametrize("path", captures("gemini", "codex"), ids=lambda p: p.stem)
def test_preview_never_shows_chrome_or_borders(path: Path) -> None:
    profile = BY_CLI[path.stem.split("_")[0]]
    for line in activity_preview(path.read_text().split("\n"), profile, max_lines=40):
        assert not has_marker([line], profile.chrome_markers), line
        assert not line.startswith("│") and not line.endswith("│"), line
        assert set(line) - set("▀▄ "), line


# -- what each CLI's screens say ---------------------------------------------------


def test_gemini_placeholder_stays_while_it_works_the_spinner_decides() -> None:
    working = screen("gemini_working_thinking")
    assert any("Type your message" in line for line in working)
    assert classify(working, GEMINI) == WORKING
    assert classify(screen("gemini_idle_reply"), GEMINI) == IDLE


def test_reply_glyphs_reach_the_preview() -> None:
    assert activity_preview(screen("gemini_idle_reply"), GEMINI) == [
        "> hello", "✦ Hi! I am the fake Gemini."]
    assert activity_preview(screen("codex_idle_reply"), CODEX) == ["› hello there", "• ok"]
    tool = activity_preview(screen("gemini_working_after_approval"), GEMINI)
    assert tool[0] == "✓  Shell sh -c 'echo needs-42'" and tool[-1].startswith("✦ ")


def test_dialogs_show_their_options_in_the_preview() -> None:
    assert activity_preview(screen("gemini_waiting_shell"), GEMINI)[0] == "● 1. Allow once"
    assert activity_preview(screen("codex_waiting_trust"), CODEX)[0] == "› 1. Trust and continue"


def test_codex_text_in_the_composer_is_never_a_question() -> None:
    # With text typed the composer has no hint left; quiet then means idle.
    for name in ("codex_typed_long", "codex_typed_enter_swallowed"):
        assert classify(screen(name), CODEX) == WORKING
        assert not shows_question(screen(name))


def test_codex_draws_an_idle_composer_before_its_startup_dialogs() -> None:
    early = screen("codex_idle_boot_early")
    assert classify(early, CODEX) == IDLE
    assert not has_marker(early, CODEX.boot_markers)  # so the brief waits
    assert has_marker(screen("codex_idle_boot"), CODEX.boot_markers)
    assert not has_marker(screen("codex_waiting_trust"), CODEX.boot_markers)


def test_gemini_is_ready_for_its_brief_only_once_its_prompt_is_drawn() -> None:
    assert classify(screen("gemini_working_never_drawn"), GEMINI) == WORKING
    assert not has_marker(screen("gemini_working_never_drawn"), GEMINI.boot_markers)
    assert has_marker(screen("gemini_idle_boot"), GEMINI.boot_markers)


def test_gemini_typed_text_and_its_paste_placeholder_are_pending() -> None:
    typed = screen("gemini_idle_typed")
    row = next(i for i, line in enumerate(typed) if line.startswith(" > hello"))
    assert input_pending(typed, "hello", GEMINI.box_prompts, cursor=(8, row))
    assert not input_pending(screen("gemini_idle_reply"), "hello", GEMINI.box_prompts,
                             cursor=(3, 22))
    pasted = screen("gemini_idle_paste_placeholder")
    row = next(i for i, line in enumerate(pasted) if "[Pasted Text: 999 chars]" in line)
    text = " ".join(["word"] * 200)
    assert input_pending(pasted, text, GEMINI.box_prompts, cursor=(27, row))
    assert not input_pending(pasted, text + " and much more" * 20, GEMINI.box_prompts,
                             cursor=(27, row))


# -- the one safety rule -----------------------------------------------------------


@pytest.mark.parametrize("name", [
    "gemini_waiting_shell", "gemini_waiting_trust", "gemini_waiting_auth",
    "codex_waiting_exec", "codex_waiting_trust", "codex_waiting_signin",
    "claude_waiting_bash", "claude_waiting_trust", "claude_waiting_apikey",
])
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_profile_reads_every_clis_dialogs_as_waiting(name: str,
                                                            profile: AgentProfile) -> None:
    assert classify(screen(name), profile) == WAITING


@pytest.mark.parametrize("lines", [
    ["│ Allow execution of [Shell]?", "│", "│ ● 1. Allow once", "│   2. No"],
    ["  Trust this folder?", "› 1. Trust and continue", "  2. Back"],
    ["Do you want to proceed?", "❯ 1. Yes", "  2. No"],
    ["  Choose how you want to use Codex.", "> 1. Sign in with ChatGPT"],
    ["Overwrite the file? [y/n]"],
    ["Continue? (yes/no)"],
])
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_a_question_or_menu_in_any_clis_words_is_waiting(lines: list[str],
                                                         profile: AgentProfile) -> None:
    assert classify(["some output", *lines], profile) == WAITING


def test_question_markers_are_the_union_minus_busy_words() -> None:
    markers = question_markers()
    for profile in PROFILES:
        assert set(profile.input_prompts) - {"esc to cancel"} <= set(markers), profile.name
    # Gemini says "(esc to cancel, 2s)" while it works: never a question.
    assert "esc to cancel" not in markers


def test_a_question_scrolled_well_above_the_prompt_does_not_count() -> None:
    lines = ["Do you want to proceed? (y/n) y", *[f"output {i}" for i in range(12)], "$ "]
    assert classify(lines, GENERIC, cursor=(2, len(lines) - 1)) == IDLE


def test_a_never_drawn_screen_is_never_idle() -> None:
    for profile in PROFILES:
        assert classify([""] * 40, profile) == WORKING


# -- choosing the profile ----------------------------------------------------------


@pytest.mark.parametrize(("command", "args", "name"), [
    ("claude", (), "claude"),
    ("/opt/bin/gemini", (), "gemini"),
    ("env", ("FOO=1", "-u", "BAR", "claude"), "claude"),
    ("npx", ("-y", "@google/gemini-cli@0.61.0"), "gemini"),
    ("npx", ("@openai/codex",), "codex"),
    ("npx", ("-p", "@anthropic-ai/claude-code", "claude"), "claude"),
    ("uvx", ("--from", "aider-chat", "aider"), "aider"),
    ("uvx", ("aider-chat",), "aider"),
    ("ssh", ("-p", "2222", "-i", "key", "build-box", "claude", "--resume"), "claude"),
    ("ssh", ("build-box", "cd /w && codex --full-auto"), "codex"),
    ("sh", ("-c", "exec gemini"), "gemini"),
    ("bash", ("-lc", "cd src; codex"), "codex"),
    ("node", ("/usr/lib/node_modules/@google/gemini-cli/dist/index.js",), "gemini"),
    ("node", ("--no-warnings", "/x/@anthropic-ai/claude-code/cli.js"), "claude"),
    ("timeout", ("30m", "nice", "-n", "5", "codex"), "codex"),
    ("python3", ("-m", "aider"), "aider"),
    ("python3", ("/home/u/claude/agent.py",), "generic"),
    ("bash", (), "shell"),
    ("env", ("FOO=1",), "generic"),
    ("bash", ("--norc", "--noprofile", "-o", "vi"), "shell"),
    ("env", ("TERM=dumb", "/bin/sh", "-i"), "shell"),
    ("zsh", ("-l",), "zsh"),
    ("fish", (), "shell"),
    ("bash", ("run.sh",), "generic"),
    ("sh", ("-c", "python3 agent.py"), "generic"),
    ("sh", ("-ec", "python3 agent.py"), "generic"),
])
def test_wrappers_are_seen_through(command: str, args: tuple[str, ...], name: str) -> None:
    assert profile_for(command, args).name == name


def test_the_agent_key_names_the_profile_outright() -> None:
    assert profile_for("my-wrapper", ("--x",), agent="gemini") is GEMINI
    assert profile_for("claude", agent="generic") is GENERIC
    assert profile_for("claude", agent="codex") is CODEX


def test_program_names_lists_each_program_outermost_first() -> None:
    assert program_names("env", ("A=1", "ssh", "box", "bash -lc codex")) == [
        "env", "ssh", "bash", "codex"]
    assert program_names("sh", ("-c", "unbalanced 'quote")) == ["sh", "unbalanced"]


def test_gemini_and_codex_profiles_are_verified_and_split_the_enter() -> None:
    for profile in (GEMINI, CODEX):
        assert profile.verified and profile.needs_split_enter
    assert CODEX.enter_delay == 0.0 and GEMINI.enter_delay == 0.2  # its paste timer
    # Measured against the real CLIs (tests/e2e/test_typing_seats.py): Gemini
    # takes an Enter soon after other input as part of it; the others need
    # no quiet once the text shows.
    assert GEMINI.enter_quiet == CODEX.enter_quiet == 0.1 and CLAUDE.enter_quiet == 0.01


def test_a_shell_is_typed_comments_and_zsh_a_quoted_null_command() -> None:
    assert typed_form(GENERIC, "run `x`") == "run `x`"
    assert typed_form(profile_named("shell"), "run `x`") == "# run `x`"
    assert typed_form(profile_named("zsh"), "it's `x`") == ": 'it'\\''s `x`'"
    assert profile_for("claude", agent="shell").typed_as == "comment"


# Questions in no profile's words: the last line drawn ends with "?" (and
# perhaps its answers).  One followed by a prompt, or by more output, was answered.
UNKNOWN_QUESTIONS = [
    ["Need to install the following packages:", "  some-agent@1.0.0", "Ok to proceed? (y) "],
    ["The authenticity of host 'gpu (10.0.0.2)' can't be established.",
     "Are you sure you want to continue connecting (yes/no/[fingerprint])? "],
    ["Overwrite notes.md? "],
]
ANSWERED = [["Ok to proceed? (y) y", "installed", "$ "], ["Overwrite notes.md? yes", "writing…"]]


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_a_question_in_no_profile_s_words_is_waiting(profile: AgentProfile) -> None:
    for lines in UNKNOWN_QUESTIONS:
        assert shows_question(lines), lines
        assert classify(lines, profile) == WAITING, (profile.name, lines)
    for lines in ANSWERED:
        assert not shows_question(lines), lines
