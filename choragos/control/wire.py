"""The control protocol: request validation, ack builders, the client side.

One JSON object per connection, one JSON ack back.  The server
half lives in ``choragos.control.server``; this module is what the CLI verbs load,
so it imports only the standard library.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time

from choragos.control import commands, paths

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

MAX_REQUEST = 1024 * 1024
DEADLINE = 5.0
# Board and status answers grow with the session; this only stops a runaway.
MAX_ACK = 64 * 1024 * 1024
# The commands and their schemas are declared in choragos/control/commands.py.
COMMANDS = frozenset(commands.COMMANDS)
KEY_NAMES = commands.KEY_NAMES

GATEWAY_DOWN = "dispatch refused: gateway down"
# Set by the server on every parsed request, never read from the wire: the
# peer's pid, and the role whose process tree it belongs to (None: operator).
PEER_PID = "peer_pid"
CALLER = "caller"


class WireError(Exception):
    """A request or ack that breaks the protocol; ``reason`` is one sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Unreachable(Exception):
    """The session could not be reached; ``reason`` says why, plainly.
    ``retry``: the request was never sent (a full accept queue, a refused
    connect), so sending it again cannot duplicate anything.  ``alive``: the
    session is there but saturated (its accept queue is full)."""

    def __init__(self, reason: str, retry: bool = False, alive: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry
        self.alive = alive


# --- requests -------------------------------------------------------------

def parse_request(raw: bytes) -> dict[str, Any]:
    """Decode and validate one request; return a new, normalised dict.

    Raises WireError (and nothing else) for anything that is not a valid
    request.  Unknown fields are dropped; optional fields are always present
    in the result (None, "" or False when not sent).
    """
    obj = _decode_object(raw)
    cmd = obj.get("cmd")
    if cmd is None:
        raise WireError('the request has no "cmd" field')
    if not isinstance(cmd, str):
        raise WireError(f'"cmd" must be a string, not {_kind(cmd)}')
    command = commands.COMMANDS.get(cmd)
    if command is None:
        known = ", ".join(sorted(COMMANDS))
        raise WireError(f"unknown command {_show(cmd)}; known commands: {known}")
    return {"cmd": cmd, **_fields(command, obj)}


def _decode_object(raw: bytes) -> dict[str, Any]:
    if not isinstance(raw, bytes | bytearray | memoryview):
        raise WireError("the request must be bytes")
    if len(raw) > MAX_REQUEST:
        raise WireError("request too large (limit 1 MiB)")
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("the request is not valid UTF-8") from None
    try:
        obj = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise WireError("the request is nested too deeply") from None
    except ValueError as exc:
        raise WireError(f"the request is not valid JSON ({_json_reason(exc)})") from None
    if not isinstance(obj, dict):
        raise WireError(f"the request must be a JSON object, not {_kind(obj)}")
    return obj


def _no_constants(name: str) -> None:
    # NaN and Infinity are not JSON; Python would accept them by default.
    raise ValueError(f"{name} is not valid JSON")


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc)[:80]


def _fields(command: commands.Command, obj: dict[str, Any]) -> dict[str, Any]:
    """Check ``obj`` against the command's declared fields, in their order."""
    parsed: dict[str, Any] = {}
    for field in command.fields:
        if field.when is not None and not field.when.holds(parsed):
            parsed[field.name] = field.default
            continue
        who = command.name if field.when is None else (
            f"{command.name} {parsed[field.when.field]}")
        parsed[field.name] = _CHECKS[field.kind](obj, field, who)
    if command.one_of and not any(parsed[name] for name in command.one_of):
        wanted = " or ".join(f'"{name}"' for name in command.one_of)
        raise WireError(f"{command.name} needs {wanted}")
    return parsed


def _flag(obj: dict[str, Any], field: commands.Field, who: str) -> bool:
    key = field.name
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise WireError(f'"{key}" must be true or false, not {_kind(value)}')
    return value


def _choice(obj: dict[str, Any], field: commands.Field, who: str) -> str:
    value = obj.get(field.name, field.default)
    if value not in field.choices:
        *most, last = (f'"{choice}"' for choice in field.choices)
        raise WireError(f'"{field.name}" must be {", ".join(most)} or {last}, '
                        f"not {_show(value)}")
    return value


def _seconds(obj: dict[str, Any], field: commands.Field, who: str) -> int | float:
    value = obj.get(field.name, field.default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            1 <= value <= field.limit):
        raise WireError(f'"{field.name}" must be a number of seconds from 1 to {field.limit}')
    return value


def _role(obj: dict[str, Any], field: commands.Field, who: str) -> str:
    role = obj.get(field.name)
    if role is None:
        raise WireError(f'this command needs "{field.name}": the name of a role')
    problem = paths.check_role_name(role)
    if problem:
        raise WireError(problem)
    return role


