"""The verbs' argparse parsers: a usage error is one line and exit status 2.

Kept apart from :mod:`choragos.cli._client` so that a verb that reads its
arguments without argparse (:mod:`choragos.cli._quickargs`) never loads it.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import suppress
from pathlib import Path

from choragos.cli._client import EXIT_USAGE, Failure
from choragos.control import commands

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2, with a
    "did you mean" for a mistyped option or choice, and no abbreviations:
    ``choragos kill --al`` must not be ``kill --all`` (a destructive verb
    doing what a typo asked), and the verbs' own readers
    (:mod:`choragos.cli._quickargs`) take only whole option names too."""

    words: Sequence[str] = ()
    # What a verb says when its required arguments are missing, in its own
    # words ("name the role to pause"), as the verbs that check for
    # themselves do; argparse's "the following arguments are required" if unset.
    missing: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False  # the verbs' subparsers are made through here too
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self.words = list(sys.argv[1:] if args is None else args)  # for error's suggestion
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        if self.missing and message.startswith("the following arguments are required"):
            message = self.missing
        raise Failure(EXIT_USAGE, f"{message}{_did_you_mean(self, message)} "
                                  f"(see `{self.prog} --help`)")


def _did_you_mean(made: Parser, message: str) -> str:
    """`` (did you mean --task?)`` for a mistyped option (whatever argparse
    complained of first, a missing required one included) or choice."""
    options = list(made._option_string_actions)
    unknown = [w.split("=", 1)[0] for w in made.words
               if w.startswith("-") and w.split("=", 1)[0] not in options]
    if "invalid choice: " in message:
        unknown = [message.split("invalid choice: ", 1)[1].split(" (", 1)[0].strip("'")]
        options = [c for a in made._actions for c in (a.choices or ()) if isinstance(c, str)]
    if not unknown:
        return ""
    import difflib  # only on the error path: the agents' verbs start fast

    # Compared without their dashes, which every option shares: "--json" is
    # not close to "--sock" for being six characters that start with "--".
    bare = {option.lstrip("-"): option for option in options}
    for word in unknown:
        close = difflib.get_close_matches(word.lstrip("-"), list(bare), n=1, cutoff=0.6)
        if close:
            return f" ({word}: did you mean {bare[close[0]]}?)"
    return ""


def named(text: str) -> str:
    """A file named on the command line (an argparse ``type``): an empty one is
    a slip (a variable unset), never "the default" nor the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path; give one, or leave it out")
    return text


def named_path(text: str) -> Path:
    """:func:`named`, as a path."""
    return Path(named(text))


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help text sized without shutil, which argparse would import otherwise
    on every run (help or not) just to ask for the terminal width."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


def _columns() -> int:
    with suppress(ValueError):
        return int(os.environ.get("COLUMNS", ""))
    with suppress(OSError):
        return os.get_terminal_size(sys.stdout.fileno()).columns
    return 80


def made_parser(verb: str, description: str) -> argparse.ArgumentParser:
    """A parser for ``choragos VERB`` whose usage error is a :class:`Failure`,
    its examples (choragos/control/commands.py) under its ``--help``."""
    declared = commands.VERBS.get(verb)
    examples = declared.examples if declared is not None else ()
    epilog = ("example" + "s" * (len(examples) > 1) + ":\n"
              + "".join(f"  {line}\n" for line in examples)) if examples else None
    return Parser(prog=f"choragos {verb}", description=description, epilog=epilog,
                  formatter_class=Formatter)
