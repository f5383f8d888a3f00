"""``choragos status``: every role's state in the running session."""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client, _target

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COLUMNS = [("name", "ROLE"), ("state", "STATE"), ("pid", "PID"), ("restarts", "RESTARTS"),
            ("task", "TASK"), ("spent", "COST/BUDGET"), ("model", "MODEL"), ("profile", "AGENT"),
            ("command", "COMMAND")]


def run(argv: list[str], verb: str = "status") -> int:
    """Entry point for ``choragos status``."""
    return _client.guard(verb, lambda: _status(argv, verb), json=_client.wants_json(argv))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, "Show every role's state in the running session.")
    made.add_argument("--json", action="store_true", help="print the session's answer as JSON")
    _target.add_option(made)
    return made


def _status(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    ack = _client.send_to(*_target.session(args, verb), {"cmd": "status"})
    return _client.print_json(ack) if args.json else _client.say(render(ack))


def render(ack: dict[str, Any]) -> str:
    """The roster as a table, or a sentence when the session has no roles."""
    roles = ack.get("roles")
    if not isinstance(roles, list) or not roles:
        return "the session has no roles"
    rows = [_row(role) for role in roles if isinstance(role, dict)]
    columns = _COLUMNS
    if any(row.get("host") for row in rows):  # a HOST column only when a role runs elsewhere
        columns = [*_COLUMNS[:2], ("host", "HOST"), *_COLUMNS[2:]]
    table = _client.table(rows, columns, {"task": 40, "command": 32})
    table += "".join(f"\n{line}" for line in _reasons(roles))
    session = ack.get("budget")
    if isinstance(session, dict):
        then = ("model calls are refused" if session.get("action") == "block"
                else "every role was paused")
        over = f" (over: {then})" if session.get("over") else ""
        table += (f"\nsession budget: {_money(session.get('cost'))} of "
                  f"{_money(session.get('usd'))}{over}")
    notices = ack.get("notices")
    if isinstance(notices, list):  # what the start said (a session before them has none)
        table += "".join(f"\nat the start: {_client.inert(str(n))}" for n in notices)
    return table


def _reasons(roles: list) -> list[str]:
    """Why each failed or exited role is down, or a starting one held back (too
    little memory): the table has no room for it."""
    lines = []
    for role in roles:
        if not isinstance(role, dict) or role.get("state") not in ("failed", "exited",
                                                                   "starting"):
            continue
        why = role.get("detail") or role.get("exit")
        if why:
            lines.append(f"{role.get('name')} {role.get('state')}: {_client.inert(str(why))}")
    return lines


def _row(role: dict[str, Any]) -> dict[str, Any]:
    """The state with its marks (``idle, stalled``), and spending against the budget."""
    marks = role.get("marks")
    state = str(role.get("state"))
    until = role.get("limited_until")
    if state == "limited" and isinstance(until, int | float):
        import time
        state += " until " + time.strftime("%H:%M:%S", time.localtime(until))
    state = ", ".join([state, *(marks if isinstance(marks, list) else [])])
    budget = role.get("budget") if isinstance(role.get("budget"), dict) else {}
    spent = _money(role.get("cost")) if role.get("cost") is not None else ""
    if spent and role.get("estimated"):
        spent = "~" + spent  # a model [pricing] lacks, priced at its highest prices
    if budget.get("usd") is not None:
        spent = f"{spent or '$?'}/{_money(budget['usd'])}"
    elif budget.get("tokens"):
        used = sum(v for v in (role.get("tokens") or {}).values() if isinstance(v, int))
        spent = f"{used}/{budget['tokens']} tok"
    return {**role, "state": state, "spent": spent}


def _money(value: object) -> str:
    return f"${value:.2f}" if isinstance(value, int | float) else "-"
