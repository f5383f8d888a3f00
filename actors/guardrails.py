"""Guardrails for crews nobody watches: loud exits, stalls, idle, done, budgets.

A policy of the session core: it runs on the core's thread and reads the
core's board, seats and token totals.  It lives apart because none of it
hands out work; it only notices when work stops, or costs too much, and
says so: a line in the server log (stderr under ``serve --headless``), an
event, the bell, a ``[ui]`` hook, a mark on the role's card, and where the
orchestrator must act, a notice typed to it.  Each alarm fires once and is
re-armed only by the condition clearing (or, for a budget, a new cap).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort
from choragos.board.tasks import Task, TaskState
from choragos.config.memfloor import HELD_MARK
from choragos.config.model import Config, RoleSpec
from choragos.durations import format_duration
from choragos.gateway.budgetgate import BLOCKING
from choragos.gateway.client import role_cost, role_estimated, role_tokens
from choragos.plural import counted
from choragos.roles import briefs
from choragos.roles.rolestatus import NOT_BRIEFED, RoleStatus
from choragos.session import news

if TYPE_CHECKING:
    from choragos.actors.core import CoreState

log = logging.getLogger("choragos.crew")

DOWN = (RoleStatus.STARTING, RoleStatus.EXITED, RoleStatus.FAILED)  # no process
# a team with a role in one of these is not idle (a limited role is set going
# again by the session itself: the crew waits on a provider, it is not stuck)
BUSY = (RoleStatus.WORKING, RoleStatus.BOOTING, RoleStatus.WAITING, RoleStatus.LIMITED)
HELD = (TaskState.DELIVERED, TaskState.TIMED_OUT)
SESSION = "[session]"  # the crew-wide budget's key: no role can have this name
OVER = "over budget"
STALLED = "stalled"
INPUT_HELD = "input holds an untaken line"
IDLE, LIMITED = "idle", "limited"  # how a team with open work sits still


# The marks of a role held for its host: a change of one may end or begin an idle crew.
HOST_HOLDS = frozenset({m.HOST_MARK, m.LOGIN_MARK})


def _busy(view: m.RoleView, marks: Collection[str]) -> bool:
    """Working, or waiting on something the session itself waits out: a
    provider's limit, or a host it probes (``held: host``: that hold rang
    once already).  A login the host turned away (``held: login``) waits on
    the operator: a crew waiting only on it is stuck."""
    return view.status in BUSY or (view.status == RoleStatus.EXITED and m.HOST_MARK in marks)


def rang(s: CoreState, kept: dict[str, list]) -> None:
    """A resumed session takes over the budget alarms that rang before: each
    rings once per cap, whatever kills the server.  A pause they made is owed
    again (the new process is not paused), as soon as the role is up."""
    guard = s.guard
    for key, cap in kept.items():
        guard.budget_fired[key] = tuple(cap)
        if key == SESSION:
            if s.config.budget.action != "block" and cap == [s.config.budget.session]:
                guard.pause_pending.update(s.seats)
            continue
        spec = s.config.role(key)
        if spec is None or key not in s.seats:
            continue  # a role a handoff dropped
        guard.marks[key] = tuple(sorted({*guard.marks.get(key, ()), OVER}))
        if spec.budget_action == "pause" and (
                cap == [spec.budget, spec.budget_tokens]):
            guard.pause_pending.add(key)


def budget_summary(config: Config) -> dict | None:
    """Every budget in ``config``, for the "budgets" event that ``report`` reads."""
    roles = {r.name: {"usd": r.budget, "tokens": r.budget_tokens}
             for r in config.roles if r.budget is not None or r.budget_tokens is not None}
    if not roles and config.budget.session is None:
        return None
    return {"roles": roles, "session": config.budget.session}


@dataclass(frozen=True)
class IdleCheck:
    """The team has been idle since ``generation`` began; is it still?"""

    generation: int


@dataclass
class GuardState:
    """The guardrails' state: the alarms fired (idle, done, budgets), who is gone, the marks."""

    idle_generation: int = 0
    idle_since: float | None = None
    idle_fired: bool = False
    idle_how: str | None = None  # IDLE, LIMITED (only limited roles could work), or None
    done_fired: bool = False
    nobody_alive: bool = False
    gone: set[str] = field(default_factory=set)  # exited or failed, and no restart coming
    marks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    budget_fired: dict[str, tuple] = field(default_factory=dict)  # key -> cap it fired at
    unpriced: set[tuple[str, str]] = field(default_factory=set)  # (role, model) said so
    pause_pending: set[str] = field(default_factory=set)  # over budget before it was up


