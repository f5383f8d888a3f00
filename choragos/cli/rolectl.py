"""``choragos restart|pause|resume ROLE``: one role's process.

One module serves the three verbs; ``main`` passes the verb it was run as.
"""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client

_ABOUT = {
    "restart": ("restarted", "Restart a role; a manual restart resets its restart budget."),
    "pause": ("paused", "Pause a role: SIGSTOP its process group until resumed."),
    "resume": ("resumed", "Resume a paused role (SIGCONT)."),
}


def run(argv: list[str], verb: str = "restart") -> int:
    """Entry point for ``choragos restart``, ``pause`` and ``resume``."""
    return _client.guard(verb, lambda: _control(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, _ABOUT[verb][1])
    made.add_argument("role", help="the role's name")
    return made


def _control(argv: list[str], verb: str) -> int:
    if verb not in _ABOUT:
        raise _client.Failure(_client.EXIT_USAGE, f"unknown role command {verb!r}")
    done = _ABOUT[verb][0]
    args = arguments(verb).parse_args(argv)
    role = _client.role_name(args.role)
    _client.send(args.sock, {"cmd": verb, "role": role})
    return _client.say(f"{done} {role}")
