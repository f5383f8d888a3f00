"""The core's side of the journal: what it appends, and what could not be.

The core journals next to its events; the board records every task change
itself (:class:`~choragos.actors.durable.JournaledBoard`).  A record that
cannot be written (a full disk) does not fail the change: it is noted, and
after the message the ack says so and a ``journal write failed`` event is
written.  While a timeout clock runs an ``alive`` record is written every
:data:`HEARTBEAT` seconds, so a crash's moment is known to a resume.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from choragos.actors.coreport import CorePort
from choragos.actors.durable import Heartbeat, unsaved_ack
from choragos.roles.rolestatus import RoleStatus
from choragos.session.news import RoleView

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

HEARTBEAT = 1.0  # seconds between "alive" records while a timeout clock runs


class CoreJournal:
    """Owns what could not be journaled during the message at hand and the
    pending heartbeat (``CoreState.heartbeat``)."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s
        self.unsaved: list[str] = []

    def begin(self) -> None:
        """A message begins: nothing unsaved yet."""
        self.unsaved = []

    def settle(self, result: Any) -> Any:
        """After a message: say what could not be journaled, in the log and in an ok ack."""
        if not self.unsaved:
            return result
        self.port.event("journal write failed", error=self.unsaved[0])
        return unsaved_ack(result, self.unsaved[0])

    def note_unsaved(self, exc: OSError) -> None:
        self.unsaved.append(exc.strerror or str(exc))

    def append(self, kind: str, **fields: Any) -> None:
        journal = self.s.journal
        if journal is None:
            return
        try:
            journal.append(kind, **fields)
        except OSError as exc:
            self.note_unsaved(exc)
        if kind == "clock":
            self.arm_heartbeat()

    def batch(self) -> contextlib.AbstractContextManager:
        """Records written together, all or none."""
        journal = self.s.journal
        return journal.batch() if journal is not None else contextlib.nullcontext()

    def when_synced(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the journal holds everything appended so far."""
        journal = self.s.journal
        if journal is None:
            action()
            return
        try:
            journal.after_sync(action)
        except OSError as exc:  # a synchronous journal that could not sync
            self.note_unsaved(exc)
            action()

    def arm_heartbeat(self) -> None:
        """While a timeout clock runs, an "alive" record every HEARTBEAT seconds;
        with none running nothing is armed, so an idle session never wakes for it.
        Called whenever a clock record is journaled."""
        s = self.s
        journal, timers = s.journal, s.timers
        if journal is None or timers is None or s.me is None or not journal.image.clocks:
            return
        pending = s.heartbeat
        # One that should have fired a beat ago was lost with a crashed core's
        # mailbox: arm another.
        if pending is not None and pending.due > timers.clock() - HEARTBEAT:
            return
        s.heartbeat = timers.after(HEARTBEAT, s.me, Heartbeat())

    def heartbeat(self) -> None:
        self.s.heartbeat = None
        journal = self.s.journal
        if journal is not None and journal.image.clocks:
            # The time left on a clock is counted up to the last record, so a quiet
            # session that dies must still have written one lately.
            self.append("alive")
            self.arm_heartbeat()

    def role_seen(self, view: RoleView) -> None:
        """Record a role's restart budget and pause state when either changed."""
        journal = self.s.journal
        if journal is None:
            return
        known = journal.image.roles.get(view.name, {})
        now = {"restarts_used": view.budget_used, "restarts_total": view.restarts}
        if view.status in (RoleStatus.PAUSED, RoleStatus.IDLE, RoleStatus.WORKING,
                           RoleStatus.WAITING):
            # booting, exited and failed say nothing about an operator's pause
            now["paused"] = view.status == RoleStatus.PAUSED
        if any(known.get(key) != value for key, value in now.items()):
            self.append("role", role=view.name, **now)
