"""``choragos board``: the running session's task board."""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client, _target
from choragos.gitstore.changes import files_cell
from choragos.plural import counted

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COLUMNS = [("id", "ID"), ("role", "ROLE"), ("state", "STATE"), ("age", "AGE"),
            ("duration", "TOOK"), ("files", "FILES"), ("label", "TASK"), ("brief", "BRIEF"),
            ("report", "REPORT"), ("note", "NOTE")]


def run(argv: list[str], verb: str = "board") -> int:
    """Entry point for ``choragos board``."""
    return _client.guard(verb, lambda: _board(argv, verb), json=_client.wants_json(argv))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, "Show the task board of the running session.")
    made.add_argument("--json", action="store_true", help="print the session's answer as JSON")
    made.add_argument("--all", action="store_true",
                      help="include the archive: the older done and rejected tasks")
    _target.add_option(made)
    return made


def _board(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    ack = _client.send_to(*_target.session(args, verb), {"cmd": "board", "archived": args.all})
    return _client.print_json(ack) if args.json else _client.say(render(ack, args.all))


def render(ack: dict[str, Any], with_archive: bool = False) -> str:
    """The board as a table, or a sentence when nothing was delegated yet."""
    tasks = ack.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return "the board is empty: nothing has been delegated yet"
    rows = [_row(task) for task in tasks if isinstance(task, dict)]
    table = _client.table(rows, _COLUMNS, {"label": 40, "note": 32})
    archived = ack.get("archived")
    if isinstance(archived, int) and archived and not with_archive:
        table += (f"\n({counted(archived, 'older done or rejected task')} archived: "
                  "`choragos board --all` lists them)")
    return table


def _row(task: dict[str, Any]) -> dict[str, Any]:
    return {**task,
            "age": _client.duration(task.get("age")),
            "duration": _client.duration(task.get("duration")),
            "files": files_cell(task),
            "brief": _client.short_path(task.get("brief")),
            "report": _client.short_path(task.get("report"))}
