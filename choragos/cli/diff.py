"""``choragos diff ID``: exactly what one task changed.

Its checkpoint against the snapshot taken when it reported (see
choragos/gitstore/taskdiff.py), for a task done in the workspace, in a role's
worktree, or merged from one.  Reads the repository around the current
directory; no session is needed.
"""

from __future__ import annotations

import re
import sys
from argparse import ArgumentParser

from choragos.cli import _client, _target
from choragos.gitstore.taskdiff import TaskDiffError, task_diff

_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# A patch carries file contents: on a terminal its escape sequences are shown,
# never run.  Tabs and line ends stay as they are.
_SHOWN = {cp: f"\\x{cp:02x}" for cp in (*range(0x20), *range(0x7F, 0xA0)) if cp not in (9, 10)}


def run(argv: list[str], verb: str = "diff") -> int:
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.bare_parser(verb, "Show exactly what one task changed: its checkpoint "
                                     "against the snapshot taken when it reported.")
    made.add_argument("id", metavar="ID", help="the task, such as T3")
    _target.add_option(made)
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    if not _TASK_ID.fullmatch(args.id):
        raise _client.Failure(_client.EXIT_USAGE, f"'{_client.inert(args.id)}' is not a task "
                                                  "id (such as T3)")  # quoted: '' shows too
    try:
        found = task_diff(_target.directory(args, verb, ".choragos"), args.id)
    except TaskDiffError as exc:
        raise _client.Failure(_client.EXIT_REFUSED, str(exc)) from None
    if not found.reported:
        print(f"note: {found.title}", file=sys.stderr)
    if not found.patch:
        return _client.say(f"{args.id} changed no file")
    patch = found.patch.translate(_SHOWN) if sys.stdout.isatty() else found.patch
    sys.stdout.write(patch if patch.endswith("\n") else patch + "\n")
    return _client.EXIT_OK
