"""``choragos kill [--all]``: stop sessions cleanly.

Each session is asked to ``shutdown`` (its roles get SIGTERM, then SIGKILL
after a grace period, and the event log is closed); a server that is still
there after ``--wait`` seconds gets SIGTERM.  Without ``--all``, the session
of this directory (or the nearest parent with one) is stopped.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from argparse import ArgumentParser
from pathlib import Path

from choragos.cli import _client
from choragos.cli.ls import find_sessions
from choragos.control import wire
from choragos.session import daemon

MAX_WAIT = 3600.0  # seconds --wait may be: an hour is already far past any clean stop


def run(argv: list[str], verb: str = "kill") -> int:
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, "Stop this directory's session, or every session (--all).")
    made.add_argument("--all", action="store_true", help="stop every running session")
    made.add_argument("--wait", type=_client.seconds("--wait", 0, MAX_WAIT), default=20.0,
                      metavar="SECONDS",
                      help="how long to wait for each session to stop (default 20)")
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    if args.all:
        targets = [(Path(s["socket"]), s["pid"], s["dir"]) for s in find_sessions(args.sock)]
        if not targets:
            print("no choragos sessions are running")
            return _client.EXIT_OK
    else:
        sock, _ = _client.socket_for(args.sock)
        ack = _client.send(str(sock), {"cmd": "ping"})
        targets = [(sock, ack.get("pid"), ack.get("dir", "?"))]
    failed = 0
    for sock, pid, where in targets:
        failed += not _stop(sock, pid, where, args.wait)
    return _client.EXIT_REFUSED if failed else _client.EXIT_OK


def _stop(sock: Path, pid: int | None, where: str, wait: float) -> bool:
    try:
        ack = wire.request(sock, {"cmd": "shutdown"}, 5.0)
        if ack["status"] != "ok":  # refused (from inside a role): no SIGTERM either
            print(f"{_client.inert(where)}: the session refused: {_client.inert(ack['error'])}",
                  file=sys.stderr)
            return False
    except (wire.Unreachable, wire.WireError) as exc:
        if pid is None or not daemon.alive(pid):
            print(f"{_client.inert(where)}: already stopped")
            return True
        print(f"{_client.inert(where)}: shutdown not answered ({exc.reason}); sending SIGTERM")
    if pid is None:
        print(f"stopped the session in {_client.inert(where)}")
        return True
    if _gone(pid, wait):
        print(f"stopped the session in {_client.inert(where)} (pid {pid})")
        return True
    os.kill(pid, signal.SIGTERM)
    if _gone(pid, 10.0):
        print(f"stopped the session in {_client.inert(where)} (pid {pid}, after SIGTERM)")
        return True
    print(f"{_client.inert(where)}: pid {pid} is still running; stop it with kill -9 {pid}")
    return False


def _gone(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while daemon.alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True
