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

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from choragos.actors.children import Child, build, nested
from choragos.actors.handle import Handle
from choragos.actors.supervisor import TEMPORARY, SupervisorState

log = logging.getLogger("choragos.supervisor")

# How long a rebuild waits for the session's supervisor to drop the subtree
# it gave up (its own message, normally at once).
DROPPED_WAIT = 3.0


class Subtree:
    """One temporary nested supervisor ``name`` under ``session``'s own, with
    its own table ``children``; each :meth:`child` is a new one, with a fresh
    allowance of ``intensity`` restarts within ``period`` seconds.  Its
    supervisor's events go to the session's event log, and its give-up, with
    the reason, to ``on_given_up``."""

    def __init__(self, name: str, session: Any, children: tuple[Child, ...], *,
                 intensity: int, period: float,
                 on_given_up: Callable[[str], None]) -> None:
        self.name = name
        self.session = session
        self.parent = session.supervisor
        self.parent_tree: SupervisorState = session.tree
        self.on_given_up = on_given_up
        self.children = children
        self.intensity = intensity
        self.period = period
        self.tree = SupervisorState(name, intensity=intensity, period=period)

    def on_event(self, kind: str, **fields: Any) -> None:
        """Its supervisor's events (on that supervisor's thread)."""
        self.session.events.write(kind, **fields)
        if kind == "actor given up" and fields.get("supervisor") == self.name:
            try:
                self.on_given_up(str(fields.get("reason", "")))
            except Exception:  # the give-up itself must still happen
                log.exception("telling of the %s's give-up failed", self.name)

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


def tell_exit_hook(session: Any, part: str, what: str, reason: str) -> None:
    """A part given up for good is told as a role stopped for good is: the
    ``on_exit`` hook (and the notifier through it), with
    ``CHORAGOS_EXITED=part`` and ``CHORAGOS_PART`` so that a role of the same
    name is not mistaken for it (docs/configuration.md)."""
    hooks = session.core_state.hooks if session.core_state is not None else None
    if hooks is not None:
        hooks.fire("on_exit", role=part, task=f"{what} stopped: {reason}",
                   extra={"CHORAGOS_EXIT": "given up after repeated failures",
                          "CHORAGOS_EXITED": "part", "CHORAGOS_PART": part})


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Poll ``condition`` until it holds (True) or ``seconds`` pass (False)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True
