"""What every socket-talking verb shares: arguments, sending, printing.

Exit codes: 0 success, 1 the session refused, 2 bad arguments, 3 no usable
answer from a session.  Standard library only (the verbs must start fast);
argparse only once a verb builds its parser (:mod:`choragos.cli._argparser`).
"""

from __future__ import annotations

import os
import stat
import sys
import time
from contextlib import suppress

from choragos.cli._quickargs import VALUE, Option
from choragos.cli._quickargs import add as add_options
from choragos.control import commands, paths, wire
from choragos.inert import inert  # the verbs say _client.inert

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3

class Failure(Exception):
    """End the verb with ``code`` after printing ``message`` on stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def bare_parser(verb: str, description: str) -> ArgumentParser:
    """A parser for ``choragos VERB`` whose usage error is a :class:`Failure`,
    its examples (choragos/control/commands.py) under its ``--help``."""
    from choragos.cli._argparser import made_parser  # argparse: only when a verb parses

    return made_parser(verb, description)


# The shared ``--sock`` option (see :func:`parser`).
SOCK = Option("--sock", VALUE, metavar="PATH",
              help="control socket (default: $CHORAGOS_SOCK, else this directory's or the "
                   "nearest parent's session)")


def parser(verb: str, description: str) -> ArgumentParser:
    """A parser for ``choragos VERB`` with the shared ``--sock`` option."""
    made = bare_parser(verb, description)
    add_options(made, [SOCK])
    return made


class _Run:
    """The one verb this process runs, and whether it answers in JSON: what
    :func:`print_json` and a failure's envelope name."""

    verb = "choragos"
    json = False


def guard(verb: str, body: Callable[[], int], *, json: bool = False) -> int:
    """Run a verb body, turning failures into one stderr line and a code.

    With ``json`` (the verb was given ``--json``) a failure is also printed on
    stdout as the JSON envelope, so a script reads one document either way.
    """
    _tolerant_streams()
    _Run.verb, _Run.json = verb, json
    try:
        return body()
    except Failure as failure:
        print(f"choragos {verb}: {said(failure.message)}", file=sys.stderr)
        if json:
            _dump(envelope({}, error=failure.message, code=failure.code))
        return failure.code
    except SystemExit as leaving:  # --help and --version exit through argparse
        return leaving.code if isinstance(leaving.code, int) else EXIT_USAGE


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON (``--json``, or ``--json=...``,
    which argparse refuses), so a failure answers in the envelope as the
    success would.  No abbreviation is taken (see choragos/cli/_argparser.py)."""
    return any(word.partition("=")[0] == "--json" for word in argv)


# The longest failure line printed whole: a message quoting a 1 MB argument
# would otherwise fill the operator's scrollback with it.
SAID_LIMIT = 1000


def said(message: str) -> str:
    """A failure's message for the terminal: escapes made visible, and the
    middle of a very long one left out (saying how much)."""
    text = inert(message)
    if len(text) <= SAID_LIMIT:
        return text
    head, tail = text[:SAID_LIMIT - 200], text[-150:]
    return f"{head} … ({len(text) - len(head) - len(tail)} characters left out) … {tail}"


def socket_for(option: str | None) -> tuple[Path, Path | None]:
    """The socket to use and, when it was looked up, the directory it serves."""
    from pathlib import Path

    if option:
        return Path(option).absolute(), None
    if os.environ.get(paths.SOCK_ENV):
        return paths.find_socket(Path("."), os.environ), None
    try:
        cwd = Path.cwd()
    except OSError as exc:
        raise Failure(EXIT_USAGE, f"cannot tell the current directory: {exc.strerror}") from None
    return paths.find_socket(cwd, os.environ), cwd


def send(option: str | None, payload: dict[str, Any]) -> dict[str, Any]:
    """Send ``payload`` and return an ok ack; anything else is a Failure."""
    named = None if option else os.environ.get(paths.SOCK_ENV)
    # An agent's verb has its session's socket in the environment: taken as it
    # is, without pathlib (some 5 ms of an installed choragos' start).
    sock, workdir = (named, None) if named else socket_for(option)
    try:
        return send_to(sock, workdir, payload)
    except Failure as failure:
        if failure.code == EXIT_UNREACHABLE and not os.path.exists(sock):
            failure.message = _running_elsewhere(failure.message)
        raise


def _here() -> Path | None:
    """The current directory (a named socket says nothing of the project)."""
    from pathlib import Path

    with suppress(OSError):
        return Path.cwd()
    return None


def _running_elsewhere(message: str) -> str:
    """``message``, naming the sessions that do run when there are any: "start
    one" is the wrong advice when ``choragos ls`` shows one."""
    from choragos.cli.ls import find_sessions

    dirs = [inert(s["dir"]) for s in find_sessions() if s.get("dir")]
    if not dirs:
        return message
    head = message.partition("; start one with")[0]
    where = "a session runs in " if len(dirs) == 1 else "sessions run in "
    return (f"{head}; {where}{', '.join(dirs)} (`choragos ls`): run the verb in that "
            "directory; this verb never picks another directory's session by itself")


