"""An Erlang-style supervisor for choragos' own actors.

A supervisor starts its children in order and stops them in reverse.  Each
child has a *restart type* (:class:`ChildSpec` ``restart``):

- ``permanent``: replaced after a crash and after a normal exit;
- ``transient``: replaced after a crash only (a normal exit,
  :meth:`Actor.finish`, leaves it down);
- ``temporary``: never replaced; its handle is closed when it ends.

and each supervisor a *strategy* (:class:`SupervisorState` ``strategy``):

- ``one_for_one``: only the crashed child is replaced;
- ``rest_for_one``: the children started after it depend on it, so they are
  retired (stopped without a shutdown, their state kept) and started again,
  in order, after it.

A replacement is a fresh instance on the same state object; messages sent
meanwhile are buffered in the child's :class:`Handle` (see ``handle.py``).

*Intensity*: a supervisor allows ``intensity`` replacements within
``period`` seconds, counted over all its children.  One more, and it gives
up: it logs what gave up and why, retires its children and crashes itself,
so its own supervisor sees a crash of that child (and replaces it, which
starts the children again, or gives up in turn).  The supervisor at the top
has no supervisor: its ``on_give_up(reason)`` is called instead (the
session stops cleanly), and the child that could not be kept up has its
handle closed, so messages to it fail loudly.

The API the rest of the code relies on is small: ``Supervisor.start(...)``,
``ask(StartChild(spec))`` → the child's :class:`Handle`, ``ask(StopChild(name))``,
``ask(StopAll())``, ``tell(SetIntensity(n))`` (a supervisor whose children
come and go, the roles', keeps its allowance per child), and
:func:`supervisor_spec` to nest a supervisor as a child.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import Any

import pykka

from choragos.actors.base import Actor, ChildExited, ChildFailed, Retire
from choragos.actors.handle import Handle
from choragos.actors.threadhook import ThreadDied

log = logging.getLogger("choragos.supervisor")

PERMANENT, TRANSIENT, TEMPORARY = "permanent", "transient", "temporary"
ONE_FOR_ONE, REST_FOR_ONE = "one_for_one", "rest_for_one"
RESTART_TYPES = (PERMANENT, TRANSIENT, TEMPORARY)
STRATEGIES = (ONE_FOR_ONE, REST_FOR_ONE)
RETIRE_TIMEOUT = 10.0


class SupervisorGaveUp(Exception):
    """Raised by a supervisor over its intensity: its parent sees a crash."""


@dataclass
class ChildSpec:
    """How to (re)build one child: ``start(handle)`` returns a started ref.

    ``tree`` is set for a child that is itself a supervisor (see
    :func:`supervisor_spec`), so a stop reaches its children even when the
    supervisor instance is down.
    """

    name: str
    start: Callable[[Handle], pykka.ActorRef]
    restart: str = PERMANENT
    tree: SupervisorState | None = None

    def __post_init__(self) -> None:
        if self.restart not in RESTART_TYPES:
            raise ValueError(f"restart type {self.restart!r} is not one of {RESTART_TYPES}")


@dataclass(frozen=True)
class StartChild:
    """Start ``spec``'s child; ``handle``, when given, is the address the
    sender already handed out (messages sent to it meanwhile wait in it)."""

    spec: ChildSpec
    handle: Handle | None = None


@dataclass(frozen=True)
class StartChildren:
    """Start each child in order (one message for many, as a session's roles
    start: the sender waits once, not once a child); their handles, in order."""

    children: tuple[StartChild, ...]


@dataclass(frozen=True)
class StopChild:
    """Stop the child ``name`` and drop it from the supervisor's table."""

    name: str
    timeout: float = 10.0


@dataclass(frozen=True)
class StopAll:
    """Stop every child, the last started first."""

    timeout: float = 10.0


@dataclass(frozen=True)
class SetIntensity:
    """The restarts allowed within the period from now on (restarts already
    counted stay counted)."""

    intensity: int


@dataclass
class _Child:
    """A child in the supervisor's table: its spec, its handle, the instance running now."""

    spec: ChildSpec
    handle: Handle
    urn: str = ""  # the running instance; reports about older ones are stale


