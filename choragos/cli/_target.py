"""Which session a read verb or ``attach`` reaches: ``-t/--target``, the
session of this directory (or the nearest parent), or, when there is none
here and exactly one runs, that one (said on stderr, so nobody is misled).

Only the verbs that read or show (``attach``, ``status``, ``board``,
``report``, ``logs``, ``diff``) fall back to the only session running: a
verb that changes something never acts on another directory's session
unless told to.
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from choragos.cli import _client
from choragos.control import paths


def add_option(made: argparse.ArgumentParser) -> None:
    made.add_argument("-t", "--target", metavar="DIR|NAME",
                      help="the session to use: its directory, or its directory's name as "
                           "`choragos ls` shows it (default: this directory's session, else "
                           "the only one running)")


def session(args: argparse.Namespace, verb: str) -> tuple[Path, Path | None]:
    """The control socket to use and the directory it serves (when known)."""
    if getattr(args, "sock", None):
        return _client.socket_for(args.sock)
    if args.target:  # said on this command line: it wins over $CHORAGOS_SOCK
        return _named(args.target)
    if os.environ.get(paths.SOCK_ENV):
        return _client.socket_for(None)
    sock, workdir = _client.socket_for(None)
    if sock.exists():
        return sock, workdir
    only = _only_running(verb, workdir)
    if only is None:
        return sock, workdir
    return Path(only["socket"]), Path(only["dir"])


def directory(args: argparse.Namespace, verb: str, holding: str) -> Path:
    """The project whose files a verb reads (``report``, ``logs``, ``diff``):
    the target's; else this directory or the nearest parent holding
    ``holding`` (a relative path); else, unless $CHORAGOS_SOCK names a
    session, the only running session's; else this directory."""
    here = Path.cwd()
    if args.target:
        return _named(args.target)[1] or here
    for folder in (here, *here.parents):
        if (folder / holding).exists():
            return folder
    if os.environ.get(paths.SOCK_ENV):  # a session named by its socket: no guessing
        return here
    only = _only_running(verb, here)
    return Path(only["dir"]) if only is not None else here


def _named(target: str) -> tuple[Path, Path | None]:
    folder = Path(target).expanduser()
    sessions = _running()
    if os.path.isdir(folder):  # False, not OSError, for a name too long to look up
        return _of_directory(folder.resolve(), sessions)
    matches = [s for s in sessions if target in (s["dir"], Path(s["dir"]).name)]
    if len(matches) == 1:
        return Path(matches[0]["socket"]), Path(matches[0]["dir"])
    if matches:
        listed = ", ".join(_client.inert(s["dir"]) for s in matches)
        raise _client.Failure(_client.EXIT_USAGE, f"{_client.inert(target)!s} names "
                              f"{len(matches)} running sessions ({listed}); give the "
                              "directory instead")
    raise _client.Failure(_client.EXIT_UNREACHABLE,
                          f"no directory and no running session is named "
                          f"{_client.inert(target)}; `choragos ls` lists the running ones")


def _of_directory(folder: Path, sessions: list[dict]) -> tuple[Path, Path]:
    """The session of ``folder`` or its nearest parent: one ``ls`` lists (it
    may use a socket of its own), else the default socket path there."""
    for candidate in (folder, *folder.parents):
        found = [s for s in sessions if Path(s["dir"]) == candidate]
        if found:
            return Path(found[0]["socket"]), candidate
    # $CHORAGOS_SOCK names another session: the directory asked for wins.
    env = {k: v for k, v in os.environ.items() if k != paths.SOCK_ENV}
    return paths.find_socket(folder, env), folder


def _only_running(verb: str, here: Path | None) -> dict | None:
    """The one session running elsewhere (announced on stderr), or None when
    there is none; several are a Failure naming them."""
    sessions = _running()
    if not sessions:
        return None
    if len(sessions) > 1:
        listed = ", ".join(_client.inert(s["dir"]) for s in sessions)
        where = f" for {_client.inert(here)}" if here else ""
        raise _client.Failure(_client.EXIT_UNREACHABLE,
                              f"no choragos session is running{where}; {len(sessions)} run "
                              f"elsewhere ({listed}): pick one with -t DIR")
    if here is not None and Path(sessions[0]["dir"]) in (here, *here.parents):
        return sessions[0]  # this project's own (what was looked for is just not there)
    print(f"choragos {verb}: no session here; using the one running in "
          f"{_client.inert(sessions[0]['dir'])}", file=sys.stderr)
    return sessions[0]


def _running() -> list[dict]:
    from choragos.cli.ls import find_sessions

    return [s for s in find_sessions() if s.get("dir") and s.get("socket")]
