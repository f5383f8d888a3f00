"""``choragos handoff [--config NEW]``: end the session on purpose, for a next team.

The orchestrator is asked to append to ``.choragos/memory.md`` and write
``.choragos/handoff.md``; once that file is written (or ``--wait`` runs
out) the session is shut down.  ``choragos serve --resume`` then starts the
next team (the new config's, when given) with the recap and the handoff.
"""

from __future__ import annotations

import os
import sys
import time
from argparse import ArgumentParser
from pathlib import Path

from choragos.cli import _client
from choragos.cli._argparser import named
from choragos.control import commands

SETTLE = 1.0  # the file must stay unchanged this long: the agent finished writing it


def run(argv: list[str], verb: str = "handoff") -> int:
    return _client.guard(verb, lambda: _handoff(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, "Ask the orchestrator to write .choragos/handoff.md, "
                                "then end the session; `choragos serve --resume` continues it.")
    made.add_argument("--config", metavar="NEW", type=named,
                      help="the config the next team runs with (roles it drops become history)")
    made.add_argument("--wait", default=300.0, metavar="SECONDS",
                      type=_client.seconds("--wait", 1, commands.MAX_HANDOFF_WAIT),
                      help="how long the orchestrator has to write the handoff (default 300)")
    return made


def _handoff(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    payload: dict = {"cmd": "handoff", "wait": args.wait}
    if args.config is not None:
        payload["config"] = _valid_config(Path(args.config))
    asked = time.time()
    ack = _client.send(args.sock, payload)
    # The wait can be minutes: say what it is for, so it is not taken for a hang.
    print(f"asked the orchestrator to write .choragos/handoff.md; waiting up to "
          f"{args.wait:g}s for it, then the session shuts down", file=sys.stderr, flush=True)
    written = _wait_for(Path(ack["file"]), asked, args.wait)
    _client.send(args.sock, {"cmd": "shutdown"})
    if written:
        return _client.say("the orchestrator wrote .choragos/handoff.md; the session is "
                           "shutting down; `choragos serve --resume` continues it")
    raise _client.Failure(_client.EXIT_REFUSED,
                          f"no .choragos/handoff.md within {args.wait:g}s, so no handoff "
                          "was made; the session is shutting down anyway; `choragos serve "
                          "--resume` continues it without one")


def _valid_config(path: Path) -> str:
    """The next team's config must load now, not fail at the next serve."""
    from choragos.config.model import ConfigError, load_config

    target = path.resolve()
    try:
        load_config(target, target.parent)
    except ConfigError as exc:
        # The errors on one line: the doctor hint's newline would show as "\n".
        raise _client.Failure(_client.EXIT_USAGE, f"{'; '.join(exc.errors)}; nothing was "
                                                  "changed") from None
    return str(target)


def _wait_for(path: Path, since: float, wait: float) -> bool:
    """True once ``path`` was written after ``since`` and has settled."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            mtime = 0.0
        if mtime >= since and time.time() - mtime >= SETTLE:
            return True
        time.sleep(0.2)
    return False
