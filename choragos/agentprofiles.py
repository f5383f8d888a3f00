"""What choragos knows about each agent CLI's screen and input handling.

A profile is data, not code: the markers that mean *waiting for a human*,
*working* and *idle*, which lines are TUI chrome, and how text must be typed
into the agent.  ``screenstatus`` reads screens with it; the role actor uses
the timing and input facts.  The Claude Code profile was verified against the
real TUI (see docs/agents.md); the others are best effort from public docs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class AgentProfile:
    """How one agent CLI looks and behaves in a terminal.

    Markers are case-insensitive substrings; ``*_patterns`` are regular
    expressions for what substrings cannot say (a highlighted menu option, a
    spinner line).
    """

    name: str
    # A dialog or question is waiting for a human (permission, trust, menu).
    input_prompts: tuple[str, ...] = ()
    input_patterns: tuple[str, ...] = ()
    # The agent is busy (model streaming, tool running, retrying).
    busy_markers: tuple[str, ...] = ()
    # The prompt is ready for input.
    idle_markers: tuple[str, ...] = ()
    # Lines that are TUI chrome: never shown in the activity preview.
    chrome_markers: tuple[str, ...] = ()
    chrome_patterns: tuple[str, ...] = ()
    # Glyphs that open the agent's input box line ("❯ text"); empty for CLIs
    # that read from a plain prompt line instead of a drawn box.
    box_prompts: tuple[str, ...] = ()
    # Plain prompt lines end with one of these (shells, REPLs).
    line_prompt_ends: tuple[str, ...] = ()
    # Without a box or any marker, the screen means this status.
    unmatched_status: str = "working"
    # How many trailing non-blank lines markers are looked for in; 0 = all.
    tail_lines: int = 0
    # Boot: seconds of output quiet that mean the agent is ready for its brief.
    boot_quiet: float = 1.2
    # Text and Enter in one write are taken as a paste and never submitted.
    needs_split_enter: bool = True
    # Seconds to wait between the text and the separate Enter.
    enter_delay: float = 0.2
    # Input longer than this is shown as a placeholder, not as text.
    inline_input_limit: int | None = None
    # Whether the markers were checked against the real program.
    verified: bool = False

    def with_extras(self, input_prompts: tuple[str, ...] = (),
                    chrome_markers: tuple[str, ...] = ()) -> AgentProfile:
        """This profile plus a role's own ``input_prompts`` / ``chrome_markers``."""
        return replace(self, input_prompts=self.input_prompts + tuple(input_prompts),
                       chrome_markers=self.chrome_markers + tuple(chrome_markers))


# Verified against Claude Code 2.1.197 through a PTY and pyte; every marker
# below appears in a capture under tests/fixtures/screens/.
CLAUDE = AgentProfile(
    name="claude",
    input_prompts=(
        "do you want to",          # Bash / Write / Edit permission, API key question
        "esc to cancel",           # footer of every dialog and question
        "enter to select",         # AskUserQuestion
        "enter to confirm",        # trust and API key questions
        "this command requires approval",
        "choose the text style",   # first-run theme picker
        "is this a project you created or one you trust",
    ),
    # A highlighted numbered option: "❯ 1. Yes", " ❯ 2. Dark mode".
    input_patterns=(r"^\s*❯\s*\d+\.\s",),
    busy_markers=("esc to interrupt",),
    idle_markers=("? for shortcuts",),
    chrome_markers=(
        "? for shortcuts", "esc to interrupt", "for agents", "/effort",
        "paste again to expand", "to paste deleted text", "press ctrl-c again to exit",
        "ctrl+g to edit in", "claude code v", "api usage billing",
        "▐▛███▜▌", "▝▜█████▛▘", "▘▘ ▝▝",
    ),
    chrome_patterns=(
        r"^\s*⎿\s+Tip:",                      # rotating tips under the spinner
        r"^[·✢✳✶✻✽*]\s+\S+…",                 # live spinner: "✻ Gesticulating… (4s · ↓ 1 tokens)"
        r"^[·✢✳✶✻✽*]\s+\S+ for \d",           # turn summary: "✻ Baked for 8s"
        r"^[╭╰│]",                             # the welcome box
    ),
    box_prompts=("❯", ">"),
    unmatched_status="waiting",
    boot_quiet=1.2,
    needs_split_enter=True,
    enter_delay=0.2,
    inline_input_limit=800,
    verified=True,
)

# Shells, REPLs and anything unknown: a question is on the last lines, a
# prompt character ends the last line when idle, anything else is work.
GENERIC = AgentProfile(
    name="generic",
    input_prompts=("[y/n]", "(y/n)", "[yes/no]", "(yes/no)", "password:", "password for",
                   "passphrase", "press enter", "press any key", "continue?"),
    line_prompt_ends=("$", "#", "%", ">", "❯"),
    unmatched_status="working",
    tail_lines=2,
    boot_quiet=1.2,
    needs_split_enter=True,
    verified=True,
)

# Best effort from the projects' public documentation; not yet verified
# against the real programs (docs/agents.md says what to check).
GEMINI = AgentProfile(
    name="gemini",
    input_prompts=("allow execution", "apply this change", "yes, allow once",
                   "waiting for user confirmation", "do you want to proceed"),
    input_patterns=(r"^\s*[●❯>]\s*\d+\.\s",),
    busy_markers=("esc to cancel",),
    idle_markers=("type your message",),
    chrome_markers=("type your message", "esc to cancel", "context left", "no sandbox"),
    box_prompts=(">",),
    unmatched_status="working",
    boot_quiet=2.0,
)

CODEX = AgentProfile(
    name="codex",
    input_prompts=("would you like to run the following command", "allow command",
                   "would you like to make the following edits", "yes, proceed",
                   "press enter to confirm"),
    input_patterns=(r"^\s*›\s*\d+\.\s",),
    busy_markers=("esc to interrupt",),
    idle_markers=("ask codex to do anything",),
    chrome_markers=("esc to interrupt", "context left", "⏎ send", "ctrl+j newline",
                    "ctrl+t transcript"),
    box_prompts=("›", "▌"),
    unmatched_status="working",
    boot_quiet=2.0,
)

AIDER = AgentProfile(
    name="aider",
    input_prompts=("(y)es/(n)o", "[yes]:", "[no]:", "add file to the chat?",
                   "run shell command?", "create new file?"),
    busy_markers=("waiting for", "tokens:"),
    chrome_markers=("tokens:", "cost:", "─────"),
    line_prompt_ends=(">",),
    unmatched_status="working",
    tail_lines=2,
    boot_quiet=2.0,
)

_BY_NAME: dict[str, AgentProfile] = {
    "claude": CLAUDE, "claude-code": CLAUDE,
    "gemini": GEMINI, "gemini-cli": GEMINI,
    "codex": CODEX,
    "aider": AIDER,
}

PROFILES: tuple[AgentProfile, ...] = (CLAUDE, GEMINI, CODEX, AIDER, GENERIC)


def profile_for(command: str) -> AgentProfile:
    """The profile for a role's ``command`` (matched by the program's basename)."""
    program = command.strip().split()[0] if command.strip() else ""
    name = os.path.basename(program).lower()
    # npm and pip wrappers are often called "claude.exe", "aider.py" and the like.
    stem = name.rsplit(".", 1)[0] if name.endswith((".exe", ".js", ".py", ".cjs")) else name
    return _BY_NAME.get(stem, GENERIC)
