"""``choragos reload|ping|shutdown``: the field-less session commands."""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ABOUT = {
    "reload": "Re-read the config and converge the running session's roles on it.",
    "ping": "Check that a session answers on the control socket.",
    "shutdown": "Stop the running session and every role in it.",
}


def run(argv: list[str], verb: str = "ping") -> int:
    """Entry point for ``choragos reload``, ``ping`` and ``shutdown``."""
    return _client.guard(verb, lambda: _simple(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, _ABOUT[verb])
    if verb == "reload":
        made.add_argument("--loosen", action="store_true",
                          help="apply the file even where it loosens what only you decide "
                               "(a role added, what a role runs, gates, budgets, a role's "
                               "env, authority or host, hooks); without it such a reload is "
                               "refused and names them")
    return made


def _simple(argv: list[str], verb: str) -> int:
    if verb not in _ABOUT:
        raise _client.Failure(_client.EXIT_USAGE, f"unknown session command {verb!r}")
    args = arguments(verb).parse_args(argv)
    request = {"cmd": verb, "loosen": True} if getattr(args, "loosen", False) else {"cmd": verb}
    ack = _client.send(args.sock, request)
    return _client.say(summary(verb, ack))


def summary(verb: str, ack: dict[str, Any]) -> str:
    """One line per verb, with the session's own message when it sent one."""
    if verb == "ping":
        pid = ack.get("pid")
        line = f"a session is running (pid {_client.inert(pid)})" if pid else "a session is running"
    elif verb == "reload":
        line = "reloaded the configuration"
    else:
        line = "the session is shutting down"
    message = ack.get("message")
    return f"{line}: {_client.inert(message)}" if isinstance(message, str) and message else line
