"""``choragos logs ROLE [-f]``: a role's transcript, one written line a line.

The transcript is ``.choragos/logs/<role>.log`` of the session's directory
(this one or the nearest parent holding it; ``-t`` names another; with none
here and one session running, that session's).  ``-f`` keeps printing what
is appended, across the file's rotation, until interrupted.  No session is
needed to read it.  Standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from argparse import ArgumentParser
from pathlib import Path

from choragos.cli import _client, _target

FOLLOW_EVERY = 0.25  # seconds between looks at a followed transcript
_ROTATED = 3  # the transcript's rotated predecessors: <role>.log.1 … .3


def run(argv: list[str], verb: str = "logs") -> int:
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.bare_parser(verb, "Print a role's transcript (.choragos/logs/ROLE.log).")
    made.add_argument("role", metavar="ROLE", help="the role, as `choragos status` names it")
    made.add_argument("-f", "--follow", action="store_true",
                      help="keep printing lines as they are written (Ctrl-C stops)")
    made.add_argument("-n", "--lines", type=int, metavar="N",
                      help="only the last N lines (then follow, with -f)")
    made.add_argument("--all", action="store_true",
                      help="the rotated older transcripts first, then the current one")
    _target.add_option(made)
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    role = _client.role_name(args.role)
    if args.lines is not None and args.lines < 0:
        raise _client.Failure(_client.EXIT_USAGE, "-n must be 0 or more")
    path = _transcript(args, verb, role)
    if not path.exists() and not args.follow:
        raise _client.Failure(_client.EXIT_REFUSED, f"{role} has no transcript at {path} "
                                                    "(the role never ran here?)")
    if not path.exists():
        # -f waits for it, as tail -F does; said, so an empty screen is not taken for a hang.
        print(f"choragos {verb}: {role} has no transcript yet at {_client.inert(path)}; "
              "waiting for it (Ctrl-C stops)", file=sys.stderr, flush=True)
    older, current = _read(path, args.all)
    _print_lines(older + current, args.lines)
    if args.follow:
        return _follow(path, len(current))
    return _client.EXIT_OK


def _transcript(args: argparse.Namespace, verb: str, role: str) -> Path:
    name = f".choragos/logs/{role}.log"
    return _target.directory(args, verb, name) / name


def _read(path: Path, with_rotated: bool) -> tuple[bytes, bytes]:
    """The rotated transcripts (when asked for), oldest first, and the current one."""
    older = [Path(f"{path}.{n}") for n in range(_ROTATED, 0, -1)] if with_rotated else []
    chunks = [_whole(each) for each in (*older, path)]
    return b"".join(chunks[:-1]), chunks[-1]


def _whole(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise _client.Failure(_client.EXIT_REFUSED,
                              f"cannot read {path}: {exc.strerror or exc}") from None


def _print_lines(data: bytes, last: int | None) -> None:
    lines = data.decode("utf-8", "replace").splitlines()
    if last is not None:
        lines = lines[len(lines) - last:] if last else []
    for line in lines:
        print(_client.inert(line))
    sys.stdout.flush()


def _follow(path: Path, at: int) -> int:
    """Print what is appended to ``path`` past ``at`` (what was printed); a
    rotated file is left for the new one."""
    ident = _where(path)[1]
    partial = b""
    try:
        while True:
            time.sleep(FOLLOW_EVERY)
            size, now = _where(path)
            if now != ident or size < at:  # rotated, replaced or truncated: start afresh
                at, ident, partial = 0, now, b""
            if size > at:
                data = partial + _chunk(path, at, size)
                at = size
                *whole, partial = data.split(b"\n")
                for line in whole:
                    print(_client.inert(line.decode("utf-8", "replace")))
                sys.stdout.flush()
    except KeyboardInterrupt:
        return _client.EXIT_OK


def _where(path: Path) -> tuple[int, tuple[int, int] | None]:
    try:
        info = os.stat(path)
    except OSError:
        return 0, None
    return info.st_size, (info.st_dev, info.st_ino)


def _chunk(path: Path, start: int, end: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            return handle.read(end - start)
    except OSError:
        return b""
