"""Starter ``.choragos.toml`` files for ``choragos init``.

Each template is a team assembled from commented role blocks, so the file a
user gets explains its own keys.  ``--auto`` adds one sentence to the briefs
of the roles that run code, naming the project's test and lint commands.
Every template must load with no errors and no warnings, so none of them may
use a key listed in ``choragos.config.model.NOT_BUILT``.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from choragos.agents.seatsetup import CODEX_ARGS

__all__ = ["LANGUAGES", "TEMPLATES", "Detected", "Language", "detect", "render"]


@dataclass(frozen=True)
class Language:
    """A project ecosystem: the files that reveal it and how its code is checked."""

    name: str
    markers: tuple[str, ...]
    test: str
    lint: str


@dataclass(frozen=True)
class Detected:
    """The language found in a directory and the file that gave it away."""

    language: Language
    marker: str


# Checked in this order; the first marker present wins.  A Go or Rust project
# often carries a package.json for its web assets, so those come first.
LANGUAGES: tuple[Language, ...] = (
    Language("Go", ("go.mod",), "go test ./...", "go vet ./..."),
    Language("Rust", ("Cargo.toml",), "cargo test", "cargo clippy"),
    Language("Node.js", ("package.json",), "npm test", "npm run lint"),
    Language("Python", ("pyproject.toml", "setup.py"), "pytest", "ruff check ."),
)


def detect(workdir: Path) -> Detected | None:
    """The first language whose marker file exists in ``workdir``, if any."""
    for language in LANGUAGES:
        for marker in language.markers:
            if (Path(workdir) / marker).is_file():
                return Detected(language, marker)
    return None


# ---- rendering ------------------------------------------------------------------------

def _toml_text(text: str) -> str:
    """``text`` as a TOML string wrapped over several lines of the file.

    A line-ending backslash inside a multi-line basic string joins the lines
    back together, so the value is one sentence however it is wrapped.
    """
    lines = [line.replace("\\", "\\\\").replace('"', '\\"')
             for line in textwrap.wrap(text, 72, break_on_hyphens=False)]
    body = " \\\n".join(f"    {line}" for line in lines)
    return f'"""\\\n{body}"""'


def _role(comment: str, name: str, command: str, brief: str, *keys: str) -> str:
    lines = [*(f"# {line}" for line in textwrap.wrap(comment, 78)), "[[roles]]",
             f'name = "{name}"', f'command = "{command}"', *keys,
             f"prompt_template = {_toml_text(brief)}"]
    return "\n".join(lines)


def _checks(detected: Detected | None, sentence: str) -> str:
    """``sentence`` about the project's checks, or nothing when none was detected."""
    if detected is None:
        return ""
    lang = detected.language
    return " " + sentence.format(name=lang.name, test=lang.test, lint=lang.lint)


_FIX = "This is a {name} project: before you report, run `{test}` and `{lint}` and fix what fails."
_RUN = "This is a {name} project: run `{test}` and `{lint}` and report anything that fails."


# Claude workers start without the user's personal MCP servers, which keeps
# their context window for the task they were given.
_WORKER_ARGS = 'args = ["--strict-mcp-config"]  # arguments after the command'
# Cloud and code-host credentials, for roles that only read code.
_CLOUD_DENY = """env_deny = [
    "AWS_*", "AZURE_*", "GCP_*", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_*",
    "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN",
]"""
# A reviewer or auditor reads: a report that changed nothing is expected,
# and a change it does make is what the board flags.
_READS = "writes = false  # read-only: a change it makes is flagged"
_DENY_NOTE = ("If your claude signs in through AWS Bedrock or Google Vertex, take those "
              "entries out of env_deny.")


def _orchestrator(brief: str) -> str:
    return _role(
        "The orchestrator plans and hands out work. Exactly one role has start = true.",
        "orchestrator", "claude", brief,
        'model = "opus"        # passed as --model opus (see model_flag)', "start = true")