class Guardrails:
    """A policy of the core: owns the alarms' state (:class:`GuardState`) and
    the marks on the roles' cards."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s
        self.state: GuardState = s.guard

    # -- helpers --------------------------------------------------------------

    def mark(self, role: str, mark: str, on: bool) -> None:
        marks = set(self.state.marks.get(role, ()))
        new = marks | {mark} if on else marks - {mark}
        if new != marks:
            self.state.marks[role] = tuple(sorted(new))
            self.port.publish(news.MarksChanged.of(self.state.marks))
            if mark in HOST_HOLDS:  # told after the view that exited: idle is judged again
                self.check_idle()

    def held_task(self, role: str) -> Task | None:
        """The task ``role`` still owes a report on.  One it reported (its
        checks running, or its work waiting at a merge gate) is out of its
        hands: the role sitting still then is no stall."""
        return next((t for t in self.s.board.open_for(role)
                     if t.state in HELD and t.summary is None), None)

    # -- a role changed or exited ---------------------------------------------

    def view_changed(self, before: m.RoleView, view: m.RoleView) -> None:
        if before.status != view.status:
            self._guard_status(view)
        if before.stalled != view.stalled:
            self._guard_stall(view)
        if before.held != view.held:
            self.mark(view.name, INPUT_HELD, view.held)
        unbriefed = view.detail.startswith(NOT_BRIEFED)
        if before.detail.startswith(NOT_BRIEFED) != unbriefed:
            # Cards show a live role's detail nowhere else (nor `status`'s table).
            self.mark(view.name, NOT_BRIEFED, unbriefed)
        self.check_idle()

    def _guard_status(self, view: m.RoleView) -> None:
        role = view.name
        if view.status == RoleStatus.FAILED:
            log.error("%s failed and will not come back by itself: %s "
                      "(`choragos restart %s` tries again)", role, view.detail, role)
        elif view.status == RoleStatus.WAITING:
            log.warning("%s is waiting for a human (a question or a permission dialog on "
                        "its screen); `choragos keys %s ...` answers it", role, role)
        if view.status not in DOWN:
            self.state.gone.discard(role)
            self._guard_alive()
            if role in self.state.pause_pending:
                self._budget_pause(role)

    def exited(self, msg: m.RoleExited) -> None:
        status = msg.status.describe()
        # Judged here, not on the view's change: only now is the restart decision known.
        if msg.restarting:
            self.state.gone.discard(msg.role)
        else:
            self.state.gone.add(msg.role)
        if msg.reason == "restarted on request":
            return  # the operator asked for it; nothing to alarm about
        if msg.reason.startswith(m.HOST_MARK):
            return  # held for its host: the outage's own noise, once (actors/roleexits.py)
        then = "restarting" if msg.restarting else f"not restarted ({msg.reason})"
        log.warning("%s exited (%s); %s", msg.role, status, then)
        self.port.ring("on_exit", msg.role, status,
                       extra={"CHORAGOS_EXIT": status, "CHORAGOS_EXITED": "role"})
        self._guard_alive()

    def _guard_alive(self) -> None:
        workers = [seat for name, seat in self.s.seats.items() if name != self.s.start_role]
        dead = bool(workers) and all(seat.name in self.state.gone for seat in workers)
        if dead and not self.state.nobody_alive:
            states = ", ".join(f"{seat.name} {seat.view.status}" for seat in workers)
            log.error("NO WORKER IS LEFT ALIVE (%s): nothing delegated can be done until "
                      "one is restarted (`choragos restart ROLE`)", states)
            self.port.event("no worker alive", roles=[seat.name for seat in workers])
        self.state.nobody_alive = dead

    def _guard_stall(self, view: m.RoleView) -> None:
        task = self.held_task(view.name) if view.stalled else None
        self.mark(view.name, STALLED, task is not None)
        if task is None:
            return
        after = self.s.config.role(view.name).stall_after or 0
        log.warning("%s stalled: its screen has not changed for %s while it holds %s",
                    view.name, format_duration(after), task.id)
        action = self.s.config.role(view.name).stall_action
        self.port.event("role stalled", role=view.name, task=task.id, after=after, action=action)
        self.port.alert("on_input", view.name, task)
        if action == "nudge":
            # Queued like any line: typed only once the agent rests idle at its prompt.
            self.port.enqueue(view.name, briefs.nudge_line(task.id), "notice", task.id)
        elif action == "restart":
            log.warning("%s is restarted for its stall (stall_action = \"restart\")", view.name)
            self.s.seats[view.name].handle.tell(m.Restart())

    # -- the whole team: idle, done -------------------------------------------

    def _unsettled(self) -> list[Task]:
        return self.s.board.tasks.unsettled_tasks()

    def _team_idle(self) -> str | None:
        """``IDLE`` when open work waits and nobody works on it; ``LIMITED``
        when the only ones who could are waiting out a provider's limit."""
        if self.s.board.tasks.unsettled == 0:
            return None
        limited = False
        for name, seat in self.s.seats.items():
            if seat.view.status is RoleStatus.LIMITED and seat.in_flight is None:
                limited = True
            elif _busy(seat.view, self.state.marks.get(name, ())) or seat.in_flight is not None:
                return None
        return LIMITED if limited else IDLE

    def check_idle(self) -> None:
        guard = self.state
        how = self._team_idle()
        if how != guard.idle_how:
            guard.idle_how, guard.idle_since, guard.idle_fired = how, None, False
            guard.idle_generation += 1
        if how is None:
            return
        if guard.idle_since is not None or self.s.timers is None:
            return
        guard.idle_since = time.monotonic()
        guard.idle_generation += 1
        self.port.later(self.s.config.ui.idle_after, IdleCheck(guard.idle_generation))

    def idle_check(self, msg: IdleCheck) -> None:
        guard = self.state
        how = self._team_idle()
        if msg.generation != guard.idle_generation or guard.idle_fired or how is None:
            return
        guard.idle_fired = True
        ids = [t.id for t in self._unsettled()]
        if how == LIMITED:
            self._limited_crew(ids)
            return
        after = format_duration(self.s.config.ui.idle_after)
        text = (f"{counted(len(ids), 'open task')}: {', '.join(ids)}; the team has been idle "
                f"for {after}")
        log.error("THE CREW IS STUCK: the whole team has been idle for %s with %s (%s)",
                  after, counted(len(ids), "open task"), ", ".join(ids))
        self.port.event("team idle", tasks=ids, after=self.s.config.ui.idle_after)
        self.port.ring("on_idle", self.s.start_role, text)

    def _limited_crew(self, ids: list[str]) -> None:
        """Said once: nothing moves until a provider's limit lifts (the roles
        are set going by themselves then, but nobody should think work goes on)."""
        held = sorted((seat.view.limited_until or math.inf, seat.name)
                      for seat in self.s.seats.values() if seat.view.status is RoleStatus.LIMITED)
        first, role = held[0]
        known = math.isfinite(first)
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(first)) if known else "unknown"
        names = ", ".join(name for _, name in held)
        text = (f"{counted(len(ids), 'open task')}: {', '.join(ids)}; nobody works on them: "
                f"{names} wait(s) out a provider's limit, the earliest reset {when} ({role})")
        log.error("THE CREW IS STUCK ON PROVIDER LIMITS: %s", text)
        self.port.event("team limited", tasks=ids, roles=[name for _, name in held],
                        until=round(first, 3) if known else None, first=role)
        self.port.ring("on_idle", self.s.start_role, text)

    def task_moved(self) -> None:
        """A task moved: once any is open again, the next "every task settled"
        is news (the check itself waits for the end of the core's turn)."""
        if self.s.board.tasks.unsettled:
            self.state.done_fired = False

    def tasks_changed(self) -> None:
        live = self.s.board.tasks
        # Counted as tasks move (no walk); work whose checks still run, at a
        # merge gate, being merged or held for a person is not finished,
        # though its task is done.
        settled = (bool(live) and live.unsettled == 0 and not self.s.checks.held
                   and not self.s.board.waiting_ids())
        if not settled or self.state.done_fired:
            self.state.done_fired = settled
            self.check_idle()
            return
        self.state.done_fired = True
        counts = Counter({str(state): n for state, n in live.states.items()})  # no walk
        # The archive holds the older done and rejected tasks: the counts are the session's.
        for (_, state), count in self.s.board.archived_by.items():
            counts[state] += count
        text = ", ".join(f"{counts[s]} {s}" for s in ("done", "failed", "rejected"))
        log.info("every task is settled: %s", text)
        self.port.event("all tasks settled",
                        **{s: counts[s] for s in ("done", "failed", "rejected")})
        self.port.ring("on_done", self.s.start_role, text)
        self.check_idle()

    # -- budgets -----------------------------------------------------------------

    def budget_of(self, role: str) -> dict | None:
        spec = self.s.config.role(role)
        if spec is None or (spec.budget is None and spec.budget_tokens is None):
            return None
        return {"usd": spec.budget, "tokens": spec.budget_tokens,
                "over": OVER in self.state.marks.get(role, ())}

    def session_budget(self) -> dict | None:
        cap = self.s.config.budget.session
        if cap is None:
            return None
        return {"usd": cap, "cost": self._crew_cost(),
                "over": SESSION in self.state.budget_fired,
                "action": self.s.config.budget.action}

    def _crew_cost(self) -> float:
        costs = (role_cost(self.s.config, models) for models in self.s.tokens.values())
        return sum(cost for cost in costs if cost is not None)

    def _crew_estimated(self) -> bool:
        return any(role_estimated(self.s.config, m) for m in self.s.tokens.values())

    def check_budgets(self) -> None:
        for name in list(self.s.seats):
            spec = self.s.config.role(name)
            if spec is not None:
                self._guard_role_budget(spec)
        self._guard_session_budget()

    def check_prices(self) -> None:
        """Say once per role and model that its cost is an estimate, never silently."""
        for role, models in self.s.tokens.items():
            for model in role_estimated(self.s.config, models):
                if (role, model) in self.state.unpriced:
                    continue
                self.state.unpriced.add((role, model))
                log.warning("%s used %s, which [pricing] does not list: its cost is estimated "
                            "at the highest prices [pricing] has", role, model)
                self.port.event("cost estimated", role=role, model=model,
                                reason="no [pricing] entry; priced at the highest known prices")

    def _guard_role_budget(self, spec: RoleSpec) -> None:
        models = self.s.tokens.get(spec.name, {})
        cost = role_cost(self.s.config, models)
        tokens = sum(role_tokens(models).values())
        guess = role_estimated(self.s.config, models)
        text = None
        if spec.budget is not None and cost is not None and cost >= spec.budget:
            text = f"{'~' if guess else ''}${cost:.2f} of ${spec.budget:.2f}" + (
                f" (estimated: {', '.join(guess)} not in [pricing])" if guess else "")
        elif spec.budget_tokens is not None and tokens >= spec.budget_tokens:
            text = f"{tokens} tokens of {spec.budget_tokens}"
        if not self._crossed(spec.name, (spec.budget, spec.budget_tokens), text):
            return
        pause = spec.budget_action == "pause"
        then = {"pause": "; pausing it", "block": "; the gateway refuses its model calls",
                "cut": "; the gateway refuses its model calls"}
        log.warning("%s is over its budget: %s%s", spec.name, text,
                    then.get(spec.budget_action, ""))
        self.port.event("over budget", role=spec.name, spent=text, cost=cost, budget=spec.budget,
                        tokens=tokens, budget_tokens=spec.budget_tokens, action=spec.budget_action,
                        estimated=guess)
        self.port.ring("on_budget", spec.name, text)
        if pause:
            self._budget_pause(spec.name)
        elif spec.budget_action in BLOCKING:
            # Held from now, not from the gateway's first refusal: a line typed
            # meanwhile starts a turn whose calls are refused, and a call that
            # then goes through on a retry looks like the agent going on.
            self.s.budget.refused.setdefault(spec.name, "")
        self.port.enqueue(self.s.start_role, briefs.budget_line(spec.name, text, pause,
                                                                spec.budget_action in BLOCKING),
                      "notice")

    def _guard_session_budget(self) -> None:
        cap = self.s.config.budget.session
        cost = self._crew_cost()
        guess = "~" if self._crew_estimated() else ""
        text = f"{guess}${cost:.2f} of ${cap:.2f}" if cap is not None and cost >= cap else None
        if not self._crossed(SESSION, (cap,), text):
            return
        block = self.s.config.budget.action == "block"
        log.error("THE CREW IS OVER ITS SESSION BUDGET: %s; %s", text,
                  "the gateway refuses every model call" if block else "pausing every role")
        # "scope", not "role": report would count a role named "session".
        self.port.event("over budget", scope="session", spent=text, cost=cost, budget=cap,
                        action=self.s.config.budget.action)
        self.port.ring("on_budget", "session", text)
        if not block:
            for name in list(self.s.seats):
                self._budget_pause(name)
        self.port.enqueue(self.s.start_role, briefs.budget_line("the whole crew", text, not block,
                                                                block), "notice")

    def _crossed(self, key: str, cap: tuple, text: str | None) -> bool:
        """True the first time ``key`` is over ``cap``; a different cap re-arms it."""
        fired = self.state.budget_fired
        if text is None:
            if key in fired and fired[key] != cap:
                del fired[key]
                self.mark(key, OVER, False)
                self._keep_rang()
                # No pause is owed any more for a role that has not come up yet
                # (but for one its own budget still owes).
                if key == SESSION:
                    self.state.pause_pending &= fired.keys()
                else:
                    self.state.pause_pending.discard(key)
            return False
        if fired.get(key) == cap:
            return False
        fired[key] = cap
        self.mark(key, OVER, True)
        self._keep_rang()
        return True

    def _keep_rang(self) -> None:
        """What rang is journaled with the counts it rang at: a resumed session
        does not ring it again (see :func:`rang`)."""
        self.port.journal("tokens", totals=self.s.tokens,
                          rang={key: list(cap) for key, cap in self.state.budget_fired.items()})

    def _budget_pause(self, role: str) -> None:
        seat = self.s.seats.get(role)
        if seat is not None and seat.view.status in DOWN:
            # Not started yet (over budget at the first reading) or between restarts:
            # paused as soon as it is up, so it does no work over its budget.
            self.state.pause_pending.add(role)
            return
        self.state.pause_pending.discard(role)
        if seat is not None:
            seat.handle.tell(m.Pause())
            # Not ready from now on, before the role says it is paused: a notice
            # queued next must wait for the resume, not be typed into a stopped pane.
            seat.view = replace(seat.view, ready=False)
            self.port.event("role pause", role=role, by="budget")

    # -- delegation to a role that is down ------------------------------------

    def down_roles(self, names: list[str]) -> dict[str, str]:
        """Why each of ``names`` that is exited or failed cannot take work now."""
        down = {}
        for name in names:
            view = self.s.seats[name].view
            if view.status == RoleStatus.FAILED:
                down[name] = (f"{name} has failed ({view.detail or view.exit}) and will not "
                              f"come back by itself; `choragos restart {name}` tries again")
            elif {HELD_MARK, *HOST_HOLDS} & set(self.state.marks.get(name, ())):
                down[name] = f"{name} is {view.detail}"
            elif view.status == RoleStatus.EXITED:
                then = (f"nothing restarts it; `choragos restart {name}` does"
                        if name in self.state.gone else "it is restarting")
                down[name] = f"{name} has exited ({view.exit or view.detail}); {then}"
        return down
