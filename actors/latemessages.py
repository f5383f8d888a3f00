"""The messages of the actors the session starts after its roles: the
clocks (``actors/clocks.py``), the aftercare (``actors/aftercare.py``) and
the gateway prober (``actors/gatewayprober.py``), with the prober's health
and state, which the gateway's gate and runner share.

The core and its policies name these before the first agent is spawned;
the actors themselves are loaded only as they start, after the spawns (the
start's serial part is shorter by their modules).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from choragos.gateway.client import Totals
from choragos.gitstore.worktrees import MergeResult

if TYPE_CHECKING:
    from choragos.roles.verify import VerifyResult

# -- the clocks ----------------------------------------------------------------


@dataclass(frozen=True)
class StartClock:
    """Start a task's timeout clock (``left``: what a resumed session's clock had left)."""

    task_id: str
    role: str
    seconds: float
    left: float | None = None  # a resumed session's clock starts with what it had left


@dataclass(frozen=True)
class StopClock:
    """Stop ``task_id``'s clock: its task needs it no more."""

    task_id: str


@dataclass(frozen=True)
class PauseClocks:
    """The role is held (paused, or waiting out a limit): its tasks' clocks stop."""

    role: str


@dataclass(frozen=True)
class ResumeClocks:
    """The role is held no more: its tasks' clocks run on from what they had left."""

    role: str


@dataclass(frozen=True)
class TimedOut:
    """To the core: a task's clock ran out before its work-done."""

    task_id: str
    role: str
    seconds: float


# -- the aftercare -------------------------------------------------------------


@dataclass(frozen=True)
class CheckWork:
    """To the aftercare: measure what a reported task changed, then run its verify command."""

    task_id: str
    checkpoint: str | None      # the task's checkpoint ref: what changes are measured from
    cwd: Path                   # the role's tree, where verify runs
    verify: str = ""            # the command line, or "" for none
    timeout: float = 600.0
    branch: str = ""            # a worktree role's branch: its work is committed there
    message: tuple[str, str] = ("", "")  # the commit's subject and body
    env: dict[str, str] | None = None  # the role's environment, which verify runs with
    role: str = ""              # whose work it is: verify runs with that role's authority
    label: str = ""             # the task's first line, for the snapshot taken at its report


@dataclass(frozen=True)
class WorkChecked:
    """To the core: what a task's check found (its changes, its verify, its commit)."""

    task_id: str
    changes: tuple[dict, ...] | None = None   # None: not measured (see error)
    error: str = ""
    verify: VerifyResult | None = None
    seconds: float = 0.0
    unmerged: bool = False      # a worktree role's branch holds work to merge
    commit_error: str = ""      # why a worktree role's work could not be committed
    commit: str = ""            # a worktree role's branch head once committed: what was checked


@dataclass(frozen=True)
class AftercareFailed:
    """To the core: something went wrong off its thread that the log must hold."""

    event: str
    task_id: str
    error: str


@dataclass(frozen=True)
class MergeWork:
    """To the aftercare: checkpoint the main tree, then merge a worktree role's branch."""

    task_id: str
    role: str
    label: str
    branch: str
    tree: Path | None           # the role's worktree, brought up to date after a merge
    message: str
    commit: str = ""            # what to merge (a merge gate's pinned commit); "": the branch
    since: float = 0.0          # a resumed merge: its own leftovers older than this are cleared


@dataclass(frozen=True)
class MergeDone:
    """To the core: how a merge went, and the main tree's checkpoint taken before it."""

    task_id: str
    result: MergeResult
    checkpoint: str = ""        # the main tree's checkpoint taken just before the merge
    checkpoint_error: str = ""


# -- the gateway prober ---------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """The timer's: scrape the gateway's metrics now (its health and token totals)."""


@dataclass(frozen=True)
class FlushTick:
    """The timer's: time to tell the core to write the token totals."""


@dataclass(frozen=True)
class GatewayHealth:
    """To the core, on a change only."""

    up: bool
    reason: str


@dataclass(frozen=True)
class TokenTotals:
    """To the core, after every good scrape."""

    totals: Totals


@dataclass(frozen=True)
class FlushTokens:
    """To the core: write the cumulative "tokens" events (every 30 s and at stop)."""

    force: bool = False


class Health:
    """Up or down, written by the prober and read by socket threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.up = False
        self.known = False
        self.reason = "not probed yet"

    def set(self, up: bool, reason: str) -> bool:
        """Record a probe result; True when it changed what we knew."""
        with self._lock:
            changed = not self.known or up != self.up
            self.up, self.known, self.reason = up, True, reason
            return changed


@dataclass
class ProberState:
    """The prober's state: the gateway's metrics URL, its health, its last good totals."""

    url: str
    health: Health = field(default_factory=Health)
    totals: Totals = field(default_factory=dict)  # the last good scrape (seeds a restarted gateway)
