"""``choragos work-done``: report a task back to the orchestrator.

Run by agents at the end of every task: standard library only, and its
usual arguments read without argparse (:mod:`choragos.cli._quickargs`).
"""

from __future__ import annotations

import os

from choragos.cli import _client
from choragos.cli._quickargs import CONST, TRUE, VALUE, Option, quick
from choragos.control import commands

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser
    from typing import Any


def run(argv: list[str], verb: str = "work-done") -> int:
    """Entry point for ``choragos work-done``."""
    return _client.guard(verb, lambda: _work_done(argv, verb))


OPTIONS = (
    Option("--id", VALUE, required=True, metavar="ID",
           help="the task id from the delegation, such as T3"),
    Option("--task", VALUE, required=True, metavar="TEXT",
           help="a one-line summary of what was done (with --failed: why; with --blocked: "
                "what is needed)"),
    Option("--report", VALUE, metavar="FILE", help="a file with the full report"),
    Option("--done", TRUE, group="outcome",
           help="the whole assignment is complete, not just this step"),
    Option("--failed", CONST, dest="outcome", const="failed", default="done",
           group="outcome", help="the task could not be done; --task says why"),
    Option("--blocked", CONST, dest="outcome", const="blocked", default="done",
           group="outcome", help="the task cannot go on without something; --task says what"),
)


def _work_done(argv: list[str], verb: str) -> int:
    args = quick(argv, (*OPTIONS, _client.SOCK)) or arguments(verb).parse_args(argv)
    payload: dict[str, Any] = {
        "cmd": "work-done",
        "id": _client.non_empty(args.id, "--id").strip(),
        "task": _client.non_empty(args.task, "--task"),
        "done": args.done,
    }
    if args.outcome != "done":  # absent means done: what older sessions understand
        payload["outcome"] = args.outcome
    if args.report is not None:
        payload["report"] = _client.existing_file(args.report, "report")
        if os.environ.get("CHORAGOS_REMOTE"):
            # On another machine than the session: the report travels along.
            payload["report_text"] = _client.file_text(payload["report"], "report",
                                                       commands.MAX_REPORT_TEXT)
    ack = _client.send(args.sock, payload)
    if ack.get("unknown"):
        # Passed on all the same (nothing acknowledged is lost), but the
        # caller named no task of this session: a script must hear that.
        raise _client.Failure(_client.EXIT_REFUSED, summary(ack, payload["id"]))
    return _client.say(summary(ack, payload["id"]))


def arguments(verb: str) -> ArgumentParser:
    made = _client.parser(verb, "Report a task's outcome to the orchestrator.")
    _client.add_options(made, OPTIONS)
    return made


def summary(ack: dict[str, Any], task_id: str) -> str:
    """``reported T3 (done)``."""
    shown = _client.inert(ack.get("id") or task_id)
    state = ack.get("state")
    line = f"reported {shown} ({_client.inert(state)})" if state else f"reported {shown}"
    warning = ack.get("warning")
    return f"{line}; note: {_client.inert(warning)}" if warning else line
