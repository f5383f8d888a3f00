"""What choragos knows about each agent CLI's screen and input handling.

A profile is data, not code: the markers that mean *waiting for a human*,
*working* and *idle*, which lines are TUI chrome, and how text must be typed
into the agent.  ``screenstatus`` reads screens with it; the role actor uses
the timing and input facts.  The Claude Code, Gemini CLI and Codex CLI
profiles were verified against the real TUIs (see docs/agents.md); aider's is
best effort from its public docs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from choragos.agents.wrappers import interactive_shell, program_names


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
    # Boot: when set, one of these must be on screen before the brief is typed
    # (a CLI that draws its prompt before deciding to show a startup dialog).
    boot_markers: tuple[str, ...] = ()
    # Text and Enter in one write are taken as a paste and never submitted.
    needs_split_enter: bool = True
    # Seconds the pane must have been quiet, once the whole text shows in the
    # agent's input, before the separate Enter goes in.  A CLI that has drawn
    # the text has read it, so the Enter comes in a read of its own; the
    # quiet is for a CLI that takes an Enter soon after other input as part
    # of it (measured per CLI against the real program: docs/agents.md).
    enter_quiet: float = 0.1
    # Seconds at least between the text and the separate Enter (which also
    # waits for the text's echo and a quiet pane): for a CLI whose paste
    # handling runs on a timer of its own.
    enter_delay: float = 0.0
    # Seconds after a submitted line before the next may be typed: a CLI that
    # clears its input before it shows it is busy reads idle in between.
    submit_settle: float = 0.0
    # Input longer than this is shown as a placeholder, not as text.
    inline_input_limit: int | None = None
    # How choragos's own lines (the brief, task notices, reports) are typed:
    # "text" as they are; "comment" after "# " and "quoted" as ": '…'", so a
    # shell shows them and runs nothing of them (a brief's `backticks` would
    # run as a command).  Operator keys are always typed as they are.
    typed_as: str = "text"
    # A provider's limit stopped the agent: the CLI's own notice, as regular
    # expressions matched (case-insensitively) against the lines above its input.
    limit_patterns: tuple[str, ...] = ()
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
    # "● API Error: Request rejected (429) · …" once it stops retrying
    # (claude_idle_limit_429.txt); a subscription's "Claude usage limit
    # reached … resets 3am" / "5-hour limit reached ∙ resets 3am", and since
    # 2.1 "You've hit your session limit · resets 3am (UTC)" (a warning says
    # "You've used 90% of your …" or "Approaching …": not a limit).
    limit_patterns=(r"^\s*[●⎿]?\s*API Error:.*\((429|529)\)", r"^\s*[●⎿]?\s*API Error: (429|529)\b",
                    # given up after its own retries of an overload (mid-stream
                    # overloaded_error, then 529s): it rests idle with the turn
                    r"^\s*[●⎿]?\s*API Error: Repeated 529 Overloaded errors",
                    r"usage limit reached", r"\blimit reached\b.*\bresets?\b",
                    r"\bYou[’']ve hit your\b.*\blimit\b"),
    unmatched_status="waiting",
    boot_quiet=1.2,
    needs_split_enter=True,
    inline_input_limit=800,
    # Measured: every line submitted by its first Enter with no quiet at all
    # once the text (or its "[Pasted text #1]") shows (tests/e2e/test_typing_seats.py).
    enter_quiet=0.01,
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
    # A line editor that drew the text has read it: the Enter is a read of its own.
    enter_quiet=0.01,
    verified=True,
)

# An interactive shell (a seat for a person, or a scripted one): read like
# any prompt, but what choragos types in is a comment.  Interactive bash,
# sh, dash, ksh and fish take "# …" as one; zsh only with interactivecomments
# set, so there it is the argument of the null command ":", single-quoted.
SHELL = replace(GENERIC, name="shell", typed_as="comment")
ZSH = replace(GENERIC, name="zsh", typed_as="quoted")


def typed_form(profile: AgentProfile, line: str) -> str:
    """``line`` (one line already) as choragos types it into ``profile``'s program."""
    if profile.typed_as == "comment":
        return f"# {line}"
    if profile.typed_as == "quoted":
        return ": '" + line.replace("'", "'\\''") + "'"
    return line


# A highlighted option of a numbered menu, bordered or not: "│ ● 1. Allow once"
# (Gemini), "› 1. Yes, proceed" (Codex), "❯ 1. Yes" (Claude), "> 1. Sign in".
MENU_OPTION = r"^\s*[│┃|]?\s*[●❯›>▶»]\s*\d+\.\s"
# Lines made only of block and braille glyphs: logos and half-block rules.
_ART = r"^[\s▀▄█▌▐▖▗▘▙▚▛▜▝▞▟\u2800-\u28ff]+$"

