"""``choragos status``: every role's state in the running session (spec T6)."""

from __future__ import annotations

from choragos.cli import _client

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COLUMNS = [("name", "ROLE"), ("state", "STATE"), ("pid", "PID"), ("restarts", "RESTARTS"),
            ("task", "TASK"), ("model", "MODEL"), ("profile", "AGENT"), ("command", "COMMAND")]


def run(argv: list[str], verb: str = "status") -> int:
    """Entry point for ``choragos status``."""
    return _client.guard(verb, lambda: _status(argv, verb))


def _status(argv: list[str], verb: str) -> int:
    made = _client.parser(verb, "Show every role's state in the running session.")
    made.add_argument("--json", action="store_true", help="print the session's answer as JSON")
    args = made.parse_args(argv)
    ack = _client.send(args.sock, {"cmd": "status"})
    return _client.print_json(ack) if args.json else _client.say(render(ack))


def render(ack: dict[str, Any]) -> str:
    """The roster as a table, or a sentence when the session has no roles."""
    roles = ack.get("roles")
    if not isinstance(roles, list) or not roles:
        return "the session has no roles"
    return _client.table(roles, _COLUMNS, {"task": 40, "command": 32})
