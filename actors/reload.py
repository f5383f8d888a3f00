"""Live reload's own actor: the core decides, this actor carries it out.

The core re-reads the config file and plans the convergence
(``choragos/session/reloadplan.py``) on its thread, converges its own state (the
roster, the board, budgets) and answers the ``reload`` command; it tells
this actor the plan (:class:`~actors.messages.ApplyReload`), never waits on
it.  The plan becomes a list of :class:`Step` (:func:`steps`, pure), which
the actor takes one by one on its crew (``actors/crew.py``): the new config,
the briefs, roles added, respawned, updated and removed (a removal may
wait out a role's grace period: here, not on the core's thread), and last
the team notice back to the core.  The actor asks only the roles
supervisor, which never waits on it, so a reload never waits on a parent.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import singledispatchmethod
from pathlib import Path
from typing import Any, Protocol

from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.config.model import Config, RoleSpec, load_config
from choragos.session.reloadplan import ReloadPlan, plan_reload


class Team(Protocol):
    """What a reload changes (the session's :class:`~actors.crew.Crew`)."""

    def use_config(self, config: Config) -> None: ...
    def write_briefs(self, config: Config) -> None: ...
    def add(self, spec: RoleSpec, handle: Any = None) -> None: ...
    def respawn(self, spec: RoleSpec) -> None: ...
    def update(self, spec: RoleSpec) -> None: ...
    def remove(self, names: list[str]) -> None: ...
    def announce(self, added: list[str], removed: list[str]) -> None: ...


@dataclass(frozen=True)
class Step:
    """One call on the team: ``action`` names the :class:`Team` method."""

    action: str
    args: tuple = ()


def plan_from_file(running: Config, workdir: Path, busy: set[str],
                   paused: Collection[str] = ()) -> ReloadPlan:
    """Re-read ``running``'s config file and plan the convergence (on the
    core's thread); raises ``ConfigError`` and then nothing changed."""
    return plan_reload(running, load_config(running.source, workdir), busy, paused)


def steps(plan: ReloadPlan, handles: dict[str, Any] | None = None) -> list[Step]:
    """The calls that carry ``plan`` out, in order."""
    handles = handles or {}
    team_changed = bool(plan.add or plan.remove)
    out = [Step("use_config", (plan.config,))]
    if plan.changed:  # before the roles (re)boot and read them: a prompt or an owner moved
        out.append(Step("write_briefs", (plan.config,)))
    out += [Step("add", (spec, handles.get(spec.name))) for spec in plan.add]
    out += [Step("respawn", (spec,)) for spec in plan.respawn]
    out += [Step("update", (spec,)) for spec in plan.update]
    if plan.remove:
        out.append(Step("remove", (list(plan.remove),)))
    if team_changed:
        out.append(Step("announce", ([spec.name for spec in plan.add], list(plan.remove))))
    return out


class ReloadActor(Actor):
    def __init__(self, team: Team, supervisor: Any = None) -> None:
        super().__init__("reload", supervisor)
        self.team = team

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(m.ApplyReload)
    def _apply(self, message: m.ApplyReload) -> None:
        for step in steps(message.plan, message.handles):
            getattr(self.team, step.action)(*step.args)
