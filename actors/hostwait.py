"""A remote role held while its host does not answer, the role actor's side.

When a remote seat ends because its host did not answer (the connection
dropped, ssh could not connect), the role is not restarted under its
crash budget: it is *held*.  Its status stays ``exited`` with the reason
on its card (``held: host unreachable: gpu (me@gpu-box): ...; next try at
...``), the core is told (:mod:`choragos.actors.roleexits`) and the host is
probed with back-off, one cheap connection and no agent, on a thread of
its own so the actor keeps answering.  The probes of the roles on one host
are shared (:class:`~choragos.remote.reach.Reach`).  When the host answers,
the role is spawned as a restart spawns it; ``choragos restart`` tries at
once.  A login the host turned away is held too, but not probed: waiting
does not mend a key or a host key, the operator does.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors.handle import ActorGone
from choragos.actors.messages import (
    HOST_REFUSED,
    HOST_WAITING,
    HostBack,
    HostHeld,
    Probed,
    ProbeDue,
)
from choragos.remote import reach
from choragos.roles.rolestatus import RoleStatus
from choragos.terminal.restartpolicy import ExitStatus

if TYPE_CHECKING:
    from choragos.actors.role import RoleState
    from choragos.actors.timers import Timers


def said(msg: HostHeld) -> str:
    """The hold in one line: the card's detail, the log's and the hook's."""
    if msg.refused:
        return (f"held: {HOST_REFUSED}: {msg.host}: {msg.why}; fix the login, then "
                f"`choragos restart {msg.role}`")
    then = f"; next try at {msg.next_try}" if msg.next_try else ""
    return f"{HOST_WAITING} {msg.host}: {msg.why}{then}"


@dataclass
class Held:
    """The role's hold: since when, and what the core was told."""

    began: float  # (monotonic)
    token: int = 0
    told: tuple[int, str] | None = None  # (episode, kind) the noise was made for


class HostWait:
    """Holds a remote role through its host's outage, probes, and lets it go."""

    def __init__(self, state: RoleState, timers: Timers, me: Any,
                 tell_core: Callable[[Any], None], publish: Callable[[], None]) -> None:
        self.s, self.timers, self.me = state, timers, me
        self.tell_core, self.publish = tell_core, publish

    @property
    def held(self) -> Held | None:
        # On the role's state, not the actor: a replaced actor holds on.
        return self.s.host_held

    @held.setter
    def held(self, held: Held | None) -> None:
        self.s.host_held = held

    def fault(self, msg: m.Exited) -> str:
        """Why a remote seat ended: its host's fault (UNREACHABLE, REFUSED) or
        not (ANSWERED: the agent exited, or the role holds nothing for it).
        A hold whose host answered is over: the crash policy takes it on."""
        s = self.s
        if s.seat is None or s.stopping or not s.spec.restart:
            return reach.ANSWERED  # a role nothing restarts is not held either
        kind = msg.kind or s.seat.fault(msg.status)
        if kind == reach.ANSWERED:
            self.over()
        return kind

    def hold(self, status: ExitStatus, kind: str) -> None:
        """Hold the role, its crash budget untouched.  The core hears of the
        exit once, when the role was running until now (not for a start the
        hold tried), and types its task again when it is back."""
        s = self.s
        why = status.cause or status.describe()
        outage = s.seat.link.reach.lost(kind, _short(why))
        first = self.held is None
        if first:
            self.held = Held(time.monotonic())
        self._held_now(outage)
        if first:
            self.tell_core(m.RoleExited(s.spec.name, status, True, s.detail, redeliver=True))

    def _held_now(self, outage: reach.Outage) -> None:
        held = self.held
        held.token += 1
        s = self.s
        if outage.next_try is not None:
            delay = max(0.0, outage.next_try - time.monotonic())
            s.pending_restart = self.timers.after(delay, self.me,
                                                  ProbeDue(held.token, outage.next_try))
        news = HostHeld(s.spec.name, s.seat.host, outage.kind == reach.REFUSED, outage.why,
                        _clock(outage.next_try), held.told != (outage.episode, outage.kind))
        held.told = (outage.episode, outage.kind)
        s.detail = said(news)
        self.publish()
        self.tell_core(news)

    def heard(self, msg: ProbeDue | Probed) -> None:
        """The timers' round, or what its probe found."""
        if isinstance(msg, ProbeDue):
            self.due(msg)
        else:
            self.probed(msg)

    def due(self, msg: ProbeDue) -> None:
        """Probe the host, on a thread: the actor answers meanwhile."""
        if not self._current(msg.token):
            return
        link, me = self.s.seat.link, self.me

        def probe() -> None:
            found = link.probe(msg.due)
            with contextlib.suppress(ActorGone):
                me.tell(Probed(msg.token, found))

        threading.Thread(target=probe, name=f"probe-{self.s.spec.name}", daemon=True).start()

    def probed(self, msg: Probed) -> None:
        if not self._current(msg.token):
            return
        if msg.probe.kind == reach.ANSWERED:
            self.me.tell(m.Spawn())  # as a restart: connected, checked, started
            return
        outage = self.s.seat.link.reach.current
        if outage is None:  # another role's start found it answering meanwhile
            self.me.tell(m.Spawn())
            return
        self._held_now(outage)

    def _current(self, token: int) -> bool:
        held = self.held
        return (held is not None and held.token == token and not self.s.stopping
                and self.s.status in (RoleStatus.EXITED, RoleStatus.FAILED))

    def over(self) -> None:
        """Its host answered (the role's process started): the hold is over."""
        held, self.held = self.held, None
        if held is None:
            return
        self.s.seat.link.reach.answered()
        self.tell_core(HostBack(self.s.spec.name, self.s.seat.host,
                                time.monotonic() - held.began))


def _clock(when: float | None) -> str:
    """A monotonic due time as people read it (local time), or ``""``."""
    if when is None:
        return ""
    return time.strftime("%H:%M:%S", time.localtime(time.time() + when - time.monotonic()))


def _short(why: str) -> str:
    """What ssh said, without the host's name the card shows already."""
    if why.startswith("the connection to "):
        return "the connection was lost"
    return why.split("): ", 1)[-1] if why.startswith("cannot reach ") else why