def send_to(sock: Path | str, workdir: Path | None, payload: dict[str, Any]
            ) -> dict[str, Any]:
    """:func:`send` to a socket already chosen (``-t/--target``)."""
    try:
        ack = _exchange(sock, payload, workdir)
    except Failure as failure:
        if failure.code == EXIT_UNREACHABLE:
            from choragos.session.resume import with_resume_hint

            failure.message = with_resume_hint(failure.message, workdir or _here())
        raise
    if ack["status"] != "ok":
        raise Failure(EXIT_REFUSED, f"the session refused: {ack['error']}")
    return ack


# How long a verb keeps retrying a session that is alive but saturated (a
# "busy" answer, a full accept queue): a burst of clients is worked through,
# not failed.  A refused connect (no session listening) and a "dropped"
# answer (the session had too many connections open) give up after the
# deadline, and every attempt has the whole deadline of its own.
BUSY_PATIENCE = 30.0


def _deadline(payload: dict[str, Any]) -> float:
    """The socket's deadline, or longer for a command whose work takes longer."""
    command = commands.COMMANDS.get(payload.get("cmd", ""))
    longer = command.answer_within if command is not None else None
    return max(wire.DEADLINE, longer or 0.0)


def _exchange(sock: Path | str, payload: dict[str, Any], workdir: Path | None
              ) -> dict[str, Any]:
    # "busy", "dropped", a full accept queue and a refused connect all mean the
    # session never handled the request, so sending it again cannot duplicate work.
    _check_socket(sock)
    start = time.monotonic()
    pause = 0.02
    while True:
        try:
            ack = wire.request(sock, payload, _deadline(payload), workdir=workdir)
        except wire.Unreachable as exc:
            if not exc.retry or not _keep_trying(start, pause, exc.alive):
                raise Failure(EXIT_UNREACHABLE, exc.reason) from None
        except wire.WireError as exc:
            raise Failure(EXIT_UNREACHABLE, exc.reason) from None
        else:
            if not _retry_answer(ack, start, pause):
                return ack
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def _check_socket(sock: Path | str) -> None:
    """A path that is there but no socket (a file, a folder) is a wrong
    --sock or $CHORAGOS_SOCK, not a session that crashed."""
    try:
        mode = os.stat(sock).st_mode
    except OSError:
        return  # not there: the connect says so, naming the sessions that run
    if not stat.S_ISSOCK(mode):
        raise Failure(EXIT_USAGE, f"{inert(sock)} is not a socket; --sock and $CHORAGOS_SOCK "
                                  "name a session's control socket (`choragos ls` lists the "
                                  "sessions)")


def _retry_answer(ack: dict[str, Any], start: float, pause: float) -> bool:
    """Whether a refusal that left the request unread is sent again."""
    if ack.get("busy") is True:
        return _keep_trying(start, pause, alive=True)
    return ack.get("dropped") is True and _keep_trying(start, pause, alive=False)


def _keep_trying(start: float, pause: float, alive: bool) -> bool:
    """Whether one more attempt after ``pause`` still fits the retry window."""
    window = BUSY_PATIENCE if alive else wire.DEADLINE
    return time.monotonic() + pause <= start + window


