"""``choragos man``: the manual page, in roff, made from the command registry
and the parsers the verbs run with (``_parsers``), so it lists exactly the
verbs and options there are, with the examples their ``--help`` shows.

``choragos man | man -l -`` reads it; ``choragos man > choragos.1`` keeps it.
"""

from __future__ import annotations

import argparse
import sys
from argparse import ArgumentParser

from choragos import __version__
from choragos.cli import _client, _parsers
from choragos.control import commands

_EXIT = (("0", "done"),
         ("1", "refused: the session said no, a file or repository is not there, a check "
               "failed"),
         ("2", "usage error: a bad option or argument, an unreadable configuration; nothing "
               "was changed"),
         ("3", "no usable answer: no session runs here, or it did not answer in time"))
_FILES = ((".choragos.toml", "the project's team and settings"),
          ("$XDG_CONFIG_HOME/choragos/config.toml",
           "your own [keys], [ui] and [notify], under every project's (default ~/.config)"),
          (".choragos/", "a session's state: task files, reports, logs, journal"))


def run(argv: list[str], verb: str = "man") -> int:
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    return _client.bare_parser(verb, "Print choragos's manual page (roff) on stdout.")


def _main(argv: list[str], verb: str) -> int:
    arguments(verb).parse_args(argv)
    sys.stdout.write(page())
    return _client.EXIT_OK


def page() -> str:
    """The whole manual page."""
    lines = [f'.TH CHORAGOS 1 "" "choragos {__version__}" "User Commands"',
             ".SH NAME", r"choragos \- run a team of coding-agent CLIs",
             ".SH SYNOPSIS", r".B choragos", r".I VERB", r"[\fIoptions\fR]",
             ".SH DESCRIPTION",
             _text("choragos runs a team of AI coding-agent CLIs (Claude Code, Gemini CLI, "
                   "Codex) in terminals it owns: an orchestrator you give the goal to, "
                   "workers it delegates to, a task board, gates, checkpoints and a deck "
                   "that shows them all. Each verb below has --help."),
             ".SH COMMANDS"]
    for name in commands.VERBS:
        lines += _verb(name, _parsers.verb_parser(name))
    lines += [".SH EXIT STATUS", *_pairs(_EXIT), ".SH FILES", *_pairs(_FILES),
              ".SH SEE ALSO", _text("The docs/ folder of choragos: cli.md, configuration.md, "
                                    "keybindings.md.")]
    return "\n".join(lines) + "\n"


def _verb(name: str, made: ArgumentParser) -> list[str]:
    usage = made.format_usage().removeprefix("usage: ").strip()
    lines = [f'.SS "{_escape(name)}"', ".nf", *map(_escape, usage.splitlines()), ".fi",
             _text(made.description or commands.VERBS[name].help)]
    for action in made._actions:
        if not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS:
            lines += [".TP", _escape(_flags(action)), _text(_help(action))]
    examples = commands.VERBS[name].examples
    if examples:
        lines += [".PP", "Example" + "s" * (len(examples) > 1) + ":", ".nf",
                  *(f"  {_escape(line)}" for line in examples), ".fi"]
    return lines


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest.upper()
    takes = action.nargs != 0
    value = f" {action.metavar or action.dest.upper()}" if takes else ""
    return ", ".join(action.option_strings) + value


def _help(action: argparse.Action) -> str:
    text = (action.help or "") % {"default": action.default, "prog": "choragos"} \
        if action.help and "%(" in action.help else action.help or ""
    if action.choices and not isinstance(action.choices, dict):
        text += f" (one of: {', '.join(map(str, action.choices))})"
    return text


def _pairs(rows: tuple[tuple[str, str], ...]) -> list[str]:
    return [line for key, text in rows for line in (".TP", _escape(key), _text(text))]


def _text(text: str) -> str:
    return _escape(" ".join(text.split()))


def _escape(text: str) -> str:
    """Text roff prints as it is: backslashes and hyphens escaped, no line
    taken for a request."""
    text = text.replace("\\", r"\e").replace("-", r"\-")
    return r"\&" + text if text.startswith((".", "'")) else text
