"""An Erlang-style supervisor for choragos' own actors.

Children are started in order and stopped in reverse.  A child that reports
:class:`~actors.base.ChildFailed` is replaced by a fresh instance built from
its spec (on the same state object), unless it has crashed more than
``intensity`` times within ``period`` seconds; then it stays down, the
failure is logged, and the rest of the session carries on.
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

from choragos.actors.base import Actor, ChildFailed
from choragos.actors.handle import Handle

log = logging.getLogger("choragos.supervisor")


@dataclass
class ChildSpec:
    """How to (re)build one child: ``start(handle)`` returns a started ref."""

    name: str
    start: Callable[[Handle], pykka.ActorRef]
    intensity: int = 5
    period: float = 60.0


@dataclass(frozen=True)
class StartChild:
    spec: ChildSpec


@dataclass(frozen=True)
class StopChild:
    name: str
    timeout: float = 10.0


@dataclass(frozen=True)
class StopAll:
    timeout: float = 10.0


@dataclass
class _Child:
    spec: ChildSpec
    handle: Handle
    crashes: deque = field(default_factory=deque)


class Supervisor(Actor):
    def __init__(self, on_event: Callable[..., None] | None = None) -> None:
        super().__init__("supervisor")
        self.children: dict[str, _Child] = {}
        self.on_event = on_event or (lambda *a, **k: None)

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register
    def _start_child(self, message: StartChild) -> Handle:
        spec = message.spec
        child = self.children.get(spec.name) or _Child(spec, Handle(spec.name))
        child.spec = spec
        self.children[spec.name] = child
        child.handle.attach(spec.start(child.handle))
        return child.handle

    @handle.register
    def _child_failed(self, message: ChildFailed) -> None:
        child = self.children.get(message.name)
        if child is None:
            return
        child.handle.detach()
        now = time.monotonic()
        child.crashes.append(now)
        while child.crashes and now - child.crashes[0] > child.spec.period:
            child.crashes.popleft()
        if len(child.crashes) > child.spec.intensity:
            log.error("actor %s crashed %d times in %ss; leaving it down",
                      message.name, len(child.crashes), child.spec.period)
            self.on_event("actor given up", actor=message.name, error=message.error)
            child.handle.close()
            return
        self.on_event("actor restarted", actor=message.name, error=message.error)
        child.handle.attach(child.spec.start(child.handle), message.leftovers)

    @handle.register
    def _stop_child(self, message: StopChild) -> None:
        child = self.children.pop(message.name, None)
        if child is not None:
            _stop(child, message.timeout)

    @handle.register
    def _stop_all(self, message: StopAll) -> None:
        for name in reversed(list(self.children)):
            _stop(self.children.pop(name), message.timeout)


def _stop(child: _Child, timeout: float) -> None:
    ref = child.handle.current()
    child.handle.close()
    if ref is None:
        return
    try:
        ref.stop(block=True, timeout=timeout)
    except pykka.Timeout:
        log.warning("actor %s did not stop within %ss", child.spec.name, timeout)
    except pykka.ActorDeadError:
        pass
