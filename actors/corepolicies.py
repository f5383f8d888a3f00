"""The core's policies, made when the core first uses one.

Each policy (delegation, delivery, the checks, the merge gates, the limits,
...) is a part of :class:`~choragos.actors.core.CoreActor` with its state on
``CoreState``.  None is needed for the roles' agents to start, and most
wait for the first task, so the core makes each (and loads its module) on
first use rather than at its start: the session spawns its agents without
loading some twenty modules, and a session never given a task never loads
the task flow's.  The guardrails are made at the start (the core and the
session use them at once).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from choragos.mallocarenas import give_back

# attribute -> (module in choragos.actors, class, the policies it is built with)
POLICIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "journaling": ("corejournal", "CoreJournal", ()),
    "budgets": ("budgetflow", "BudgetFlow", ("guard", "delivery")),
    "limits": ("limitflow", "LimitFlow", ("guard",)),
    "admission": ("admission", "Admission", ()),
    "exits": ("roleexits", "RoleExits", ()),
    "fresh": ("fresh", "FreshContexts", ()),
    "merges": ("mergeflow", "MergeFlow", ()),
    "holds": ("holds", "Holds", ("merges",)),
    "judge": ("judging", "JudgeLoop", ("holds", "merges")),
    "checks": ("workcheck", "WorkChecks", ("holds", "judge", "merges")),
    "isolation": ("isolationrestore", "IsolationRestore", ("holds", "judge", "merges")),
    "rollback": ("rollbackcmd", "RollbackCommand", ()),
    "reloading": ("reloadcmd", "ReloadCommand", ("budgets", "limits")),
    "resume": ("resume", "Resume", ("isolation", "checks")),
    "delegation": ("delegation", "Delegation",
                   ("journaling", "guard", "limits", "merges", "holds")),
    "timeouts": ("timeouts", "Timeouts", ("judge",)),
    "delivery": ("delivery", "Delivery", ("fresh", "guard", "timeouts")),
    "usage": ("tokenusage", "TokenUsage", ("guard",)),
    "workdone": ("workdone", "WorkDone", ("checks", "timeouts")),
}


def make(core: Any, name: str) -> Any:
    """The policy ``name`` of ``core`` (its port) over the core's state, built
    with the policies it needs (got from the core, so made first if not yet);
    AttributeError when ``name`` is no policy (looked up before the state, so
    an attribute missing before the core's ``__init__`` ran never recurses)."""
    found = POLICIES.get(name)
    if found is None:
        raise AttributeError(f"{type(core).__name__!r} object has no attribute {name!r}")
    module, cls, needs = found
    global _making
    loaded, _making = len(sys.modules), _making + 1
    try:
        policy = getattr(importlib.import_module(f"choragos.actors.{module}"), cls)
        made = policy(core, core.s, *(getattr(core, need) for need in needs))
    finally:
        _making -= 1
    if not _making and len(sys.modules) > loaded:
        # The imports' temporaries were freed into the heap's holes, pages a
        # flood's peak left (0.3 MB after the bench's floods): given back.
        give_back()
    return made


_making = 0  # make()s under way: the heap is trimmed once, after the outermost
