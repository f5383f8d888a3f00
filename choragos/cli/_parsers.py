"""Every verb's parser, from the command registry: what shell completion and
the man page are made of, so neither can drift from the verbs themselves.

Each verb module has ``arguments(verb)``; loading one imports that verb's
module, so completion builds only the parser of the verb being completed.
"""

from __future__ import annotations

import argparse
import importlib

from choragos import __version__
from choragos.cli import _client
from choragos.cli._argparser import Formatter
from choragos.control import commands


def verb_parser(name: str) -> argparse.ArgumentParser:
    """The parser ``choragos NAME`` runs with."""
    module = importlib.import_module(commands.VERBS[name].module)
    return module.arguments(name)


def root_parser(only: str | None = None) -> argparse.ArgumentParser:
    """``choragos`` and each verb under it; with ``only``, that verb's options
    alone are loaded (the others are names and help; ``""``: none is loaded)."""
    root = _client.bare_parser("", f"choragos {__version__}: run a team of coding-agent CLIs")
    root.prog = "choragos"
    verbs = root.add_subparsers(dest="verb", metavar="VERB")
    for name, verb in commands.VERBS.items():
        parents = [verb_parser(name)] if only in (None, name) else []
        verbs.add_parser(name, help=verb.help, parents=parents, add_help=not parents,
                         description=parents[0].description if parents else verb.help,
                         epilog=parents[0].epilog if parents else None,
                         formatter_class=Formatter)
    return root


def verbs_of(root: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The verbs' parsers under :func:`root_parser`'s ``root``."""
    return [parser for action in root._subparsers._group_actions  # type: ignore[union-attr]
            for parser in action.choices.values()]