def _keys(obj: dict[str, Any], field: commands.Field, who: str) -> list[str]:
    keys = obj.get(field.name, [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise WireError(f'"{field.name}" must be a list of key names')
    if len(keys) > field.limit:
        raise WireError(f'"{field.name}" has {len(keys)} keys; the limit is {field.limit}')
    unknown = [k for k in keys if k.lower() not in field.choices]
    if unknown:
        raise WireError(f"unknown key {_show(unknown[0])}; use one of: "
                        f"{', '.join(field.choices)}")
    return [k.lower() for k in keys]


def _limited_text(obj: dict[str, Any], field: commands.Field, who: str) -> str:
    text = _text(obj, field.name, who, required=field.required)
    if field.limit is not None and len(text) > field.limit:
        raise WireError(f'"{field.name}" is {len(text)} characters; the limit is {field.limit}')
    return text


def _targets(obj: dict[str, Any], field: commands.Field, who: str) -> list[str]:
    key, value = field.name, obj.get(field.name)
    if value is None:
        raise WireError(f'{who} needs "{key}": the target role names')
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list):
        raise WireError(f'"{key}" must be a list of role names, not {_kind(value)}')
    if not names:
        raise WireError(f'"{key}" must name at least one role')
    if len(names) > field.limit:
        raise WireError(f'"{key}" names {len(names)} roles; the limit is {field.limit}')
    for name in names:
        problem = paths.check_role_name(name)
        if problem:
            raise WireError(problem)
    # Naming a role twice would hand it the same task twice.
    return list(dict.fromkeys(names))


def _text(obj: dict[str, Any], key: str, cmd: str, *, required: bool) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        if value is None:
            raise WireError(f'{cmd} needs "{key}": a non-empty string')
        raise WireError(f'"{key}" must be a string, not {_kind(value)}')
    _check_clean(key, value)
    if required and not value.strip():
        raise WireError(f'{cmd} needs a non-empty "{key}"')
    return value


def _task_id(obj: dict[str, Any], field: commands.Field, who: str) -> str:
    value = _text(obj, field.name, who, required=True)
    if len(value) > field.limit or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise WireError(f'"{field.name}" must be a short task id such as "T3", '
                        f"not {_show(value)}")
    return value


def _abs_path(obj: dict[str, Any], field: commands.Field, who: str) -> str | None:
    key = field.name
    value = obj.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise WireError(f'"{key}" must be a path string, not {_kind(value)}')
    _check_clean(key, value)
    if not os.path.isabs(value):
        raise WireError(f'"{key}" must be an absolute path, not {_show(value)}')
    return value


def _check_clean(key: str, value: str) -> None:
    if "\x00" in value:
        raise WireError(f'"{key}" contains a NUL character')
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise WireError(f'"{key}" contains invalid Unicode (a lone surrogate)') from None


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _show(value: object) -> str:
    """A short, escaped rendering of a client-supplied value for error text."""
    if isinstance(value, list | dict):
        # repr of a deeply nested value can itself hit the recursion limit.
        return _kind(value)
    text = repr(value)
    return text if len(text) <= 42 else text[:40] + "..."


# How each kind of declared field is checked (kinds: choragos/control/commands.py).
_CHECKS: dict[str, Callable[[dict[str, Any], commands.Field, str], Any]] = {
    commands.TEXT: _limited_text,
    commands.PATH: _abs_path,
    commands.FLAG: _flag,
    commands.CHOICE: _choice,
    commands.TASK_ID: _task_id,
    commands.ROLE: _role,
    commands.ROLES: _targets,
    commands.KEYS: _keys,
    commands.SECONDS: _seconds,
}


# --- acks -----------------------------------------------------------------

def ok(**fields: Any) -> dict[str, Any]:
    """A success ack: delivered to the session, not necessarily done."""
    return {"status": "ok", **fields}


def error(reason: str, **fields: Any) -> dict[str, Any]:
    """A refusal ack carrying one plain sentence."""
    return {"status": "error", "error": reason, **fields}


def envelope(verb: str, payload: dict[str, Any], *, error: str | None = None,
             code: int = 0) -> dict[str, Any]:
    """The ``--json`` answer of the CLI (docs/cli.md), which the web API shares:
    ``ok`` and ``verb`` first, the fields beside them, ``error`` and ``exit``
    (the CLI's exit status) when it failed."""
    fields = {k: v for k, v in payload.items() if k not in ("status", "ok", "verb")}
    if error is None:
        return {"ok": True, "verb": verb, **fields}
    return {"ok": False, "verb": verb, **fields, "error": error, "exit": code}


def gateway_refusal(request: dict[str, Any]) -> dict[str, Any] | None:
    """The ack refusing ``request`` while an enforced gateway is down.

    None means the command may proceed anyway: those that change or inspect
    the team, never hand out work (declared ``gateway_exempt``).  Gate
    listings are read-only and pass; gate decisions release work and are refused.
    """
    command = commands.COMMANDS.get(request.get("cmd"))
    if command is not None and command.exempt_while_gateway_down(request):
        return None
    return error(GATEWAY_DOWN)


def encode(message: dict[str, Any]) -> bytes:
    """One message on the wire: compact JSON and a newline."""
    return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"


def parse_ack(raw: bytes) -> dict[str, Any]:
    """Decode the session's answer; WireError when it is not a valid ack."""
    if not raw.strip():
        raise WireError("the session closed the connection without answering")
    try:
        ack = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise WireError("the session sent an answer that is not valid JSON") from None
    if not isinstance(ack, dict) or ack.get("status") not in ("ok", "error"):
        raise WireError('the session sent an answer without a valid "status"')
    if ack["status"] == "error" and not isinstance(ack.get("error"), str):
        raise WireError("the session refused without saying why")
    return ack


# --- the client -----------------------------------------------------------

def request(sock: Path | str, payload: dict[str, Any], timeout: float = DEADLINE, *,
            workdir: Path | None = None) -> dict[str, Any]:
    """Send one request to the session at ``sock`` and return its ack.

    The whole exchange must finish within ``timeout`` seconds.  An error ack
    is returned, not raised: the caller decides what a refusal means.
    Raises Unreachable when no answer could be had, WireError for a
    malformed one.  ``workdir`` only improves the "not running" message.
    """
    deadline = time.monotonic() + timeout
    data = encode(payload)
    with _unix_socket() as conn:
        _connect(conn, sock, timeout, workdir)
        try:
            _send(conn, data, deadline)
            raw = _read_all(conn, deadline)
        except TimeoutError:
            raise Unreachable(f"timed out after {timeout:g}s waiting for the session") from None
        except OSError as exc:
            raise Unreachable(f"lost the connection to the session at {sock}: "
                              f"{exc.strerror or exc}") from None
    return parse_ack(raw)


def _connect(conn: socket.socket, sock: Path | str, timeout: float,
             workdir: Path | None) -> None:
    _wait_in_line(conn, timeout)
    try:
        conn.connect(os.fspath(sock))
    except FileNotFoundError:
        if _hidden(sock):
            raise Unreachable(f"{SANDBOX_HINT} ({sock} is not visible from here)") from None
        where = f" for {workdir}" if workdir else ""
        raise Unreachable(f"no choragos session is running{where} (socket {sock} not found); "
                          "start one with `choragos serve`") from None
    except ConnectionRefusedError:
        raise Unreachable(f"connection refused: the session at {sock} is not answering "
                          "(it may have crashed; `choragos serve` starts a new one)",
                          retry=True) from None
    except BlockingIOError:
        raise Unreachable(f"the session at {sock} is not accepting connections fast "
                          "enough (its queue is full)", retry=True, alive=True) from None
    except TimeoutError:
        raise Unreachable(f"timed out after {timeout:g}s waiting for the session") from None
    except PermissionError as exc:
        if _owner(sock) not in (None, os.getuid()):
            raise Unreachable(f"permission denied opening {sock}: "
                              "the session belongs to another user") from None
        raise Unreachable(f"{SANDBOX_HINT} ({exc.strerror or exc} on {sock})") from None
    except OSError as exc:
        raise Unreachable(f"cannot connect to {sock}: {exc.strerror or exc}") from None


def _wait_in_line(conn: socket.socket, timeout: float) -> None:
    """Make a connect to a full accept queue wait up to ``timeout`` for a
    place, in line with every other client.  A timed socket is non-blocking
    underneath, and its connect fails at once when the queue is full: under
    a storm of connects it loses every race for the place the session frees,
    however often it tries."""
    conn.setblocking(True)
    seconds = max(int(timeout), 0)
    micros = int((max(timeout, 0.0) - seconds) * 1_000_000)
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                        struct.pack("ll", seconds, micros))
    except OSError:
        conn.settimeout(timeout)  # where a send timeout cannot be set: fail fast as before


