"""The control protocol: request validation, ack builders, the client side.

One JSON object per connection, one JSON ack back.  The server
half lives in ``choragos.ctlserver``; this module is what the CLI verbs load,
so it imports only the standard library.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from choragos import paths

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_REQUEST = 1024 * 1024
DEADLINE = 5.0
# Board and status answers grow with the session; this only stops a runaway.
MAX_ACK = 64 * 1024 * 1024
MAX_TARGETS = 64
MAX_ID = 64

# Commands the session still accepts while an enforced gateway is down:
# they change or inspect the team, never hand out work.
# rollback only restores files; it sends no agent any work.
GATEWAY_EXEMPT = frozenset({"reload", "ping", "shutdown", "status", "board", "whoami",
                            "rollback"})
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
    parser = _COMMANDS.get(cmd)
    if parser is None:
        known = ", ".join(sorted(_COMMANDS))
        raise WireError(f"unknown command {_show(cmd)}; known commands: {known}")
    return {"cmd": cmd, **parser(obj)}


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


def _delegate(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "to": _targets(obj.get("to")),
        "task": _text(obj, "task", "delegate", required=True),
        "brief": _abs_path(obj, "brief"),
        "require_live": _flag(obj, "require_live"),
    }


def _flag(obj: dict[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise WireError(f'"{key}" must be true or false, not {_kind(value)}')
    return value


OUTCOMES = ("done", "failed", "blocked")


def _work_done(obj: dict[str, Any]) -> dict[str, Any]:
    done = _flag(obj, "done")
    outcome = obj.get("outcome", "done")
    if outcome not in OUTCOMES:
        raise WireError(f'"outcome" must be "done", "failed" or "blocked", not {_show(outcome)}')
    return {
        "id": _task_id(obj, "work-done"),
        "task": _text(obj, "task", "work-done", required=True),
        "report": _abs_path(obj, "report"),
        "done": done,
        "outcome": outcome,
    }


def _gate(obj: dict[str, Any]) -> dict[str, Any]:
    action = obj.get("action", "list")
    if action not in ("list", "approve", "reject"):
        raise WireError(f'"action" must be "list", "approve" or "reject", not {_show(action)}')
    task_id = _task_id(obj, f"gate {action}") if action != "list" else None
    reason = _text(obj, "reason", "gate", required=False) if action == "reject" else ""
    return {"action": action, "id": task_id, "reason": reason}


MAX_HANDOFF_WAIT = 3600


def _handoff(obj: dict[str, Any]) -> dict[str, Any]:
    wait = obj.get("wait", 300)
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not (
            1 <= wait <= MAX_HANDOFF_WAIT):
        raise WireError(f'"wait" must be a number of seconds from 1 to {MAX_HANDOFF_WAIT}')
    return {"config": _abs_path(obj, "config"), "wait": wait}


def _role_command(obj: dict[str, Any]) -> dict[str, Any]:
    role = obj.get("role")
    if role is None:
        raise WireError('this command needs "role": the name of a role')
    problem = paths.check_role_name(role)
    if problem:
        raise WireError(problem)
    return {"role": role}


# Keys an operator may press into a role from the CLI (``choragos keys``),
# enough to answer an agent's dialog without the deck.
KEY_NAMES = ("enter", "esc", "tab", "space", "backspace", "up", "down", "left", "right",
             "ctrl+c")
MAX_KEYS = 64
MAX_INPUT_TEXT = 4096


def _input(obj: dict[str, Any]) -> dict[str, Any]:
    request = _role_command(obj)
    keys = obj.get("keys", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise WireError('"keys" must be a list of key names')
    if len(keys) > MAX_KEYS:
        raise WireError(f'"keys" has {len(keys)} keys; the limit is {MAX_KEYS}')
    unknown = [k for k in keys if k.lower() not in KEY_NAMES]
    if unknown:
        raise WireError(f"unknown key {_show(unknown[0])}; use one of: {', '.join(KEY_NAMES)}")
    text = _text(obj, "text", "input", required=False)
    if len(text) > MAX_INPUT_TEXT:
        raise WireError(f'"text" is {len(text)} characters; the limit is {MAX_INPUT_TEXT}')
    if not keys and not text:
        raise WireError('input needs "text" or "keys"')
    return {**request, "text": text, "keys": [k.lower() for k in keys]}


def _no_fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {}


def _board(obj: dict[str, Any]) -> dict[str, Any]:
    archived = obj.get("archived", False)
    if not isinstance(archived, bool):
        raise WireError(f'"archived" must be true or false, not {_kind(archived)}')
    return {"archived": archived}


MAX_ROLLBACK_TARGET = 200


def _rollback(obj: dict[str, Any]) -> dict[str, Any]:
    target = _text(obj, "target", "rollback", required=True)
    if len(target) > MAX_ROLLBACK_TARGET or any(ch.isspace() for ch in target):
        raise WireError('"target" must be a task id (T3), pre-rollback-T3 or a checkpoint '
                        f"ref, not {_show(target)}")
    dry_run = obj.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise WireError(f'"dry_run" must be true or false, not {_kind(dry_run)}')
    return {"target": target, "dry_run": dry_run}


_COMMANDS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "delegate": _delegate,
    "work-done": _work_done,
    "gate": _gate,
    "restart": _role_command,
    "pause": _role_command,
    "resume": _role_command,
    "input": _input,
    "reload": _no_fields,
    "ping": _no_fields,
    "shutdown": _no_fields,
    "board": _board,
    "status": _no_fields,
    "handoff": _handoff,
    "whoami": _no_fields,
    "rollback": _rollback,
}

COMMANDS = frozenset(_COMMANDS)


def _targets(value: object) -> list[str]:
    if value is None:
        raise WireError('delegate needs "to": the target role names')
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list):
        raise WireError(f'"to" must be a list of role names, not {_kind(value)}')
    if not names:
        raise WireError('"to" must name at least one role')
    if len(names) > MAX_TARGETS:
        raise WireError(f'"to" names {len(names)} roles; the limit is {MAX_TARGETS}')
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


def _task_id(obj: dict[str, Any], cmd: str) -> str:
    value = _text(obj, "id", cmd, required=True)
    if len(value) > MAX_ID or any(ch.isspace() or not ch.isprintable() for ch in value):
        raise WireError(f'"id" must be a short task id such as "T3", not {_show(value)}')
    return value


def _abs_path(obj: dict[str, Any], key: str) -> str | None:
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


# --- acks -----------------------------------------------------------------

def ok(**fields: Any) -> dict[str, Any]:
    """A success ack: delivered to the session, not necessarily done."""
    return {"status": "ok", **fields}


def error(reason: str, **fields: Any) -> dict[str, Any]:
    """A refusal ack carrying one plain sentence."""
    return {"status": "error", "error": reason, **fields}


def gateway_refusal(request: dict[str, Any]) -> dict[str, Any] | None:
    """The ack refusing ``request`` while an enforced gateway is down.

    None means the command may proceed anyway.  Gate listings are read-only
    and pass; gate decisions release work and are refused.
    """
    cmd = request.get("cmd")
    if cmd in GATEWAY_EXEMPT or (cmd == "gate" and request.get("action") == "list"):
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

def request(sock: Path, payload: dict[str, Any], timeout: float = DEADLINE, *,
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
        _connect(conn, Path(sock), timeout, workdir)
        try:
            _send(conn, data, deadline)
            raw = _read_all(conn, deadline)
        except TimeoutError:
            raise Unreachable(f"timed out after {timeout:g}s waiting for the session") from None
        except OSError as exc:
            raise Unreachable(f"lost the connection to the session at {sock}: "
                              f"{exc.strerror or exc}") from None
    return parse_ack(raw)


def _connect(conn: socket.socket, sock: Path, timeout: float, workdir: Path | None) -> None:
    conn.settimeout(timeout)
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


def _owner(sock: Path) -> int | None:
    try:
        return os.stat(sock).st_uid
    except OSError:
        return None


def _hidden(sock: Path) -> bool:
    """A socket a session named for us whose very directory we cannot see."""
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
