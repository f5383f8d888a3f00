"""Live reload: converge the running team on an edited config.

Roles are matched by name.  Added roles spawn, removed roles stop, a role
whose process-defining keys changed respawns, and a role whose other keys
changed takes them on its next task (budgets and ``stall_after`` at once,
and ``[budget]`` too, so a raised cap re-arms without a restart, and
``[ui] limit_wait`` and ``limit_give_up`` at the next provider limit).
Guardrails: the start role is never touched (its process holds the plan),
a role with work in flight (a pending gate or an unresolved delegation)
is not respawned, and a role whose ``host`` or ``worktree`` changed, or a
remote role whose process changed, keeps running as it is until a restart
(its seat, its tree and its remote command are made when it starts).  Only
``[[roles]]``, ``[budget]`` and those two keys converge; other sections
need a restart.
What it changes that only the operator may decide is listed in
``operator`` (``choragos/session/reloadguard.py``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace

from choragos.config.model import Config, RoleSpec

# typing is needed for annotations only; the session loads this module at its
# start (for the reload message's type) and the guard only on a reload.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from choragos.session.reloadguard import OperatorChange

# Changing one of these means a different process: the role respawns.
PROCESS_KEYS = ("command", "args", "model", "model_flag", "env_allow", "env_deny",
                "base_url_env")
# Made once, when the role starts: its remote seat, its worktree.
SEAT_KEYS = ("host", "worktree")
# The provider limits' waits, read by the core at each limit: a reload sets them.
UI_NOW = ("limit_wait", "limit_give_up")
SECTIONS = ("checkpoints", "sphragis", "gateway", "pricing", "ui", "keys", "metrics", "web",
            "notify", "hosts")


@dataclass
class ReloadPlan:
    """What a reload does to the running team: the roles to add, remove, respawn or update."""

    config: Config                      # the effective config after the reload
    add: list[RoleSpec] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    respawn: list[RoleSpec] = field(default_factory=list)
    update: list[RoleSpec] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)   # "coder: has work in flight"
    notes: list[str] = field(default_factory=list)
    operator: list[OperatorChange] = field(default_factory=list)

    @property
    def loosened(self) -> list[str]:
        """The operator's decisions the file loosens: applied only when confirmed."""
        return [change.text for change in self.operator if change.loosens]

    @property
    def changed(self) -> bool:
        return bool(self.add or self.remove or self.respawn or self.update)

    def summary(self) -> dict:
        return {"added": [r.name for r in self.add], "removed": self.remove,
                "respawned": [r.name for r in self.respawn],
                "updated": [r.name for r in self.update],
                "refused": self.refused, "notes": self.notes,
                "operator": [change.text for change in self.operator],
                "loosened": self.loosened}


def _differs(old: RoleSpec, new: RoleSpec, keys: tuple[str, ...]) -> bool:
    return any(getattr(old, key) != getattr(new, key) for key in keys)


def plan_reload(old: Config, new: Config, busy: set[str],
                paused: Collection[str] = ()) -> ReloadPlan:
    """Compare ``old`` (running) with ``new`` (re-read); ``busy`` roles have
    work, ``paused`` ones the operator paused (a respawn would resume them)."""
    from choragos.session.reloadguard import operator_changes

    plan = ReloadPlan(config=new, operator=operator_changes(old, new))
    start = old.start_role
    kept: dict[str, RoleSpec] = {}
    for spec in new.roles:
        if spec.start or spec.name == start.name:
            continue
        before = old.role(spec.name)
        kept[spec.name] = _converge_one(plan, before, spec, busy, paused)
    new_start = next((r for r in new.roles if r.start), None)
    if new_start is None or new_start != start:
        plan.notes.append(f"the start role {start.name} is never changed by a reload; "
                          f"restart the session to apply changes to it")
    for spec in old.workers:
        if new.role(spec.name) is None or new.role(spec.name).start:
            plan.remove.append(spec.name)
    if old.budget != new.budget:
        plan.notes.append("[budget] changed; it applies now")
    now = {key: getattr(new.ui, key) for key in UI_NOW
           if getattr(old.ui, key) != getattr(new.ui, key)}
    if now:
        plan.notes.append(f"[ui] {' and '.join(now)} changed; the next provider limit uses it")
    for section in SECTIONS:
        before, after = getattr(old, section), getattr(new, section)
        if section == "ui":  # what applies now is not what waits
            after = replace(after, **{key: getattr(old.ui, key) for key in UI_NOW})
        if before != after:
            plan.notes.append(f"[{section}] changed; it applies after a restart")
    roles = (start, *(kept[name] for name in kept))
    plan.config = replace(old, roles=roles, budget=new.budget, source=new.source,
                          warnings=new.warnings, ui=replace(old.ui, **now))
    return plan


def _converge_one(plan: ReloadPlan, before: RoleSpec | None, spec: RoleSpec,
                  busy: set[str], paused: Collection[str]) -> RoleSpec:
    """Decide for one role of the new config; return the spec that will run."""
    if before is None:
        plan.add.append(spec)
        return spec
    if before == spec:
        return spec
    if _differs(before, spec, SEAT_KEYS):
        plan.refused.append(f"{spec.name}: a changed host or worktree applies after a "
                            f"restart of the session; {spec.name} kept running as it was")
        return before
    if before.host and _differs(before, spec, PROCESS_KEYS):
        plan.refused.append(f"{spec.name} runs on {before.host}: a changed command, args, "
                            f"model or env applies after a restart of the session; "
                            f"{spec.name} kept running as it was")
        return before
    if _differs(before, spec, PROCESS_KEYS):
        if spec.name in busy:
            plan.refused.append(f"{spec.name}: has a pending gate or an unresolved "
                                f"delegation; reload again once it is resolved")
            return before
        if spec.name in paused:
            plan.refused.append(f"{spec.name} is paused: a respawn would resume it; "
                                f"`choragos resume {spec.name}`, then reload again")
            return before
        plan.respawn.append(spec)
        return spec
    plan.update.append(spec)
    return spec