# Agent CLIs often run their shell commands in a sandbox (seccomp, Landlock,
# a private mount namespace) that refuses unix sockets or hides the runtime
# directory; that is not another user's session, and must not read like one.
SANDBOX_HINT = ("the socket could not be opened: the agent's sandbox may block it; "
                "see docs/agents.md")


def _unix_socket() -> socket.socket:
    try:
        return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except PermissionError as exc:  # a seccomp filter refusing AF_UNIX
        raise Unreachable(f"{SANDBOX_HINT} ({exc.strerror or exc})") from None


def _owner(sock: Path | str) -> int | None:
    try:
        return os.stat(sock).st_uid
    except OSError:
        return None


def _hidden(sock: Path | str) -> bool:
    """A socket a session named for us whose very directory we cannot see."""
    from pathlib import Path  # only on this error path: the agents' verbs start without it

    named = os.environ.get(paths.SOCK_ENV)
    return bool(named) and Path(named) == Path(sock) and not Path(sock).parent.exists()


def _send(conn: socket.socket, data: bytes, deadline: float) -> None:
    _arm(conn, deadline)
    try:
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        # The session may refuse before reading everything (a request over
        # the size cap); its ack is still waiting to be read.
        pass


def _read_all(conn: socket.socket, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        _arm(conn, deadline)
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            # Linux reports a reset after the peer closed with our bytes
            # unread, but only once the ack it sent has been consumed.
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ACK:
            raise WireError("the session's answer is too large")
    return b"".join(chunks)


def _arm(conn: socket.socket, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    conn.settimeout(remaining)
