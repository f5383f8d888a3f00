"""``choragos ls``: every running session of yours, across projects.

Sessions are found through the sidecar each server keeps next to its
control socket (``<hash>.json``), in the per-user socket directory and in
the directory of ``$CHORAGOS_SOCK``; each is confirmed alive with a
``ping``.  Standard library only.
"""

from __future__ import annotations

import os
import time
from argparse import ArgumentParser
from pathlib import Path

from choragos.cli import _client
from choragos.control import paths, wire
from choragos.session import daemon


def run(argv: list[str], verb: str = "ls") -> int:
    return _client.guard(verb, lambda: _main(argv, verb), json=_client.wants_json(argv))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.bare_parser(verb, "List the running choragos sessions.")
    # Not the shared --sock: ls asks every session it finds, this one's folder too.
    made.add_argument("--sock", metavar="PATH",
                      help="also look for sessions in this control socket's folder (as for "
                           "$CHORAGOS_SOCK); the per-user socket folder is always searched")
    made.add_argument("--json", action="store_true", help="print JSON")
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    sessions = find_sessions(args.sock)
    if args.json:
        return _client.print_json({"sessions": sessions})
    if not sessions:
        print("no choragos sessions are running")
        return _client.EXIT_OK
    now = time.time()
    rows = [{"dir": s["dir"], "pid": s["pid"], "mode": s.get("mode", "?"),
             "roles": ",".join(s.get("roles") or []),
             "attached": f"pid {s['attached']}" if s.get("attached") else "no",
             "uptime": _client.duration(now - s["started"]) if s.get("started") else "-"}
            for s in sessions]
    print(_client.table(rows, [("dir", "DIR"), ("pid", "PID"), ("mode", "MODE"),
                               ("attached", "ATTACHED"), ("uptime", "UP"),
                               ("roles", "ROLES")], {"roles": 48}))
    return _client.EXIT_OK


def search_dirs(option: str | None = None) -> list[Path]:
    dirs = [paths.socket_dir(os.environ)]
    for named in (option, os.environ.get(paths.SOCK_ENV)):
        if named:
            dirs.append(Path(named).absolute().parent)
    return list(dict.fromkeys(dirs))


def find_sessions(option: str | None = None) -> list[dict]:
    """Live sessions, each as its sidecar plus what its ping says."""
    found = []
    for side in daemon.read_sidecars(search_dirs(option)):
        sock = Path(side.get("socket", ""))
        try:
            ack = wire.request(sock, {"cmd": "ping"}, 2.0)
        except (wire.Unreachable, wire.WireError):
            continue
        if ack.get("status") != "ok":
            continue
        roles = ack.get("roles") or side.get("roles") or []
        found.append({"dir": ack.get("dir") or side.get("dir"), "pid": side["pid"],
                      "mode": side.get("mode"), "roles": roles,
                      "attached": side.get("attached"), "started": side.get("started"),
                      "socket": str(sock), "ui_socket": side.get("ui_socket"),
                      "version": side.get("version")})
    return sorted(found, key=lambda s: str(s["dir"]))