# Verified against Gemini CLI 0.61.0 through a PTY and pyte
# (tests/fixtures/screens/gemini_*.txt).  Its input area is a rule, a
# "Shift+Tab to accept edits" line and " > " with the placeholder, which stays
# visible while the model works; the spinner line above the rule is what says
# busy.  Dialogs are drawn inside "│" borders and replace the input area.
GEMINI = AgentProfile(
    name="gemini",
    input_prompts=("allow execution of", "do you trust the files in this folder",
                   "how would you like to authenticate", "(use enter to select)",
                   "apply this change", "waiting for user confirmation",
                   "do you want to proceed"),
    input_patterns=(MENU_OPTION,),
    busy_markers=("esc to cancel",),
    idle_markers=("type your message", "to accept edits"),
    chrome_markers=("type your message", "esc to cancel", "? for shortcuts",
                    "to accept edits", "workspace (/directory)", "no sandbox", "gemini cli v",
                    "authenticated with", "tips for getting started", "gemini.md files",
                    "/help for more information", "ask coding questions, edit code",
                    "be specific for the best results", "true color", "visual experience",
                    "to expand pasted text", "skipping project agents"),
    chrome_patterns=(_ART, r"^\s*[⠁-⣿]\s+\S.*\(esc to cancel"),
    # Its daily-quota dialog (gemini_waiting_usage_limit.txt) asks "Keep
    # trying / Stop": the role waits for a human there as at any dialog.
    limit_patterns=(r"usage limit reached", r"\bstatus 429\b", r"RESOURCE_EXHAUSTED",
                    r"quota exceeded",
                    r"reached your .*\b(quota|limit)\b", r"rate limit(ed)?\b.*retry"),
    unmatched_status="working",
    tail_lines=12,
    boot_quiet=1.5,
    boot_markers=("type your message",),
    needs_split_enter=True,
    # An Enter until a 40 ms timer after a paste has run is a newline (seen
    # once with no floor: the input cleared, the model never told); on a busy
    # machine that timer runs late.  Measured: an Enter 0.01-0.03 s after the text needed a second
    # one for half the lines; 0.11 s and later, every first Enter submitted.
    # Also an Enter that follows any input event (a terminal reply
    # included) within 30 ms is a newline: the default quiet stays.
    enter_delay=0.2,
    # Seen: a task typed right after the brief's Enter, before the spinner
    # showed, was wiped with the input and never reached the model.
    submit_settle=2.5,
    verified=True,
)

# Verified against Codex CLI 0.171.0 through a PTY and pyte
# (tests/fixtures/screens/codex_*.txt).  The composer is a "›" line with no
# rules around it; "• Working (4s • esc to interrupt)" sits above it while
# busy.  At start it draws an idle-looking composer for a few seconds before
# it knows whether to show the trust or sign-in screen; the footer's
# "← for agents" is drawn only once it is really ready.
CODEX = AgentProfile(
    name="codex",
    input_prompts=("would you like to run the following command",
                   "would you like to make the following edits", "press enter to confirm",
                   "trust this folder", "press enter to continue", "sign in with chatgpt",
                   "enter continue · esc back", "allow command"),
    input_patterns=(MENU_OPTION,),
    busy_markers=("esc to interrupt",),
    idle_markers=("ask codex to do anything", "? for shortcuts"),
    chrome_markers=("esc to interrupt", "ask codex to do anything", "? for shortcuts",
                    "for agents", "f2 to view", "openai codex (v", "context left",
                    "could not create path aliases", "helper binaries under"),
    chrome_patterns=(_ART, r"^\s*>_ ", r"^\s*\S+ \S+ · /", r"^\s*Worked for \d",
                     r"^\s*/\S*$"),
    limit_patterns=(r"hit your usage limit", r"exceeded retry limit, last status: 429",
                    r"\b429 Too Many Requests\b", r"quota exceeded"),
    unmatched_status="working",
    tail_lines=12,
    boot_quiet=1.5,
    boot_markers=("for agents",),
    needs_split_enter=True,
    # Measured quiet, lines took their first Enter with none; but in a full
    # test run on a loaded machine a brief typed as Codex booted needed a
    # second Enter 10 ms after its echo and never reached the model: 100 ms.
    enter_quiet=0.1,
    verified=True,
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

PROFILES: tuple[AgentProfile, ...] = (CLAUDE, GEMINI, CODEX, AIDER, GENERIC, SHELL, ZSH)


AGENT_NAMES: tuple[str, ...] = ("claude", "gemini", "codex", "aider", "generic", "shell",
                                "zsh")


def profile_named(name: str) -> AgentProfile:
    """The profile an ``agent = "..."`` key names (``generic`` for anything else)."""
    return {**_BY_NAME, "shell": SHELL, "zsh": ZSH}.get(name.lower(), GENERIC)


def profile_for(command: str, args: tuple[str, ...] | list[str] = (),
                agent: str = "") -> AgentProfile:
    """The profile for a role: its ``agent`` key, else the program its command runs.

    Wrappers are seen through (``env``, ``npx``, ``uvx``, ``ssh HOST``,
    ``sh -c``, ``node …/cli.js``): the first known agent they run decides.
    """
    if agent:
        return profile_named(agent)
    for name in program_names(command, tuple(args)):
        if name in _BY_NAME:
            return _BY_NAME[name]
    shell = interactive_shell(command, tuple(args))
    if shell is not None:
        return ZSH if shell == "zsh" else SHELL
    return GENERIC


def question_markers() -> tuple[str, ...]:
    """Every profile's question markers that no profile uses to mean *busy*.

    Whatever program a role runs, a screen showing one of these (or a
    highlighted numbered option) is never typed into.
    """
    busy = {m for p in PROFILES for m in p.busy_markers}
    seen: dict[str, None] = {}
    for profile in PROFILES:
        seen.update((m, None) for m in profile.input_prompts if m not in busy)
    return tuple(seen)
