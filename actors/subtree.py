"""A temporary nested supervisor that can be built again after its give-up.

The deck (``ui/decktree.py``) and the built-in gateway
(``actors/gatewayrevival.py``) each run under a supervisor of their own,
a *temporary* child of the session's: one that keeps failing is given up
alone and the crew goes on.  Given up, it is dropped by the session's
supervisor with its handles closed, so bringing it back is no restart of
the old one but a new one: a fresh :class:`SupervisorState` (a fresh
allowance, no closed handle of the old children) and fresh actors, built
from the same table once the session's supervisor has let go of the old.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from choragos.actors.children import Child, build, nested
from choragos.actors.handle import Handle
from choragos.actors.supervisor import TEMPORARY, SupervisorState

# How long a rebuild waits for the session's supervisor to drop the subtree
# it gave up (its own message, normally at once).
DROPPED_WAIT = 3.0


class Subtree:
    """One temporary nested supervisor ``name`` under ``parent`` (the
    session's supervisor, whose table is ``parent_tree``) with its own table
    ``children``; each :meth:`child` is a new one, with a fresh allowance of
    ``intensity`` restarts within ``period`` seconds."""

    def __init__(self, name: str, parent: Any, parent_tree: SupervisorState,
                 on_event: Callable[..., None], children: tuple[Child, ...], *,
                 intensity: int, period: float) -> None:
        self.name = name
        self.parent = parent
        self.parent_tree = parent_tree
        self.on_event = on_event
        self.children = children
        self.intensity = intensity
        self.period = period
        self.tree = SupervisorState(name, intensity=intensity, period=period)

    def child(self, *, wanted: bool = True) -> Child:
        """Its row in the parent's table, on a new state of its own."""
        self.tree = SupervisorState(self.name, intensity=self.intensity, period=self.period)
        return nested(self.name, self.tree, self.parent, self.on_event, restart=TEMPORARY,
                      wanted=wanted, children=self.children)

    def build(self, known: Mapping[str, Handle] | None = None) -> dict[str, Handle]:
        """Start a new one under the parent: its handles (and its children's) by
        name (``known``: the parent's children its table needs)."""
        return build((self.child(),), self.parent, known)

    def await_dropped(self) -> None:
        """Before a rebuild: wait until the parent has dropped the given-up one."""
        if not wait_for(lambda: self.name not in self.parent_tree.children, DROPPED_WAIT):
            raise RuntimeError(f"the session's supervisor still holds the {self.name} "
                               "it gave up")


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Poll ``condition`` until it holds (True) or ``seconds`` pass (False)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True
