"""The news the session core publishes to its subscribers (the UI actor).

Each state change the deck shows is one small frozen dataclass; a
subscriber dispatches on the type, never on a string tag.  Tasks and gates
travel as the plain dictionaries the board and the wire already use, so a
subscriber never holds a live board object.  Nothing here knows about urwid
or pykka: the deck's reducer (``ui/reducer.py``) is tested without either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from choragos.roles.rolestatus import RoleStatus


@dataclass(frozen=True)
class RoleView:
    """What everyone else may know about a role at one moment."""

    name: str
    status: RoleStatus
    pid: int | None = None
    restarts: int = 0
    ready: bool = False
    detail: str = ""
    preview: tuple[str, ...] = ()
    exit: str = ""
    budget_used: int = 0  # restarts counted against restart_retries
    stalled: bool = False  # no new output for the role's stall_after
    held: bool = False  # its input still shows a line it did not take: nothing is typed
    profile: str = ""  # the agent profile its screen is read with
    limited_until: float | None = None  # wall clock: when a provider's limit is waited out

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.status, "pid": self.pid,
                "restarts": self.restarts, "ready": self.ready, "detail": self.detail,
                "preview": list(self.preview), "exit": self.exit, "stalled": self.stalled,
                "held": self.held, "limited_until": self.limited_until,
                "profile": self.profile}


@dataclass(frozen=True)
class RoleChanged:
    """A role's published view changed (status, pid, preview …): the news
    the core makes of a role actor's ``RoleReported``."""

    view: RoleView


@dataclass(frozen=True)
class TaskChanged:
    """A board entry was created, moved or annotated (its ``as_dict()``)."""

    task: dict[str, Any]


@dataclass(frozen=True)
class GateOpened:
    """A task waits for a human: an approve gate, a merge gate or a hold."""

    gate: dict[str, Any]


@dataclass(frozen=True)
class GateClosed:
    """A merge gate or hold was decided (here, from the CLI or the board)."""

    task_id: str


@dataclass(frozen=True)
class EventLogged:
    """A record written to the event log."""

    record: dict[str, Any]


@dataclass(frozen=True)
class Bell:
    """A human is needed (a gate, an input dialog, a timeout) and [ui] bell is on."""

    role: str
    hook: str


@dataclass(frozen=True)
class GatewayChanged:
    """The gateway is "on" or "down"."""

    state: str


@dataclass(frozen=True)
class TokensChanged:
    """Per-role token usage and cost, as ``status`` shows it."""

    usages: dict[str, dict]


@dataclass(frozen=True)
class MarksChanged:
    """The guard marks (over budget, stalled …) per role."""

    marks: dict[str, tuple[str, ...]]


News = (RoleChanged | TaskChanged | GateOpened | GateClosed | EventLogged | Bell
        | GatewayChanged | TokensChanged | MarksChanged)
