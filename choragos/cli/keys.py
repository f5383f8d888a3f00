"""``choragos keys ROLE [KEY ...] [--text TEXT]``: press keys in a role's pane.

For headless sessions: answer an agent's permission dialog or question
without the deck, e.g. ``choragos keys coder Enter`` or
``choragos keys coder --text y Enter``.  The text is typed first, then the
keys in order.
"""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client
from choragos.control import wire
from choragos.plural import counted


def run(argv: list[str], verb: str = "keys") -> int:
    return _client.guard(verb, lambda: _keys(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, "Type text and press named keys in a role's pane.")
    made.add_argument("role", help="the role's name")
    made.add_argument("keys", nargs="*", metavar="KEY",
                      help=f"key names: {', '.join(wire.KEY_NAMES)} (any case)")
    made.add_argument("--text", default="", help="text to type before the keys")
    made.missing = "name the role and the keys to press, such as `choragos keys coder Enter`"
    return made


def _keys(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_intermixed_args(argv)  # keys may come before or after --text
    role = _client.role_name(args.role)
    keys = [key.lower() for key in args.keys]
    bad = [key for key in keys if key not in wire.KEY_NAMES]
    if bad:
        raise _client.Failure(_client.EXIT_USAGE, f"unknown key {bad[0]!r}; use one of: "
                                                   f"{', '.join(wire.KEY_NAMES)}")
    if not keys and not args.text:
        raise _client.Failure(_client.EXIT_USAGE, "give some keys or --text to type")
    _client.send(args.sock, {"cmd": "input", "role": role, "text": args.text, "keys": keys})
    typed = f"{counted(len(args.text), 'character')} and " if args.text else ""
    return _client.say(f"sent {typed}{counted(len(keys), 'key')} to {role}")
