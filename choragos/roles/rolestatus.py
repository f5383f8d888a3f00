"""A role's state machine: the states, and which may follow which.

The screen decides between working, waiting and idle; the process decides
starting, booting, paused, exited and failed; a provider's limit makes a live role
``limited`` until the session sets it going again.  A dead process is never shown as idle
or working: every live state leads to ``exited`` and only a new spawn leads
out of it.  A role whose first process has not been spawned yet (the
session's start, a reload's new role, a role held by the memory gate) is
``starting``, never ``exited``: it has not run, so it cannot have exited.
"""

from __future__ import annotations

from enum import StrEnum


class RoleStatus(StrEnum):
    STARTING = "starting"  # no process spawned yet: the first spawn is on its way
    BOOTING = "booting"
    WORKING = "working"
    WAITING = "waiting"   # blocked on a human: a permission dialog, a question
    IDLE = "idle"
    PAUSED = "paused"
    LIMITED = "limited"   # a provider's rate or usage limit: nothing is typed until it lifts
    EXITED = "exited"
    FAILED = "failed"     # could not start, or the restart budget is spent


# How a role's detail begins while its brief has not gone in (or did not land):
# the card, ``status`` and a detached start say so.
NOT_BRIEFED = "not briefed"

SCREEN_STATES = frozenset({RoleStatus.WORKING, RoleStatus.WAITING, RoleStatus.IDLE})
NO_PROCESS = frozenset({RoleStatus.STARTING, RoleStatus.EXITED, RoleStatus.FAILED})
LIVE_STATES = SCREEN_STATES | {RoleStatus.BOOTING, RoleStatus.PAUSED, RoleStatus.LIMITED}

ALLOWED: dict[RoleStatus, frozenset[RoleStatus]] = {
    # A first spawn boots, fails, or (a remote seat that cannot connect, a
    # stop before it) is an exit like any.
    RoleStatus.STARTING: frozenset({RoleStatus.BOOTING, RoleStatus.FAILED, RoleStatus.EXITED}),
    RoleStatus.BOOTING: SCREEN_STATES | {RoleStatus.PAUSED, RoleStatus.LIMITED,
                                         RoleStatus.EXITED},
    RoleStatus.WORKING: LIVE_STATES - {RoleStatus.BOOTING} | {RoleStatus.EXITED},
    RoleStatus.WAITING: LIVE_STATES - {RoleStatus.BOOTING} | {RoleStatus.EXITED},
    RoleStatus.IDLE: LIVE_STATES - {RoleStatus.BOOTING} | {RoleStatus.EXITED},
    RoleStatus.PAUSED: LIVE_STATES | {RoleStatus.EXITED},
    RoleStatus.LIMITED: LIVE_STATES - {RoleStatus.BOOTING} | {RoleStatus.EXITED},
    RoleStatus.EXITED: frozenset({RoleStatus.BOOTING, RoleStatus.FAILED}),
    RoleStatus.FAILED: frozenset({RoleStatus.BOOTING}),
}


class IllegalTransition(Exception):
    pass


def check(current: RoleStatus, new: RoleStatus) -> None:
    """Raise unless ``current`` may become ``new`` (staying put is allowed)."""
    if new != current and new not in ALLOWED[current]:
        raise IllegalTransition(f"a role cannot go from {current} to {new}")
