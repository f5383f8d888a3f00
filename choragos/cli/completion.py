"""``choragos completion bash|zsh|fish``: the shell code that completes
choragos's verbs and options, from the command registry.

argcomplete does the work: the shell code it prints runs ``choragos`` with
``_ARGCOMPLETE`` set at each Tab, and :func:`complete` answers from the
parsers the verbs themselves run with (``_parsers``).  It is imported only
then and by this verb: every other run of ``choragos`` (the agents' verbs
above all) stays on the standard library.
"""

from __future__ import annotations

import os
import sys
from argparse import ArgumentParser
from pathlib import Path
from types import ModuleType

from choragos.cli import _client, _parsers
from choragos.control import commands

SHELLS = ("bash", "zsh", "fish")
ROLE_ARGUMENTS = ("role", "to")  # completed with the team's role names


def run(argv: list[str], verb: str = "completion") -> int:
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.bare_parser(verb, "Print the code that makes your shell complete choragos's "
                                     "verbs and options; load it from the shell's startup file.")
    made.add_argument("shell", choices=SHELLS, help="the shell to print it for")
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    argcomplete = _argcomplete()
    sys.stdout.write(argcomplete.shellcode(["choragos"], shell=args.shell))
    return _client.EXIT_OK


def complete() -> None:
    """Answer the shell's Tab (``_ARGCOMPLETE`` is set), then end the process:
    a completion must never run the verb it completes."""
    try:
        argcomplete = _argcomplete()
    except _client.Failure:
        sys.exit(1)
    words = os.environ.get("COMP_LINE", "").split()
    current = words[1] if len(words) > 1 and words[1] in commands.VERBS else ""
    root = _parsers.root_parser(only=current)
    for verb in _parsers.verbs_of(root):
        for action in verb._actions:
            if action.dest in ROLE_ARGUMENTS:
                action.completer = _role_names  # type: ignore[attr-defined]
    argcomplete.autocomplete(root)
    sys.exit(1)  # autocomplete returns only when it was not asked to complete


def _role_names(**_: object) -> list[str]:
    """The roles of this directory's team (its .choragos.toml, or the built-in one)."""
    from choragos.config.model import ConfigError, load_config

    try:
        return [role.name for role in load_config(None, Path.cwd()).roles]
    except ConfigError:
        return []


def _argcomplete() -> ModuleType:
    try:
        import argcomplete
    except ImportError:
        raise _client.Failure(_client.EXIT_REFUSED, "shell completion needs the argcomplete "
                                                    "package: pip install argcomplete") from None
    return argcomplete
