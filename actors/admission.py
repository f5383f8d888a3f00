"""Admission by memory, the core's side (the gate is :mod:`choragos.config.memfloor`).

A role actor asks the gate before it starts its process; when it is told to
wait it says so here with :class:`RoleHeld`.  The core makes the hold seen
(a mark on the card and in ``status``, an event, the ``on_input`` hook once
per hold) and, while anyone waits, reads memory every :data:`POLL` seconds
and lets the first one in.  One a tick: each start takes memory, so the next
reading is taken after the last one began.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort
from choragos.actors.timers import Timer
from choragos.config.memfloor import HELD_MARK

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

log = logging.getLogger("choragos.memory")
POLL = 1.0


@dataclass(frozen=True)
class RoleHeld:
    """A role actor's word to the core: the memory gate told ``role`` to wait, and why."""

    role: str
    reason: str
    new: bool  # a new hold (not the same one asked again): the hook fires


@dataclass(frozen=True)
class MemoryCheck:
    """Time to read memory again for the roles held."""


@dataclass
class AdmissionState:
    """The core's admission state: the memory reading it asked the timers for."""

    pending: Timer | None = None  # the memory reading the timers will send, while one waits


class Admission:
    """A policy of the core: owns the pending memory reading."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s
        self.state: AdmissionState = s.admission

    def role_held(self, msg: RoleHeld) -> None:
        self.port.mark(msg.role, HELD_MARK, True)
        if msg.new:
            log.warning("%s is held: %s", msg.role, msg.reason)
            self.port.event("role held", role=msg.role, reason=msg.reason)
            self.port.alert("on_input", msg.role, None)
        self._arm_memory_check()

    def memory_check(self, msg: MemoryCheck) -> None:
        self.state.pending = None
        gate = self.s.memory_gate
        role = gate.release() if gate is not None else None
        seat = self.s.seats.get(role) if role else None
        if seat is not None:
            self.port.mark(role, HELD_MARK, False)
            self.port.event("role admitted", role=role)
            seat.handle.tell(m.Spawn(admitted=True))
        self._arm_memory_check()

    def _arm_memory_check(self) -> None:
        gate = self.s.memory_gate
        if gate is not None and gate.waiting and self.state.pending is None:
            self.state.pending = self.port.later(POLL, MemoryCheck())