@dataclass
class SupervisorState:
    """What survives a restart of the supervisor itself: its children (in
    start order, with their handles) and its recent restarts."""

    name: str = "session"
    strategy: str = ONE_FOR_ONE
    intensity: int = 5
    period: float = 60.0
    children: dict[str, _Child] = field(default_factory=dict)
    restarts: deque = field(default_factory=deque)
    gave_up: str | None = None

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy {self.strategy!r} is not one of {STRATEGIES}")


class Supervisor(Actor):
    """Supervises the children in ``state``; ``parent`` hears its crash.

    ``on_event(kind, **fields)`` is told "actor restarted", "actor exited",
    "actor given up" (the child that took this supervisor over its
    intensity, with ``supervisor`` and ``reason``) and "thread died" (a
    :class:`ThreadDied` told to it); ``on_give_up(reason)`` is
    called when a supervisor without a parent gives up.
    """

    def __init__(self, state: SupervisorState | None = None, parent: Any = None,
                 on_event: Callable[..., None] | None = None,
                 on_give_up: Callable[[str], None] | None = None) -> None:
        self.s = state or SupervisorState()
        super().__init__(self.s.name, parent)
        self.on_event = on_event or (lambda *a, **k: None)
        self.on_give_up = on_give_up

    @property
    def children(self) -> dict[str, _Child]:
        return self.s.children

    def on_start(self) -> None:
        # A replacement (after this supervisor gave up or crashed) brings its
        # children back, in order; one still running is kept as it is.
        for child in list(self.s.children.values()):
            if child.handle.current() is None and not child.handle.closed:
                self._launch(child)

    def on_retire(self) -> None:
        for name in reversed(list(self.s.children)):
            _retire(self.s.children[name])

    def on_shutdown(self) -> None:
        stop_children(self.s, RETIRE_TIMEOUT)

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(StartChild)
    def _start_child(self, message: StartChild) -> Handle:
        spec = message.spec
        child = self.s.children.get(spec.name) or _Child(spec, message.handle or Handle(spec.name))
        child.spec = spec
        self.s.children[spec.name] = child
        self._launch(child)
        return child.handle

    @handle.register(StartChildren)
    def _start_children(self, message: StartChildren) -> list[Handle]:
        return [self._start_child(start) for start in message.children]

    @handle.register(ChildFailed)
    def _child_failed(self, message: ChildFailed) -> None:
        self._ended(message.name, message.urn, message.error, message.leftovers,
                    restart=lambda child: child.spec.restart != TEMPORARY)

    @handle.register(ChildExited)
    def _child_exited(self, message: ChildExited) -> None:
        self._ended(message.name, message.urn, "it finished its work", [],
                    restart=lambda child: child.spec.restart == PERMANENT)

    def _ended(self, name: str, urn: str, why: str, leftovers: list[Any],
               restart: Callable[[_Child], bool]) -> None:
        """A child's instance ended: replace it, or leave it down for good."""
        child = self._current(name, urn)
        if child is None:
            return
        child.handle.detach()
        if restart(child):
            self._restart(child, why, leftovers)
        else:
            self._drop(child, why)

    @handle.register(StopChild)
    def _stop_child(self, message: StopChild) -> None:
        child = self.s.children.pop(message.name, None)
        if child is not None:
            _stop(child, message.timeout)

    @handle.register(StopAll)
    def _stop_all(self, message: StopAll) -> None:
        stop_children(self.s, message.timeout)

    @handle.register(SetIntensity)
    def _set_intensity(self, message: SetIntensity) -> None:
        self.s.intensity = message.intensity

    @handle.register(ThreadDied)
    def _thread_died(self, message: ThreadDied) -> None:
        """A thread outside the tree died (see ``threadhook``): said, not restarted."""
        self.on_event("thread died", thread=message.thread, error=message.error,
                      supervisor=self.s.name)

    # -- restarts ------------------------------------------------------------

    def _current(self, name: str, urn: str) -> _Child | None:
        child = self.s.children.get(name)
        if child is None or (urn and child.urn and urn != child.urn):
            return None  # stopped on purpose, or about an instance already replaced
        return child

    def _restart(self, crashed: _Child, error: str, leftovers: list[Any]) -> None:
        if self._over_intensity():
            crashed.handle.requeue(leftovers)
            self._give_up(crashed, error)
            return
        self.on_event("actor restarted", actor=crashed.spec.name, error=error,
                      supervisor=self.s.name)
        later = self._dependents(crashed)
        for child in reversed(later):
            _retire(child)
        crashed.handle.requeue(leftovers)
        self._launch(crashed)
        for child in later:
            self._launch(child)

    def _dependents(self, crashed: _Child) -> list[_Child]:
        """The children started after ``crashed`` (rest-for-one), else none."""
        if self.s.strategy != REST_FOR_ONE:
            return []
        names = list(self.s.children)
        after = names[names.index(crashed.spec.name) + 1:]
        return [self.s.children[name] for name in after]

    def _over_intensity(self) -> bool:
        now = time.monotonic()
        self.s.restarts.append(now)
        while self.s.restarts and now - self.s.restarts[0] > self.s.period:
            self.s.restarts.popleft()
        return len(self.s.restarts) > self.s.intensity

    def _give_up(self, crashed: _Child, error: str) -> None:
        reason = (f"{crashed.spec.name} failed {len(self.s.restarts)} times within "
                  f"{self.s.period:g}s (intensity {self.s.intensity}); last: {error}")
        log.error("supervisor %s gives up: %s", self.s.name, reason)
        self.on_event("actor given up", actor=crashed.spec.name, supervisor=self.s.name,
                      error=error, reason=reason)
        self.s.restarts.clear()
        if self.supervisor is None:
            self.s.gave_up = reason
            crashed.handle.close(f"supervisor {self.s.name} gave up on it: {reason}")
            if self.on_give_up is not None:
                self.on_give_up(f"supervisor {self.s.name} gave up: {reason}")
            return
        # Escalate: the children stop without a shutdown (their state kept for
        # the replacement of this supervisor), then this instance crashes.
        for name in reversed(list(self.s.children)):
            _retire(self.s.children[name])
        raise SupervisorGaveUp(reason)

    def _drop(self, child: _Child, why: str) -> None:
        self.s.children.pop(child.spec.name, None)
        _close_tree(child, f"{child.spec.restart} child not restarted: {why}")
        self.on_event("actor exited", actor=child.spec.name, restart=child.spec.restart,
                      reason=why, supervisor=self.s.name)

    def _launch(self, child: _Child) -> None:
        ref = child.spec.start(child.handle)
        child.urn = ref.actor_urn
        child.handle.attach(ref)


