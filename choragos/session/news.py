"""The news the session core publishes to its subscribers (the UI actor).

Each state change the deck shows is one small frozen dataclass; a
subscriber dispatches on the type, never on a string tag.  A task travels
as the board's own frozen ``Task`` (never the live board), a gate as a
:class:`GateView` of it; each has the ``as_dict()`` row the wire uses.
Nothing here knows about urwid or pykka: the deck's reducer
(``ui/reducer.py``) is tested without either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from choragos.board.tasks import Task
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
    # (monotonic) quiet, but wanting the CPU since then, for long: nothing is typed
    busy_held: float | None = None
    profile: str = ""  # the agent profile its screen is read with
    limited_until: float | None = None  # wall clock: when a provider's limit is waited out

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.status, "pid": self.pid,
                "restarts": self.restarts, "ready": self.ready, "detail": self.detail,
                "preview": list(self.preview), "exit": self.exit, "stalled": self.stalled,
                "held": self.held, "busy_held": self.busy_held is not None,
                "limited_until": self.limited_until,
                "profile": self.profile}


@dataclass(frozen=True)
class RoleChanged:
    """A role's published view changed (status, pid, preview …): the news
    the core makes of a role actor's ``RoleReported``."""

    view: RoleView


@dataclass(frozen=True)
class TaskChanged:
    """A board entry was created, moved or annotated: the task itself, a frozen
    value (its ``as_dict()`` is the row the wire and the deck show)."""

    task: Task


@dataclass(frozen=True)
class GateView:
    """What waits for a person: an approve gate (``kind`` None), a merge gate
    (the branch, its diff and the commit the diff was made at) or a hold
    (``kind`` names it; ``diff``, the file it shows)."""

    task: Task
    kind: str | None = None
    diff: str | None = None
    branch: str | None = None
    commit: str | None = None
    label: str | None = None  # instead of the task's own label
    created: float | None = None  # when the gate opened; the task's creation by default

    @property
    def id(self) -> str:
        return self.task.id

    def as_dict(self) -> dict[str, Any]:
        """The task's row with what the gate adds, as the deck and the web page read it."""
        row = self.task.as_dict()
        details = {"kind": self.kind, "diff": self.diff, "branch": self.branch,
                   "commit": self.commit, "label": self.label, "created": self.created}
        row.update((key, value) for key, value in details.items() if value is not None)
        return row


@dataclass(frozen=True)
class GateOpened:
    """A task waits for a human: an approve gate, a merge gate or a hold."""

    gate: GateView


@dataclass(frozen=True)
class GateClosed:
    """A merge gate or hold was decided (here, from the CLI or the board)."""

    task_id: str


@dataclass(frozen=True)
class EventLogged:
    """A record written to the event log: the event's name, when it was
    written, and the fields that event carries (the log is open-ended: each
    event names its own), read-only; ``as_dict()`` is the record as written."""

    event: str
    at: float | None = None
    fields: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> EventLogged:
        rest = {key: value for key, value in record.items() if key not in ("event", "t")}
        return cls(str(record.get("event", "")), record.get("t"), MappingProxyType(rest))

    def as_dict(self) -> dict[str, Any]:
        head = {"t": self.at} if self.at is not None else {}
        return {**head, "event": self.event, **self.fields}


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
class RoleUsage:
    """One role's tokens and cost; its ``as_dict()`` is the row ``status`` shows."""

    tokens: Mapping[str, int]
    cost: float | None = None
    estimated: tuple[str, ...] = ()  # its models [pricing] lacks: priced at the highest
    budget: Mapping[str, Any] | None = None  # its caps, and whether it is over one

    def as_dict(self) -> dict[str, Any]:
        return {"tokens": dict(self.tokens), "cost": self.cost, "estimated": list(self.estimated),
                "budget": dict(self.budget) if self.budget is not None else None}


def role_usages(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, RoleUsage]:
    """The usage rows the core answers ``status`` with, typed for the news."""
    return {role: RoleUsage(row["tokens"], row.get("cost"), tuple(row.get("estimated") or ()),
                            row.get("budget")) for role, row in rows.items()}


@dataclass(frozen=True)
class TokensChanged:
    """Per-role token usage and cost, as ``status`` shows it."""

    usages: Mapping[str, RoleUsage]


@dataclass(frozen=True)
class MarksChanged:
    """The guard marks (over budget, stalled …) per role."""

    marks: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, marks: Mapping[str, tuple[str, ...]]) -> MarksChanged:
        return cls(MappingProxyType({role: tuple(found) for role, found in marks.items()}))


News = (RoleChanged | TaskChanged | GateOpened | GateClosed | EventLogged | Bell
        | GatewayChanged | TokensChanged | MarksChanged)
