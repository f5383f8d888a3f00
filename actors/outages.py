"""Host outages, the core's side (the role's is :mod:`choragos.actors.hostwait`).

A remote role whose host stopped answering is held by its actor, not
restarted under its crash budget; it says so here with :class:`HostHeld`.
The core makes the hold seen as it does a memory hold: a mark on the card
and in ``status`` (``held: host``), a note on the tasks that wait for it,
and once per outage a line in the server log, a ``role held`` event and
the ``on_exit`` hook (so the notifier).  Its tasks are not failed: the one
it was working on is typed again when it is back (the core's
``redeliver``), the rest wait in its queue.  :class:`HostBack` ends it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from choragos.actors.coreport import CorePort, note_waits
from choragos.actors.hostwait import said
from choragos.actors.messages import (
    HOST_MARK,
    HOST_NOTE,
    HOST_REFUSED,
    HOST_UNREACHABLE,
    HostBack,
    HostHeld,
)

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

log = logging.getLogger("choragos.remote")


class HostOutages:
    """A policy of the core: the marks, notes and noise of held remote roles."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s

    def held(self, msg: HostHeld) -> None:
        self.port.mark(msg.role, HOST_MARK, True)
        self._note(msg.role, f"{HOST_NOTE} ({msg.host})")
        if not msg.new:
            return
        line = said(msg)
        if msg.refused:
            log.error("%s is %s", msg.role, line)
        else:
            log.warning("%s is %s (its crash budget is untouched; its work waits)",
                        msg.role, line)
        self.port.event("role held", role=msg.role,
                        reason=HOST_REFUSED if msg.refused else HOST_UNREACHABLE,
                        host=msg.host, said=msg.why, next_try=msg.next_try)
        self.port.ring("on_exit", msg.role, line,
                       extra={"CHORAGOS_EXIT": line, "CHORAGOS_EXITED": "role"})

    def back(self, msg: HostBack) -> None:
        self.port.mark(msg.role, HOST_MARK, False)
        self._note(msg.role, "")
        log.warning("%s is back: its host %s answered after %.0fs", msg.role, msg.host,
                    msg.lasted)
        self.port.event("host answered", role=msg.role, host=msg.host,
                        lasted=round(msg.lasted, 3))

    def _note(self, role: str, note: str) -> None:
        """The board says why the role's tasks wait; the note goes with the hold."""
        note_waits(self.port, self.s.board.open_for(role), note, HOST_NOTE)
