"""Provider limits in the session core: hold the role, wait, set it going.

A policy of the core, on the core's thread.  A limit
comes from the gateway (an upstream's 429/529 for a role) or from the
role's own screen (its CLI's limit notice).  :class:`~choragos.gateway.limits.LimitWatch`
decides; this carries it out: the role is marked ``limited`` until its wake
time (nothing is typed into it meanwhile: it is not ready), the event, the
``on_limit`` hook and the orchestrator's notice come once per limit, and
with ``limit_action = "reroute"`` its queued tasks go to a free role,
running the same agent CLI when one is free, else another (now, or when
one comes to rest).  The operator's ``resume`` lifts a hold early.  At
the wake time the role is set going again: a short "continue" is typed
only if it then rests idle at its prompt holding a task (a queued task is
simply delivered then), and a limit that lasted past ``[ui]
limit_give_up`` fails the work it holds instead.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort, note_waits
from choragos.actors.guardrails import OVER, Guardrails
from choragos.actors.policystate import LimitState
from choragos.board.tasks import Task, TaskState
from choragos.config.model import Config, RoleSpec
from choragos.control import wire
from choragos.durations import format_duration
from choragos.gateway.limits import Limit, LimitWatch, read_screen
from choragos.roles import briefs
from choragos.roles.rolestatus import RoleStatus

if TYPE_CHECKING:
    from choragos.actors.core import CoreState, Seat

log = logging.getLogger("choragos.crew")

DOWN = (RoleStatus.STARTING, RoleStatus.EXITED, RoleStatus.FAILED)  # no process
LIMIT_NOTE = "waits out a provider's limit"
REROUTED_NOTE = "rerouted: "  # the board's note on a task a limit moved


def new_watch(config: Config) -> LimitWatch:
    return LimitWatch(default_wait=config.ui.limit_wait, give_up=config.ui.limit_give_up)


def clock(when: float) -> str:
    """A wake time as people read it: local time, with the date when not today."""
    local = time.localtime(when)
    same_day = time.localtime()[:3] == local[:3]
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", local)


def _monotonic(limit: Limit, wall: float, now: float) -> Limit:
    """``limit`` with its reset on the monotonic clock that reads ``now`` at wall time ``wall``."""
    return limit if limit.until is None else replace(limit, until=limit.until - wall + now)


class LimitFlow:
    """A policy of the core: owns the limits roles wait out (:class:`LimitState`);
    the guardrails say which task a role still holds."""

    def __init__(self, port: CorePort, s: CoreState, guard: Guardrails) -> None:
        self.port, self.s, self.guard = port, s, guard
        self.state: LimitState = s.limit

    def _limits(self) -> LimitWatch:
        if self.state.watch is None:
            self.state.watch = new_watch(self.s.config)
        return self.state.watch

    def forget(self, role: str) -> None:
        """A role a reload removed waits out nothing any more."""
        self._limits().forget(role)

    def reconfigured(self) -> None:
        """A reload's new wait and give-up apply to the next limit."""
        watch = self._limits()
        watch.default_wait = self.s.config.ui.limit_wait
        watch.give_up = self.s.config.ui.limit_give_up

    def on_screen(self, msg: m.LimitOnScreen) -> None:
        self.seen(msg.role, read_screen(msg.line, time.time()))

    def seen(self, role: str, limit: Limit) -> None:
        seat = self.s.seats.get(role)
        if seat is None or seat.view.status in DOWN:
            return
        # The watch counts on the monotonic clock: a wall clock set forward (a
        # VM resumed, NTP stepping it) must not pass the give-up at once, nor
        # one set back make a limit look like it came straight back.  The
        # provider's reset, a wall time, is turned into a wait on it here.
        now, wall = time.monotonic(), time.time()
        seen = self._limits().seen(role, _monotonic(limit, wall, now), now)
        if seen is None:
            # Nothing new; but an agent started again meanwhile (a crash, a
            # restart) came up not limited: it is held again, with no more noise.
            episode = self._limits().limited(role)
            if episode is not None and seat.view.limited_until is None:
                self._hold(seat, episode.limit, wall + episode.wake - now)
            return
        episode = seen.episode
        wake = wall + episode.wake - now  # as people and the card read it
        until = self._hold(seat, limit, wake)
        self.port.later(episode.wake - now, m.LimitWake(role, episode.token))
        self._note_limit(role, f"{LIMIT_NOTE} ({limit.kind}, {limit.source}) until {until}")
        fields = {"role": role, "kind": limit.kind, "source": limit.source,
                  "until": round(wake, 3), "repeats": episode.repeats,
                  "said": limit.detail}
        if not seen.new:
            self.port.event("role limit extended", **fields)
            return
        log.warning("%s hit a provider's %s; it waits until %s%s", role, limit.describe(),
                    until, f" (back-off, repeat {episode.repeats})" if episode.repeats else "")
        self.port.event("role limited", **fields)
        moved = self._reroute(role)
        if episode.repeats and not moved:
            return  # the same limit back: the bell, the hook and the orchestrator had it
        self.port.ring("on_limit", role, f"{limit.kind} until {until}", extra={
            "CHORAGOS_LIMIT": limit.kind, "CHORAGOS_LIMIT_SOURCE": limit.source,
            "CHORAGOS_LIMIT_UNTIL": time.strftime("%Y-%m-%dT%H:%M:%S%z",
                                                  time.localtime(wake))})
        if role != self.s.start_role:
            self.port.enqueue(self.s.start_role, briefs.limit_line(role, limit.kind, until, moved),
                          "notice")

    def _hold(self, seat: Seat, limit: Limit, wake: float) -> str:
        """The role shows ``limited`` until ``wake`` (wall clock), said as people read it."""
        until = clock(wake)
        seat.handle.tell(m.Limited(wake, f"{limit.kind} until {until}"))  # short: fits the card
        # Not ready from now on, before the role says it is limited: nothing
        # queued meanwhile may be typed into it.
        seat.view = replace(seat.view, ready=False)
        return until

    def wake(self, msg: m.LimitWake) -> None:
        woke = self._limits().wake(msg.role, msg.token, time.monotonic())
        seat = self.s.seats.get(msg.role)
        if woke is None or seat is None:
            return
        seat.handle.tell(m.Limited(None))
        self._note_limit(msg.role, "")
        lasted = format_duration(round(woke.lasted))
        if woke.give_up:
            give_up = format_duration(self.s.config.ui.limit_give_up)
            log.error("%s has been held by a provider's limit for %s, past [ui] limit_give_up "
                      "(%s): the work it holds is failed", msg.role, lasted, give_up)
            self.port.event("limit given up", role=msg.role, lasted=round(woke.lasted, 3))
            for task in self.s.board.open_for(msg.role):
                if task.state is TaskState.GATED:
                    continue
                self.unqueue(seat, task.id)  # a failed task is never typed after all
                self.port.fail_task(task, f"{msg.role} was held by a provider's limit for "
                                          f"{lasted}, past [ui] limit_give_up ({give_up})")
            return
        self.port.event("limit over", role=msg.role, lasted=round(woke.lasted, 3), by="reset")
        self.state.going.add(msg.role)

    def lifted(self, msg: m.LimitLifted) -> None:
        """The provider answered the role again before its wait was over: its
        agent went on by itself (its own retry), so nothing is typed."""
        episode = self._limits().lifted(msg.role)
        seat = self.s.seats.get(msg.role)
        if episode is None or seat is None:
            return
        seat.handle.tell(m.Limited(None))
        self._note_limit(msg.role, "")
        lasted = round(time.monotonic() - episode.first, 3)
        self.port.event("limit over", role=msg.role, lasted=lasted, by="answered")

    def lift(self, role: str) -> dict:
        """The operator lifts ``role``'s limit hold before its reset (``choragos
        resume``): it is set going as at the reset.  The episode is forgotten:
        the operator judged it over, so a limit coming back is news again."""
        episode = self._limits().limited(role)
        seat = self.s.seats.get(role)
        if episode is None or seat is None:
            return wire.error(f"{role} is not held by a provider's limit; nothing was lifted")
        self._limits().forget(role)
        seat.handle.tell(m.Limited(None))
        self._note_limit(role, "")
        lasted = round(time.monotonic() - episode.first, 3)
        log.warning("%s: its provider's %s hold is lifted by the operator before its reset",
                    role, episode.limit.kind)
        self.port.event("limit over", role=role, lasted=lasted, by="operator")
        self.state.going.add(role)
        return wire.ok(role=role, action="resume", lifted=episode.limit.kind,
                       message=f"{role} was held by a provider's {episode.limit.kind}; it is "
                               f"set going now, before its reset")

    def after_limit(self, seat: Seat) -> None:
        """Once the role no longer shows ``limited`` (nor paused, if it was paused
        meanwhile): continue it if it rests idle holding its task."""
        if (seat.name not in self.state.going
                or seat.view.status in (RoleStatus.LIMITED, RoleStatus.PAUSED)):
            return
        self.state.going.discard(seat.name)
        task = self.guard.held_task(seat.name)
        if seat.view.status is RoleStatus.IDLE and task is not None:
            self.port.event("limit continue", role=seat.name, task=task.id)
            self.port.enqueue(seat.name, briefs.continue_line(task.id), "notice", task.id,
                          front=True)

    def _note_limit(self, role: str, note: str) -> None:
        """The board says why the role's tasks wait; the note goes with the limit."""
        note_waits(self.port, self.s.board.open_for(role), note, LIMIT_NOTE)

    # -- reroute ------------------------------------------------------------------

    def freed(self, seat: Seat) -> None:
        """``seat`` came to rest at its prompt: work still queued for a role
        waiting out a limit with ``limit_action = "reroute"`` goes to it (or
        another free role) now, not at that role's reset hours later."""
        for role in [r for r in self._limits().episodes if self._limits().limited(r)]:
            if role != seat.name and role in self.s.seats:
                self._reroute(role, tell=True)

    def _reroute(self, role: str, tell: bool = False) -> list[str]:
        """Queued tasks of ``role`` go to roles free to take them (see :meth:`_taker`);
        ``tell``: each is told to the orchestrator (else the limit's notice lists them)."""
        seat, spec = self.s.seats[role], self.s.config.role(role)
        if spec is None or spec.limit_action != "reroute":
            return []
        moved = []
        for injection in [i for i in seat.queue if i.kind == "task"]:
            task = self.around_limit(self.s.board.get(injection.task_id), tell=tell)
            if task.role == role:
                break  # nobody free: the rest wait too
            self.unqueue(seat, task.id)
            self.port.queue_task(task)
            other = self.s.seats[task.role].view.profile != seat.view.profile
            moved.append(f"{task.id} to {task.role}"
                         + (f" (on {_cli(self.s.seats[task.role])})" if other else ""))
        return moved

    def unqueue(self, seat: Seat, task_id: str) -> None:
        """Take ``task_id``'s delivery out of the role's queue (and the journal's)."""
        for injection in [i for i in seat.queue if i.kind == "task" and i.task_id == task_id]:
            seat.queue.remove(injection)
            self.port.journal("injected", id=injection.id, role=seat.name, requeued=False)

    def around_limit(self, task: Task, tell: bool = True) -> Task:
        """``task`` given to a free role when its role waits out a limit with
        ``limit_action = "reroute"``; else ``task`` as it is.  Its history says
        where it went and why: the event, the board's note and (``tell``, when
        the limit's own notice does not list it) a line to the orchestrator."""
        role = task.role
        spec = self.s.config.role(role)
        if spec is None or spec.limit_action != "reroute":
            return task
        episode = self._limits().limited(role)
        if episode is None:
            return task
        seat = self.s.seats[role]
        taker = self._taker(seat, spec)
        if taker is None:
            return task
        same = taker.view.profile == seat.view.profile
        why = (f"{role} waits out a provider's {episode.limit.kind}"
               + ("" if same else f"; no role running its agent CLI ({_cli(seat)}) was free, "
                                  f"{taker.name} runs {_cli(taker)}"))
        task = self.port.annotate(task.id, role=taker.name, note=REROUTED_NOTE + why)
        self.port.write_task_file(task)
        self.port.event("task rerouted", task=task.id, role=taker.name, was=role, reason="limit",
                        why=why, same_cli=same)
        log.warning("%s went to %s instead of %s: %s", task.id, taker.name, role, why)
        if tell and self.s.start_role not in (role, taker.name):
            self.port.enqueue(self.s.start_role, briefs.rerouted_line(task.id, role, taker.name,
                                                                      why), "notice", task.id)
        return task

    def _taker(self, seat: Seat, spec: RoleSpec) -> Seat | None:
        """The role that takes ``seat``'s queued work: one free (idle at its
        prompt, not limited, held, paused, refused by a budget nor over one),
        not the orchestrator, and one that writes when the work may need it; on
        the same agent CLI when one is, else on another (a provider's limit
        usually holds every role on its CLI), the least loaded first."""
        free = [other for other in self.s.seats.values()
                if other.name not in (seat.name, self.s.start_role)
                and self._free(other) and _may_take(self.s.config.role(other.name), spec)]
        free.sort(key=lambda other: (other.view.profile != seat.view.profile, len(other.queue)))
        return free[0] if free else None

    def _free(self, seat: Seat) -> bool:
        return (seat.view.status is RoleStatus.IDLE and seat.view.ready
                and self._limits().limited(seat.name) is None
                and seat.name not in self.s.budget.refused
                and OVER not in self.guard.state.marks.get(seat.name, ()))


def _may_take(taker: RoleSpec | None, spec: RoleSpec) -> bool:
    """Whether ``taker`` may take work queued for ``spec``: it can do it (a
    role that only reads never gets a writer's work), and the work keeps
    every check the operator set on it.  Its changes come back the same way
    (a worktree's or host's work through the same merge, never straight into
    the main checkout), the same ``verify`` runs, a judge still scores it,
    and files its role owns are owned by the taker too (else its change to
    them would be held as another role's)."""
    if taker is None or (spec.writes and not taker.writes):
        return False
    return (_comes_back(taker) == _comes_back(spec) and taker.verify == spec.verify
            and (bool(taker.judge) or not spec.judge)
            and set(spec.owns_files) <= set(taker.owns_files))


def _comes_back(spec: RoleSpec) -> str:
    """How a role's changes reach the main checkout: directly, or by its merge."""
    return f"merge {spec.merge}" if spec.worktree or spec.host else "directly"


def _cli(seat: Seat) -> str:
    return seat.view.profile or "its command"
