"""``choragos budget ROLE AMOUNT`` / ``choragos budget --session AMOUNT``.

Sets a budget in USD in the running session without editing the config:
a higher one re-arms the budget's alarm and lets a blocked role's model
calls through again.  Operator-only.  A reload re-reads the config file,
whose budgets then apply again.
"""

from __future__ import annotations

from argparse import ArgumentParser

from choragos.cli import _client

_ABOUT = ("Set a role's budget, or the whole session's (--session), in USD, in the running "
          "session; a higher budget unblocks a role its budget blocked.")


def run(argv: list[str], verb: str = "budget") -> int:
    return _client.guard(verb, lambda: _budget(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, _ABOUT)
    made.add_argument("--session", action="store_true", help="the crew-wide [budget] session")
    made.add_argument("words", nargs="+", metavar="ROLE AMOUNT",
                      help='the role and the amount in USD (e.g. coder 5.00); with --session, '
                      "the amount alone")
    return made


def _budget(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    words = args.words
    if len(words) != (1 if args.session else 2):
        raise _client.Failure(_client.EXIT_USAGE, "give a role and an amount (choragos budget "
                              "coder 5.00), or --session and an amount")
    amount = words[-1].strip().removeprefix("$")
    try:
        if not 0 < float(amount) < float("inf"):  # nan and inf fail it too
            raise ValueError
    except ValueError:
        raise _client.Failure(_client.EXIT_USAGE, f"{words[-1]!r} is not an amount of USD "
                              "above zero (e.g. 5.00)") from None
    request: dict = {"cmd": "budget", "amount": amount}
    if args.session:
        request["session"] = True
    else:
        request["role"] = _client.role_name(words[0])
    answer = _client.send(args.sock, request)
    return _client.say(answer.get("message", "budget set"))
