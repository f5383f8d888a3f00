"""How a session's roles came up: what ``serve --detach`` waits for before
it says the session started.

A session whose orchestrator could not start (its ``command`` is not on
PATH, it exited at once) is no session: saying "started" and exiting 0 would
leave the user to find the reason in the server log.  So the start waits for
the start role to leave ``booting`` (briefed and at its prompt, showing a
question, or failed) and reports each role that failed by then with its
reason.  A start role shown up but never briefed (a program that draws
nothing, one that never rests) is reported with why, not as up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from choragos.roles.rolestatus import NOT_BRIEFED, RoleStatus
from choragos.session.news import RoleView

# Between looks at a booting orchestrator: a start takes seconds, and each
# look is one message to its actor.
LOOK_EVERY = 0.1


@dataclass
class StartReport:
    """The roles as the start left them."""

    failed: dict[str, str] = field(default_factory=dict)  # role -> why it did not start
    waiting: list[str] = field(default_factory=list)      # showing a question at start
    booting: list[str] = field(default_factory=list)      # not up by the deadline
    unbriefed: dict[str, str] = field(default_factory=dict)  # role -> why its brief waits


def outcome(view: RoleView) -> str:
    """``booting``, ``failed``, ``waiting``, ``unbriefed`` or ``up``, for one role's view."""
    if view.status in (RoleStatus.STARTING, RoleStatus.BOOTING):
        return "booting"
    if view.status in (RoleStatus.FAILED, RoleStatus.EXITED):
        return "failed"
    if view.status is RoleStatus.WAITING:
        return "waiting"
    return "unbriefed" if view.detail.startswith(NOT_BRIEFED) else "up"


def why(view: RoleView) -> str:
    """The reason a role is down, in words the operator can act on."""
    if view.status is RoleStatus.EXITED:
        # What it printed before it went is in its transcript.
        return (f"it exited ({view.detail or view.exit or 'no status'}); what it printed "
                f"is in .choragos/logs/{view.name}.log")
    return view.detail or f"it is {view.status}"


def watch_start(look: Callable[[str], RoleView | None], start: str, roles: Iterable[str],
                stopped: threading.Event, timeout: float) -> StartReport:
    """Wait (at most ``timeout`` s, or until ``stopped``) for role ``start``
    to be up or down, then report on every role in ``roles``.  ``look``
    returns a role's view now (None: not known at the moment)."""
    deadline = time.monotonic() + timeout
    while not stopped.is_set() and time.monotonic() < deadline:
        view = look(start)
        if view is not None and outcome(view) != "booting":
            break
        stopped.wait(LOOK_EVERY)
    report = StartReport()
    for name in roles:
        view = look(name)
        state = outcome(view) if view is not None else "booting"
        if state == "failed":
            report.failed[name] = why(view)
        elif state == "unbriefed":
            report.unbriefed[name] = view.detail
        elif state in ("waiting", "booting"):
            getattr(report, state).append(name)
    return report

