"""``choragos delegate``: hand a task to one or more roles.

Agents run this many times per session, so it loads only the standard
library and the few choragos modules it needs, and reads its usual
arguments without argparse (:mod:`choragos.cli._quickargs`).
"""

from __future__ import annotations

import sys

from choragos.cli import _client
from choragos.cli._quickargs import APPEND, TRUE, VALUE, Option, quick

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser
    from typing import Any

# How a task's state reads after the id; queued and delivered need no note.
_NOTES = {"gated": "waiting for approval", "queued": "", "delivered": ""}


def run(argv: list[str], verb: str = "delegate") -> int:
    """Entry point for ``choragos delegate``."""
    return _client.guard(verb, lambda: _delegate(argv, verb))


OPTIONS = (
    Option("--to", APPEND, required=True, metavar="ROLE[,ROLE]",
           help="target role(s); repeat or separate with commas"),
    Option("--task", VALUE, required=True, metavar="TEXT",
           help="the task, or a short label when --brief holds the details"),
    Option("--brief", VALUE, metavar="FILE", help="a file with the full task"),
    Option("--require-live", TRUE, help="refuse (create nothing) if a target has exited or "
           "failed, instead of queueing the task until it is back"),
)


def _delegate(argv: list[str], verb: str) -> int:
    args = quick(argv, (*OPTIONS, _client.SOCK)) or arguments(verb).parse_args(argv)
    payload: dict[str, Any] = {
        "cmd": "delegate",
        "to": _targets(args.to),
        "task": _client.non_empty(args.task, "--task"),
    }
    if args.brief is not None:
        payload["brief"] = _client.existing_file(args.brief, "brief")
    if args.require_live:
        payload["require_live"] = True
    ack = _client.send(args.sock, payload)
    warn(ack, verb)
    return _client.say(summary(ack, payload["to"]))


def warn(ack: dict[str, Any], verb: str) -> None:
    """The session's warnings (a target that is exited or failed), on stderr."""
    warnings = ack.get("warnings")
    for text in warnings if isinstance(warnings, list) else ():
        print(f"choragos {verb}: warning: {_client.inert(text)}", file=sys.stderr)


def arguments(verb: str) -> ArgumentParser:
    made = _client.parser(verb, "Hand a task to one or more roles of the running session.")
    _client.add_options(made, OPTIONS)
    return made


def _targets(values: list[str]) -> list[str]:
    names = [name.strip() for value in values for name in value.split(",")]
    if not any(names):
        raise _client.Failure(_client.EXIT_USAGE, "--to must name at least one role")
    if not all(names):
        # Said, not dropped: "coder,,reviewer" may be a name left out (a variable unset).
        spelled = ",".join(values)
        raise _client.Failure(_client.EXIT_USAGE, f"--to '{_client.inert(spelled)}' has an "
                              "empty role name; separate the names with single commas")
    return list(dict.fromkeys(_client.role_name(name) for name in names))


def summary(ack: dict[str, Any], targets: list[str]) -> str:
    """``delegated T3 to coder, T4 to release (waiting for approval)``."""
    tasks = ack.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return "delegated to " + ", ".join(targets)
    return "delegated " + ", ".join(_one(task) for task in tasks)


def _one(task: object) -> str:
    if not isinstance(task, dict):
        return _client.inert(task)
    text = f"{_client.inert(task.get('id', '?'))} to {_client.inert(task.get('role', '?'))}"
    state = task.get("state")
    note = _NOTES.get(state, state) if isinstance(state, str) else ""
    return f"{text} ({_client.inert(note)})" if note else text
