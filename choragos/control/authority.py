"""Who may do what: the caller's role comes from the kernel, not from the caller.

The control socket tells the server the peer's pid (``SO_PEERCRED``).  A
request whose pid descends from a role's process, or belongs to the
session (``setsid``) a role's process leads, comes from that role.  So does
one from a process the session runs for a role (its ``verify``: see
:class:`Behalf`).  A process the session started for nobody in particular
(git and what git runs, a hook, the deck's editor) is no role and not the
operator either; so is a caller whose ancestry cannot be read to its end.
Only a process outside all of that is the operator.  ``CHORAGOS_ROLE`` is
never believed.

This guards against agents' mistakes and overreach (an orchestrator
approving its own gate, a worker closing another's task, a worker's verify
script approving a gate); it is not a wall against a same-user attacker, who
can leave the tree with ``setsid`` and a double fork.  See docs/security.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from choragos.control import commands
from choragos.terminal.ptyproc import stat_fields

# How many ancestors a walk reads before it gives up.  Deeper chains exist
# only when built on purpose, and a walk that gives up is never the operator.
MAX_DEPTH = 1024
# The two callers that are neither a role nor the operator.  Neither can be a
# role's name: those start with a letter or a digit.
SESSION = "(session)"
UNTRACED = "(untraced)"
_WHO = {SESSION: "a process the session started itself (git, what git runs, a hook, "
                 "the deck's editor)",
        UNTRACED: "a process whose ancestry could not be traced to its end (too deep, or a "
                  "parent vanished while it was read)"}


@dataclass(frozen=True)
class Trace:
    """Where a walk up a process's ancestry stopped."""

    holder: int | None   # the first pid of interest met: an ancestor, or a session it is in
    complete: bool       # the walk reached the top (init, or its namespace's)


def trace(pid: int, holders: Container[int], limit: int | None = None) -> Trace:
    """Walk from ``pid`` up through its parents (Linux /proc) until one of
    them, or the session one of them is in, is in ``holders``; at most
    ``limit`` (default :data:`MAX_DEPTH`) steps."""
    for _ in range(MAX_DEPTH if limit is None else limit):
        if pid <= 1:
            return Trace(None, True)
        if pid in holders:
            return Trace(pid, True)
        stat = _stat(pid)
        if stat is None:
            return Trace(None, False)
        parent, session = stat
        if session in holders:
            return Trace(session, True)
        pid = parent
    return Trace(None, False)


def _stat(pid: int) -> tuple[int, int] | None:
    """``pid``'s parent and session, or None when /proc cannot tell."""
    fields = stat_fields(pid)
    if len(fields) < 4 or not (fields[1].isdigit() and fields[3].isdigit()):
        return None
    return int(fields[1]), int(fields[3])


def caller_role(pid: int | None, role_pids: Mapping[int, str],
                server_pid: int | None = None) -> str | None:
    """The role ``pid`` acts for, :data:`SESSION` or :data:`UNTRACED`; None
    for the operator.  ``server_pid``: the session's own process, whose
    children that hold no role are :data:`SESSION` (the server itself, whose
    deck sends the operator's keys, is the operator)."""
    if not pid:
        return None
    holders = dict(role_pids)
    if server_pid and pid != server_pid:
        holders[server_pid] = SESSION
    found = trace(pid, holders)
    if found.holder is not None:
        return holders[found.holder]
    return None if found.complete else UNTRACED


class Behalf:
    """The processes the session runs for a role (its ``verify``), while they
    run: their pids count as that role's, like its agent's.  Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pids: dict[int, str] = {}

    def pids(self) -> dict[int, str]:
        with self._lock:
            return dict(self._pids)

    def acting_for(self, role: str) -> Callable[[int], AbstractContextManager[None]]:
        """What a runner calls with the pid it started, for as long as it runs."""
        return lambda pid: self._running(pid, role or SESSION)

    @contextmanager
    def _running(self, pid: int, role: str) -> Iterator[None]:
        with self._lock:
            self._pids[pid] = role
        try:
            yield
        finally:
            with self._lock:
                self._pids.pop(pid, None)


def operator_only(what: str, caller: str) -> str:
    """The refusal of an operator command ``what`` that ``caller`` (a role, or
    one of the callers that are no role) sent."""
    where = _WHO.get(caller) or f"inside the {caller} role's process tree"
    return f"{what} is an operator command and was sent from {where}; run it from your own terminal"


def refusal(request: dict, caller: str | None, may_delegate: bool) -> str | None:
    """Why ``caller`` may not send ``request``, or None.  ``work-done``
    ownership needs the board and is checked by the core."""
    if caller is None:
        return None
    cmd = request["cmd"]
    # Which commands only a person outside every role's process tree may use
    # is declared with each command (``operator`` in choragos/control/commands.py).
    command = commands.COMMANDS.get(cmd)
    if command is not None and command.operator_only(request):
        return operator_only(command.spoken_as(request), caller)
    if caller in _WHO and cmd in ("delegate", "work-done"):
        return (f"{cmd} was sent from {_WHO[caller]}, which is no role; only a role's own "
                "agent delegates or reports work done")
    if cmd == "delegate" and not may_delegate:
        return (f"{caller} may not delegate (set can_delegate = true on the role to allow "
                "it); report back with `choragos work-done` instead")
    return None
