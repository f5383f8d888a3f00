"""The ``reload`` command: the core's side of a live reload.

A policy of the session core.  It re-reads the config file and plans the
convergence (``choragos/session/reloadplan.py``) on the core's thread,
refuses a file with errors or one that loosens what only the operator
decides (``choragos/session/reloadguard.py``) unless the request says
``loosen``, converges the core's own state (the roster, the board, the
budgets and limits), answers, and tells the reload actor (``actors/reload.py``)
the plan, never waiting on it.  A removed role's work that cannot go on
ends here, each piece with its reason on the board, in the event log and
in a line to the start role.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors.core import Seat
from choragos.actors.coreport import CorePort
from choragos.actors.handle import Handle
from choragos.actors.reload import plan_from_file
from choragos.board.tasks import TaskState
from choragos.config.model import ConfigError
from choragos.control import wire
from choragos.roles import briefs
from choragos.roles.rolestatus import RoleStatus
from choragos.session.reloadguard import LATER

if TYPE_CHECKING:
    from choragos.actors.budgetflow import BudgetFlow
    from choragos.actors.core import CoreState
    from choragos.actors.limitflow import LimitFlow
    from choragos.config.model import Config
    from choragos.session.reloadplan import ReloadPlan


class ReloadCommand:
    """A policy of the core: answers ``reload`` and converges the core's state."""

    def __init__(self, port: CorePort, s: CoreState, budgets: BudgetFlow,
                 limits: LimitFlow) -> None:
        self.port, self.s, self.budgets, self.limits = port, s, budgets, limits
        # Loosenings confirmed that wait for a restart: the running config
        # keeps its old side, so each later reload would name them again.
        self.confirmed: set[str] = set()

    def command(self, request: dict) -> dict:
        reloader = self.s.reloader
        if reloader is None:
            return wire.error("this session runs the built-in team, so there is no config "
                              "to re-read; write a .choragos.toml and restart the session")
        try:
            plan = plan_from_file(self.s.config, self.s.workdir, self._busy_roles(),
                                  self._paused_roles())
        except ConfigError as exc:
            self.port.event("reload refused", errors=exc.errors)
            return wire.error("the config has errors, nothing changed: " + "; ".join(exc.errors))
        loosened = [change for change in plan.loosened if change not in self.confirmed]
        if loosened and not (request.get("loosen") and _as_seen(request, loosened)):
            # An agent may have written it: the operator says so, or nothing changes.
            self.port.event("reload refused", loosened=loosened)
            return wire.error(loosen_refusal(loosened, self.s.config.source),
                              loosened=loosened, seen=loosened_mark(loosened))
        self.confirmed |= {change for change in plan.loosened if change.endswith(LATER)}
        before, self.s.config = self.s.config, plan.config
        for name in plan.remove:
            plan.notes += self._remove_seat(name)
        for spec in plan.add:  # addressable at once: the handle keeps what is sent meanwhile
            self.s.seats[spec.name] = Seat(spec.name, Handle(f"role:{spec.name}"),
                                           m.RoleView(spec.name, RoleStatus.STARTING))
        reloader.tell(m.ApplyReload(plan, {s.name: self.s.seats[s.name].handle
                                           for s in plan.add}))
        self.port.event("reload", **plan.summary())
        self.port.journal("reload", **plan.summary())
        self._record(plan.config)
        self.budgets.changed(before)
        self.limits.reconfigured()
        return wire.ok(message=reload_message(plan), **plan.summary())

    def _record(self, config: Config) -> None:
        """What the operator now runs (confirmed, or nothing to confirm) is
        what the next start compares the file with."""
        from choragos.session import confirmed  # loaded by serve's client already

        problem = confirmed.record(self.s.workdir, config)
        if problem:
            self.port.event("confirmed config not recorded", reason=problem)

    def _busy_roles(self) -> set[str]:
        busy = {task.role for task in self.s.board.tasks.values() if task.is_open}
        return busy | {name for name, seat in self.s.seats.items()
                       if seat.queue or seat.in_flight}

    def _paused_roles(self) -> list[str]:
        return [name for name, seat in self.s.seats.items()
                if seat.view.status == RoleStatus.PAUSED]

    def _remove_seat(self, name: str) -> list[str]:
        """``name`` leaves the roster: its work that cannot go on ends, said on
        the board, in the event log and to the start role; its finished work
        held for the operator stays held.  Returns what the answer says of it."""
        seat = self.s.seats.pop(name, None)
        if seat is None:
            return []
        self.limits.forget(name)
        self.port.journal("drop queue", role=name)
        reason = f"{name} was removed from the team by a reload"
        for task_id in [t for t, task in self.s.gates.items() if task.role == name]:
            task = self.s.gates.pop(task_id)
            self.port.move(task_id, TaskState.REJECTED, note=reason)
            self.port.event("gate rejected", task=task_id, role=name, reason=reason)
            self.port.enqueue(self.s.start_role, briefs.failure_line(task, reason), "notice",
                              task_id)
        mine = [task for task in self.s.board.tasks.unsettled_tasks() if task.role == name]
        # Finished work waiting at a judge, owner or merge gate, or for its
        # judge, is the operator's (or the judge's) to decide, worker or not.
        held = [task.id for task in mine if task.waiting] + [
            i for i, gate in (*self.s.holds.items(), *self.s.merging.gates.items())
            if gate.role == name]
        for task in mine:
            if not task.waiting and (task.is_open or task.state is TaskState.BLOCKED):
                self.port.fail_task(task, reason)
        return [f"{name}'s finished work {', '.join(dict.fromkeys(held))} still waits at its "
                f"gate or for its judge (`choragos gate list`)"] if held else []


def reload_message(plan: ReloadPlan) -> str:
    """The answer's one line: what changed, then what did not and why."""
    parts = [f"{label} {', '.join(names)}" for label, names in (
        ("added", [r.name for r in plan.add]), ("removed", plan.remove),
        ("respawned", [r.name for r in plan.respawn]),
        ("updated", [r.name for r in plan.update])) if names]
    text = "; ".join(parts) if parts else "no role changed"
    extra = plan.refused + plan.notes + list(plan.config.warnings)
    if plan.operator:
        extra.append("only you decide these, now as the file says: "
                     + ", ".join(change.text for change in plan.operator))
    return text + (" (" + "; ".join(extra) + ")" if extra else "")


def loosened_mark(loosened: list[str]) -> str:
    """A short mark of the loosenings a refusal named, which a confirmation
    made after seeing them sends back (``seen``)."""
    return hashlib.sha256("\n".join(loosened).encode()).hexdigest()[:16]


def _as_seen(request: dict, loosened: list[str]) -> bool:
    """A confirmation that names what it saw (the deck's) holds only for
    that: a file changed again meanwhile is asked about again."""
    seen = request.get("seen")
    return not seen or seen == loosened_mark(loosened)


def loosen_refusal(loosened: list[str], source: Any) -> str:
    """One sentence: what to run first (a deck's status line may cut the
    end), then what the file loosens."""
    return (f"nothing changed: {source} loosens what only you decide; if you made these "
            f"changes, run `choragos reload --loosen`: {'; '.join(loosened)}")