def _coder(detected: Detected | None) -> str:
    brief = ("You implement the change you are handed, and only that change. Keep the "
             "diff focused and run the tests before you report back."
             + _checks(detected, _FIX))
    return _role(
        "The coder writes the code. A task that takes longer than timeout is "
        'flagged: with timeout_action = "notify" the bell rings and the board marks it.',
        "coder", "claude", brief, 'model = "opus"', _WORKER_ARGS,
        'timeout = "45m"', 'timeout_action = "notify"')


def _claude_reviewer(detected: Detected | None) -> str:
    brief = ("You review changes and never edit files. Look for bugs, unhandled cases, "
             "missing tests and unclear code, and report your findings ranked by how "
             "much they matter." + _checks(detected, _RUN))
    return _role(
        "The reviewer reads and reports. env_deny keeps credentials it has no use for "
        "out of its environment; a deny always wins. " + _DENY_NOTE,
        "reviewer", "claude", brief, 'model = "sonnet"', _WORKER_ARGS, _CLOUD_DENY, _READS)


def _gemini_reviewer(detected: Detected | None) -> str:
    brief = ("You review changes and never edit files. Look for bugs, unhandled cases, "
             "missing tests and unclear code, and report your findings ranked by how "
             "much they matter." + _checks(detected, _RUN))
    return _role(
        "A second vendor gives a real second opinion. A non-empty env_allow gives the "
        "role only the basic variables (PATH, HOME, TERM, ...) plus these; base_url_env "
        "names the variable that points a non-Anthropic CLI at a gateway.",
        "reviewer", "gemini", brief,
        'env_allow = ["GEMINI_API_KEY", "GOOGLE_*"]  # GOOGLE_* is a prefix match',
        'base_url_env = ["GOOGLE_GEMINI_BASE_URL"]', _READS)


def _auditor(detected: Detected | None) -> str:
    brief = ("You audit changes for security problems: injection, leaked or logged "
             "secrets, unsafe defaults, risky dependencies, unchecked input. Report each "
             "finding with its file and line. Do not change code."
             + _checks(detected, _RUN))
    return _role(
        "The auditor reads untrusted code for a living, so cloud and code-host "
        "credentials are denied to it. " + _DENY_NOTE,
        "auditor", "claude", brief, 'model = "sonnet"', _WORKER_ARGS, _CLOUD_DENY, _READS)


def _release() -> str:
    brief = ("You prepare releases: version numbers, changelog, tags. Push or publish "
             "nothing the task does not name explicitly.")
    return _role(
        "approve = true holds every task for this role at a gate until you approve "
        "it (in the deck, or with `choragos gate approve`).",
        "release", "claude", brief, 'model = "haiku"', _WORKER_ARGS, "approve = true")


def _checkpoints(enabled: bool) -> str:
    why = ("Before each task choragos snapshots the workspace (git repositories only); "
           "`choragos rollback T3` restores the state from before task T3."
           if enabled else "Nothing in this team writes files, so no snapshots are taken.")
    lines = [*(f"# {line}" for line in textwrap.wrap(why, 78)), "[checkpoints]",
             f"enabled = {'true' if enabled else 'false'}"]
    if enabled:
        lines.append("keep = 20            # older snapshots are pruned")
    return "\n".join(lines)


_UI_HINT = """\
# Deck behaviour and notification hooks.  Hooks run with sh -c in the
# background; the task text reaches them only as $CHORAGOS_TASK.
# [ui]
# bell = true
# on_input = 'notify-send choragos "$CHORAGOS_ROLE needs you"'"""

_HOSTS_HINT = """\
# A role can run on another machine over ssh (a key or an agent login, never a
# password; the host needs Python 3, git and the role's program):
# [hosts.gpu]
# ssh = "me@gpu-box"              # as ssh takes it, or an alias of ~/.ssh/config
# ssh_args = ["-J", "jump"]       # optional: extra ssh arguments
# workdir = "choragos-work/app"   # optional: where the checkouts live there
# and, in that role's [[roles]] table: host = "gpu"
# See """ + "{remote}"

