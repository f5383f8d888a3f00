"""``choragos cancel T5``: take back a task its role has not been given yet.

A task waiting in its role's queue (or at its approve gate) is withdrawn:
it ends ``rejected`` and the orchestrator is told, with the reason.  One
already typed into its role cannot be taken back unseen by its agent.
"""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client


def run(argv: list[str], verb: str = "cancel") -> int:
    """Entry point for ``choragos cancel``."""
    return _client.guard(verb, lambda: _cancel(argv, verb), json=_client.wants_json(argv))


def arguments(verb: str) -> ArgumentParser:
    made = _client.parser(verb, "Take back a task not yet typed into its role (queued, or "
                                "at its approve gate); the orchestrator is told.")
    made.add_argument("id", help="the task id, such as T5")
    made.add_argument("--reason", default="", metavar="TEXT",
                      help="why it is cancelled; passed on to the orchestrator")
    made.add_argument("--json", action="store_true", help="print the session's answer as JSON")
    made.missing = "name the task to cancel, such as T5"
    return made


def _cancel(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    task_id = (args.id or "").strip()
    if not task_id:
        raise _client.Failure(_client.EXIT_USAGE, "cancel needs a task id, such as T5")
    payload = {"cmd": "cancel", "id": task_id}
    if args.reason:
        payload["reason"] = args.reason
    ack = _client.send(args.sock, payload)
    if args.json:
        return _client.print_json(ack)
    return _client.say(f"cancelled {_client.inert(ack.get('id') or task_id)}")
