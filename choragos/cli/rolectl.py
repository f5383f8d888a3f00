"""``choragos restart|pause|resume ROLE``: one role's process;
``choragos restart --gateway``: a given-up built-in gateway, at once.

One module serves the three verbs; ``main`` passes the verb it was run as.
"""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client

_ABOUT = {
    "restart": ("restarted", "Restart a role; a manual restart resets its restart budget. "
                "With --gateway: start a given-up built-in gateway again now."),
    "pause": ("paused", "Pause a role: SIGSTOP its process group until resumed."),
    "resume": ("resumed", "Resume a paused role (SIGCONT), or set a role held by a "
               "provider's limit going now, before its reset."),
}


def run(argv: list[str], verb: str = "restart") -> int:
    """Entry point for ``choragos restart``, ``pause`` and ``resume``."""
    return _client.guard(verb, lambda: _control(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, _ABOUT[verb][1])
    if verb != "restart":
        made.add_argument("role", help="the role's name")
        made.missing = f"name the role to {verb}"
        return made
    made.add_argument("role", nargs="?", help="the role's name")
    made.add_argument("--gateway", action="store_true",
                      help="start a given-up built-in gateway again now, not after its "
                           "cool-down")
    return made


def _control(argv: list[str], verb: str) -> int:
    if verb not in _ABOUT:
        raise _client.Failure(_client.EXIT_USAGE, f"unknown role command {verb!r}")
    done = _ABOUT[verb][0]
    args = arguments(verb).parse_args(argv)
    if getattr(args, "gateway", False):
        if args.role is not None:
            raise _client.Failure(_client.EXIT_USAGE, "give a role or --gateway, not both")
        _client.send(args.sock, {"cmd": verb, "gateway": True})
        return _client.say("the built-in gateway is being started again; "
                           "`choragos status` shows when it is on")
    if args.role is None:
        raise _client.Failure(_client.EXIT_USAGE, "name the role to restart (or --gateway)")
    role = _client.role_name(args.role)
    answer = _client.send(args.sock, {"cmd": verb, "role": role})
    # A resume that lifted a provider's limit hold says so (docs/cli.md).
    return _client.say(_client.inert(answer.get("message") or f"{done} {role}"))
