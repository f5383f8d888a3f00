"""``choragos attach``: bring the deck of this directory's session to this terminal.

One client at a time: when someone else is attached, the refusal names
their pid; ``--force`` takes the deck over (so a dead SSH session cannot
lock you out).  Attaching from inside one of the session's own panes is
refused.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path

from choragos.cli import _client, _target
from choragos.session.daemon import ui_path_for


def run(argv: list[str], verb: str = "attach") -> int:
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, "Attach this terminal to the deck of the running session "
                                "(the nearest one up from this directory).")
    made.add_argument("--force", action="store_true",
                      help="take the deck over from the client attached now")
    _target.add_option(made)
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    control, workdir = _target.session(args, verb)
    from choragos.ui.attach import attach_to

    return attach_to(ui_path_for(Path(control)), force=args.force, workdir=workdir)
