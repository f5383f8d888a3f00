"""``choragos gate``: list, approve or reject gated delegations.

The headless counterpart of the deck's approval overlay.
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace

from choragos.cli import _client

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COLUMNS = [("id", "ID"), ("role", "ROLE"), ("age", "AGE"), ("label", "TASK"),
            ("brief", "BRIEF")]


def run(argv: list[str], verb: str = "gate") -> int:
    """Entry point for ``choragos gate``."""
    return _client.guard(verb, lambda: _gate(argv, verb), json=_client.wants_json(argv))


def _gate(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    payload = _payload(args)
    ack = _client.send(args.sock, payload)
    if args.json:
        return _client.print_json(ack)
    if args.action == "list":
        return _client.say(listing(ack))
    verb_done = "approved" if args.action == "approve" else "rejected"
    return _client.say(f"{verb_done} {_client.inert(ack.get('id') or args.id)}")


def arguments(verb: str) -> ArgumentParser:
    made = _client.parser(verb, "List, approve or reject delegations waiting for approval.")
    made.add_argument("action", nargs="?", default="list", choices=("list", "approve", "reject"),
                      help="list the gates (the default), or approve or reject one")
    made.add_argument("id", nargs="?", help="the gated task id (approve, reject)")
    made.add_argument("--reason", default="", metavar="TEXT",
                      help="why a delegation is rejected; passed on to the orchestrator")
    made.add_argument("--json", action="store_true", help="print the session's answer as JSON")
    return made


def _payload(args: Namespace) -> dict[str, Any]:
    if args.reason and args.action != "reject":
        # Said, not dropped: a reason written on an approval was meant for someone.
        raise _client.Failure(_client.EXIT_USAGE, "--reason goes with `gate reject` only; "
                                                  "nothing was done")
    if args.action == "list":
        if args.id is not None:
            raise _client.Failure(_client.EXIT_USAGE, "gate list takes no task id")
        return {"cmd": "gate", "action": "list"}
    if args.id is None or not args.id.strip():
        # An empty id (a variable unset) is a slip, not a task the session should look up.
        raise _client.Failure(_client.EXIT_USAGE, f"gate {args.action} needs a task id, "
                                                  "such as T4")
    payload = {"cmd": "gate", "action": args.action, "id": args.id.strip()}
    if args.reason:
        payload["reason"] = args.reason
    return payload


def listing(ack: dict[str, Any]) -> str:
    """The gate queue as a table, or a sentence when it is empty."""
    gates = ack.get("gates")
    if not isinstance(gates, list) or not gates:
        return "no delegations are waiting for approval"
    rows = [_row(gate) for gate in gates if isinstance(gate, dict)]
    return _client.table(rows, _COLUMNS, {"label": 48})


def _row(gate: dict[str, Any]) -> dict[str, Any]:
    return {**gate, "age": _client.duration(gate.get("age")),
            "brief": _client.short_path(gate.get("brief"))}
