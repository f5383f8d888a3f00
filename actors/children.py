"""The session's tree as a table: which children, in which order, built how.

Each :class:`Child` names one child of a supervisor: the factory that makes
its start function (given the handles of the children it needs; None when
this session runs without it, checkpoints off for one), its restart type,
the children it addresses (started before it), what is done once it runs
(its ``started`` hook: the first message, a field of the core's state),
the handle it was given before it runs, if any (what is sent to it
meanwhile waits there) and, for a nested supervisor, its state and its
own table.

:func:`build` checks a table before it starts anything (a name twice, or a
child needing one that is not listed before it, is a ``ValueError``), then
starts the children in order under their supervisor and returns their
handles by name.  The tree the session builds is drawn in
docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import pykka

from choragos.actors.handle import Handle
from choragos.actors.supervisor import (
    PERMANENT,
    ChildSpec,
    StartChild,
    Supervisor,
    SupervisorState,
)

Start = Callable[[Handle], pykka.ActorRef]
Factory = Callable[[Mapping[str, Handle]], Start | None]
START_TIMEOUT = 10.0


def _nothing(handle: Handle) -> None:
    return None


@dataclass(frozen=True)
class Child:
    """One child in a supervisor's table: how it is made, what it needs, how it restarts."""

    name: str
    factory: Factory
    restart: str = PERMANENT
    needs: tuple[str, ...] = ()  # started before it; their handles go to its factory
    started: Callable[[Handle], None] = _nothing
    tree: SupervisorState | None = None  # a nested supervisor's state ...
    children: tuple[Child, ...] = ()     # ... and its own table, started under it
    # The address already handed out (messages sent to it wait there until it runs).
    handle: Handle | None = None


def nested(name: str, tree: SupervisorState, parent: pykka.ActorRef | Handle,
           on_event: Callable[..., None], *, wanted: bool = True,
           restart: str = PERMANENT, children: tuple[Child, ...] = (),
           started: Callable[[Handle], None] = _nothing) -> Child:
    """A nested supervisor on ``tree`` with its own table (``wanted=False``:
    this session runs without it)."""

    def factory(deps: Mapping[str, Handle]) -> Start | None:
        return (lambda h: Supervisor.start(tree, parent, on_event)) if wanted else None

    return Child(name, factory, restart=restart, started=started, tree=tree, children=children)


def check(table: Iterable[Child], known: Iterable[str] = ()) -> None:
    """Raise ``ValueError`` naming the first child listed twice or before one it needs."""
    seen = set(known)
    for child in table:
        if child.name in seen:
            raise ValueError(f"the child {child.name!r} is listed twice")
        missing = [name for name in child.needs if name not in seen]
        if missing:
            raise ValueError(f"the child {child.name!r} needs {', '.join(missing)}, "
                             f"which is not listed before it")
        seen.add(child.name)
        check(child.children, seen)
        seen.update(_names(child.children))


def build(table: tuple[Child, ...], under: pykka.ActorRef | Handle,
          known: Mapping[str, Handle] | None = None) -> dict[str, Handle]:
    """Start ``table`` under the supervisor ``under``, in order; every handle by name
    (a child whose factory said no is left out, and its dependents get no handle
    for it)."""
    check(table, known or {})
    return _build(table, under, dict(known or {}))


def _build(table: tuple[Child, ...], under: pykka.ActorRef | Handle,
           handles: dict[str, Handle]) -> dict[str, Handle]:
    started: dict[str, Handle] = {}
    for child in table:
        start = child.factory({name: handles[name] for name in child.needs if name in handles})
        if start is None:
            continue
        spec = ChildSpec(child.name, start, restart=child.restart, tree=child.tree)
        handle = under.ask(StartChild(spec, child.handle), timeout=START_TIMEOUT)
        handles[child.name] = started[child.name] = handle
        if child.children:
            started.update(_build(child.children, handle, handles))
        child.started(handle)
    return started


def _names(table: Iterable[Child]) -> set[str]:
    names = set()
    for child in table:
        names.add(child.name)
        names |= _names(child.children)
    return names