_PLAN = ("You lead this team and do not write, review or audit code yourself. Break "
         "the request into tasks, give each one to the teammate best suited to it, "
         "wait for their reports and check them against the request.")
_REVIEW_PLAN = ("You lead a review. Split it into correctness and security, hand the "
                "first to the reviewer and the second to the auditor, then merge their "
                "findings into one report. Nobody on this team edits files.")


def _starter(detected: Detected | None) -> list[str]:
    return [_orchestrator(_PLAN), _coder(detected), _claude_reviewer(detected),
            _checkpoints(True), _UI_HINT]


def _review(detected: Detected | None) -> list[str]:
    return [_orchestrator(_REVIEW_PLAN), _claude_reviewer(detected), _auditor(detected),
            _checkpoints(False)]


def _claude_team(detected: Detected | None) -> list[str]:
    return [_orchestrator(_PLAN), _coder(detected), _claude_reviewer(detected),
            _release(), _checkpoints(True), _UI_HINT]


def _codex_coder(detected: Detected | None) -> str:
    brief = ("You implement the change you are handed, and only that change. Keep the "
             "diff focused and run the tests before you report back."
             + _checks(detected, _FIX))
    args = ", ".join(f'"{arg}"' for arg in CODEX_ARGS)
    return _role(
        "Codex implements. Its sandbox must reach choragos' socket, its shell must keep "
        "the PATH that finds choragos, and it must not start update daemons: the -c "
        "overrides below do that (`choragos doctor` checks they are there).",
        "coder", "codex", brief, f"args = [{args}]", 'timeout = "45m"')


def _vendor_mix(detected: Detected | None) -> list[str]:
    return [_orchestrator(_PLAN), _codex_coder(detected), _gemini_reviewer(detected),
            _checkpoints(True), _UI_HINT]


def _mixed_team(detected: Detected | None) -> list[str]:
    return [_orchestrator(_PLAN), _coder(detected), _gemini_reviewer(detected),
            _checkpoints(True), _UI_HINT]


# name -> (one-line description, the blocks of the file).
TEMPLATES: dict[str, tuple[str, Callable[[Detected | None], list[str]]]] = {
    "starter": ("An orchestrator, a coder and a reviewer, all Claude", _starter),
    "review": ("A read-only review crew: orchestrator, reviewer, auditor", _review),
    "claude-team": ("All Claude, with a release role behind an approval gate", _claude_team),
    "mixed-team": ("Claude plus a Gemini CLI reviewer for a second opinion", _mixed_team),
    "vendor-mix": ("Claude orchestrates, Codex implements, Gemini reviews", _vendor_mix),
}


def _header(template: str, detected: Detected | None) -> str:
    found = (f"# Detected a {detected.language.name} project ({detected.marker}); the "
             "briefs name its test and lint commands.\n" if detected else "")
    return (f"# choragos team file, written by `choragos init --template {template}`.\n"
            f"# {TEMPLATES[template][0]}.\n{found}"
            "# Each [[roles]] table is one seat: a program choragos runs in its own\n"
            "# pane. prompt_template is the role's standing brief. Every key is\n"
            f"# described in {docs_path('configuration.md')};\n"
            "# `choragos doctor` checks this file.")


def docs_path(name: str) -> str:
    """Where a reader finds ``docs/<name>``: installed with the wheel (under
    ``<prefix>/share/doc/choragos``), in a source checkout, or in the sources."""
    for candidate in (Path(sys.prefix) / "share" / "doc" / "choragos" / name,
                      Path(__file__).resolve().parents[1] / "docs" / name):
        if candidate.is_file():
            return str(candidate)
    return f"docs/{name} of the choragos sources"


def render(template: str, detected: Detected | None = None) -> str:
    """The text of ``template``, with language-specific briefs when ``detected``."""
    blocks = [_header(template, detected), *TEMPLATES[template][1](detected),
              _HOSTS_HINT.format(remote=docs_path("remote.md"))]
    return "\n\n".join(blocks) + "\n"
