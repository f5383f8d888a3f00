"""The listener actor owns the control server: its accept loop killed for
real (the listening fd closed under it) is a crash its supervisor sees, and
the restarted listener binds a new socket while clients keep connecting."""

from __future__ import annotations

import os
import stat
import threading
import time
from functools import singledispatchmethod
from pathlib import Path
from typing import Any

import pykka
import pytest

from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.actors.listener import ListenerActor, ListenerState
from choragos.actors.supervisor import (
    ChildSpec,
    StartChild,
    StopAll,
    Supervisor,
    SupervisorState,
)
from choragos.control import wire
from choragos.control.server import bind_server
from tests.conftest import wait_until


class EchoCore(Actor):
    """A core that answers every request with the command it saw."""

    def __init__(self, supervisor: Any) -> None:
        super().__init__("core", supervisor)

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register
    def _dispatch(self, msg: m.Dispatch) -> dict:
        return wire.ok(seen=msg.request["cmd"])


class Session:
    """A supervisor with a core and a listener, as the session wires them."""

    def __init__(self, path: Path, intensity: int = 5) -> None:
        self.events: list[tuple[str, dict]] = []
        self.gave_up: list[str] = []
        self.sup = Supervisor.start(SupervisorState(intensity=intensity),
                                    on_event=self.event, on_give_up=self.gave_up.append)
        sup = self.sup
        self.core = sup.ask(StartChild(ChildSpec("core", lambda h: EchoCore.start(sup))))
        self.server = bind_server(path, self.event)
        state = ListenerState(self.server, self.core)
        self.listener = sup.ask(StartChild(ChildSpec(
            "listener", lambda h: ListenerActor.start(state, h, sup))))

    def event(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))

    def count(self, kind: str) -> int:
        return sum(e[0] == kind for e in self.events)

    def stop(self) -> None:
        self.server.close()  # first, as Session.stop does: a given-up listener cannot
        self.sup.ask(StopAll(), timeout=30)
        self.sup.stop()


class ClientLoop(threading.Thread):
    """Connects again and again, recording each answer's time and outcome."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.results: list[tuple[float, bool]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                ack = wire.request(self.path, {"cmd": "ping"}, timeout=5)
                ok = ack.get("status") == "ok" and ack.get("seen") == "ping"
            except (wire.Unreachable, wire.WireError):
                ok = False
            self.results.append((time.monotonic(), ok))

    def ok_since(self, moment: float) -> int:
        return sum(ok for at, ok in list(self.results) if at > moment)


@pytest.fixture
def session(short_tmp):
    made = []

    def make(**kw: Any) -> Session:
        made.append(Session(short_tmp / "ctl" / "s.sock", **kw))
        return made[-1]

    yield make
    for s in made:
        s.stop()
        assert not s.server.path.exists(), "socket left behind"
    wait_until(lambda: not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()],
               10, message="every actor stopped")


def _accept_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ctl-accept")]


def test_a_killed_accept_loop_is_restarted_while_clients_keep_connecting(session):
    s = session()
    path = s.server.path
    clients = ClientLoop(path)
    clients.start()
    try:
        wait_until(lambda: clients.ok_since(0) >= 3, 10, message="clients served")
        first = _accept_threads()
        os.close(s.server._listener.fileno())  # the accept loop's socket, gone under it
        killed = time.monotonic()
        wait_until(lambda: s.count("socket: accept loop died") == 1, 20,
                   message="the loop's death seen")
        wait_until(lambda: any(e == "actor restarted" and f["actor"] == "listener"
                               for e, f in s.events), 10, message="the listener restarted")
        wait_until(lambda: clients.ok_since(killed) >= 5, 15,
                   message="clients served again after the restart")
    finally:
        clients.halt.set()
        clients.join(10)
    assert s.count("socket: socket rebound") == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert s.server.lock_path.exists()  # the lock was held throughout
    assert [t for t in _accept_threads() if t not in first]  # a new accept thread
    assert not [t for t in first if t.is_alive()]
    assert s.gave_up == []


def test_an_accept_loop_that_keeps_dying_escalates_to_the_top(session):
    s = session(intensity=1)
    for death in (1, 2):
        wait_until(lambda: s.server.accepting, 10, message="accepting")
        s.server.inject_fault()
        wait_until(lambda d=death: s.count("socket: accept loop died") == d, 10,
                   message=f"death {death}")
    wait_until(lambda: s.gave_up, 10, message="the top gave up")
    assert "listener failed 2 times" in s.gave_up[0]
    with pytest.raises(Exception, match="listener is gone"):
        s.listener.tell(m.Spawn())