def file_text(path: str, what: str, limit: int) -> str:
    """The first ``limit`` characters of the text file ``path``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError as exc:
        raise Failure(EXIT_USAGE, f"cannot read the {what} file {path}: "
                                  f"{exc.strerror}") from None


def existing_file(path: str, what: str) -> str:
    """The absolute form of ``path``, which must be a non-empty regular file."""
    if not path:  # not the current directory, which it would be made absolute
        raise Failure(EXIT_USAGE, f"the {what} file's name is empty; name the file, or leave "
                                  f"--{what} out")
    absolute = os.path.abspath(path)
    try:
        info = os.stat(absolute)
    except FileNotFoundError:
        raise Failure(EXIT_USAGE, f"the {what} file {absolute} does not exist") from None
    except OSError as exc:
        raise Failure(EXIT_USAGE, f"cannot read the {what} file {absolute}: "
                                  f"{exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise Failure(EXIT_USAGE, f"the {what} file {absolute} is not a regular file")
    if info.st_size == 0:
        raise Failure(EXIT_USAGE, f"the {what} file {absolute} is empty")
    return absolute


def non_empty(text: str, option: str) -> str:
    """Refuse an empty or blank option value."""
    if not text.strip():
        raise Failure(EXIT_USAGE, f"{option} must not be empty")
    return text


def seconds(option: str, low: float, high: float) -> Callable[[str], float]:
    """An argparse ``type`` for a number of seconds from ``low`` to ``high``:
    anything else (a word, a negative, nan, inf) is a usage error before the
    verb does anything."""
    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:  # nan fails it too
            raise Failure(EXIT_USAGE, f"{option} takes a number of seconds from {low:g} to "
                                      f"{high:g}, not '{inert(text)}'")
        return value
    return check


def role_name(name: str) -> str:
    problem = paths.check_role_name(name)
    if problem:
        raise Failure(EXIT_USAGE, problem)
    return name


def say(line: str) -> int:
    """Print a success line (already made inert by the caller) and succeed."""
    print(line)
    return EXIT_OK


def envelope(payload: dict[str, Any], *, error: str | None = None,
             code: int = EXIT_OK) -> dict[str, Any]:
    """Every ``--json`` answer: ``ok`` and ``verb`` first, the verb's fields
    beside them, and ``error`` and ``exit`` when it failed (docs/cli.md)."""
    return wire.envelope(_Run.verb, payload, error=error, code=code)


def print_json(ack: dict[str, Any], *, error: str | None = None, code: int = EXIT_OK) -> int:
    """Print an answer (a session's ack or a verb's own fields) in the
    envelope; with ``error``, as a failure with exit status ``code``."""
    _dump(envelope(ack, error=error, code=code))
    return code


def _dump(document: dict[str, Any]) -> None:
    import json

    # ensure_ascii escapes every control character, so the raw ack is safe.
    print(json.dumps(document, indent=2, ensure_ascii=True))


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]],
          widths: dict[str, int] | None = None) -> str:
    """Render ``rows`` under ``columns`` (key, header) as aligned text."""
    limits = widths or {}
    cells = [[_cell(row.get(key), limits.get(key)) for key, _ in columns]
             for row in rows if isinstance(row, dict)]
    heads = [head for _, head in columns]
    sizes = [max(len(c) for c in column) for column in zip(heads, *cells, strict=True)]
    lines = [_line(heads, sizes), *(_line(row, sizes) for row in cells)]
    return "\n".join(lines)


def duration(value: object) -> str:
    """Seconds as a compact duration (``45s``, ``12m5s``, ``1h5m``); text as is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return inert(value) if value not in (None, "") else "-"
    from choragos.durations import format_duration  # the agents' verbs show none

    return format_duration(int(value))


def short_path(value: object) -> str:
    """A path relative to the current directory when it lies below it."""
    if not isinstance(value, str) or not value:
        return "-"
    with suppress(OSError, ValueError):
        relative = os.path.relpath(value)
        if not relative.startswith(".."):
            return inert(relative)
    return inert(value)


def _cell(value: object, limit: int | None) -> str:
    text = "-" if value is None or value == "" else inert(value)
    if limit and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def _line(cells: Sequence[str], sizes: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, sizes, strict=True)).rstrip()


def _tolerant_streams() -> None:
    # Text from the wire may hold lone surrogates; print them escaped
    # instead of dying with UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