def supervisor_spec(state: SupervisorState, parent: Any,
                    on_event: Callable[..., None] | None = None,
                    restart: str = PERMANENT) -> ChildSpec:
    """A nested supervisor as a child of ``parent`` (an ActorRef or Handle)."""
    return ChildSpec(state.name, lambda h: Supervisor.start(state, parent, on_event),
                     restart=restart, tree=state)


def stop_children(state: SupervisorState, timeout: float) -> None:
    """Stop every child of ``state``, last started first (also usable when the
    supervisor instance itself is down: nested trees are reached through
    their state)."""
    for name in reversed(list(state.children)):
        _stop(state.children.pop(name), timeout)


def _close_tree(child: _Child, why: str) -> None:
    """Close the handles of ``child`` and, for a supervisor, of all below it."""
    child.handle.close(why)
    if child.spec.tree is not None:
        for below in child.spec.tree.children.values():
            _close_tree(below, why)


def _retire(child: _Child) -> None:
    """Stop the running instance without a shutdown; the handle keeps its
    unread tells, ahead of what is sent meanwhile, for the replacement."""
    child.handle.detach()
    ref = pykka.ActorRegistry.get_by_urn(child.urn) if child.urn else None
    if ref is None:
        return
    try:
        child.handle.requeue(ref.ask(Retire(), timeout=RETIRE_TIMEOUT) or [])
    except pykka.ActorDeadError:
        pass
    except pykka.Timeout:
        log.warning("actor %s did not retire within %ss", child.spec.name, RETIRE_TIMEOUT)


def _stop(child: _Child, timeout: float) -> None:
    ref = child.handle.current()
    child.handle.close()
    if ref is None:
        if child.spec.tree is not None:  # a nested supervisor that is down
            stop_children(child.spec.tree, timeout)
        return
    try:
        ref.stop(block=True, timeout=timeout)
    except pykka.Timeout:
        log.warning("actor %s did not stop within %ss", child.spec.name, timeout)
    except pykka.ActorDeadError:
        pass
