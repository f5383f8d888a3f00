"""A remote role's control socket is served by a listener actor of its own:
its accept loop killed for real is a crash the session's tree restarts on a
fresh socket, and every request on it is still that role's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pykka
import pytest

from choragos.actors.listener import ListenerActor
from choragos.actors.remoteseats import RemoteSeats, RoleSocket
from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor, SupervisorState
from choragos.config.model import load_config
from choragos.control import wire
from tests.conftest import wait_until
from tests.integration.harness import role_toml


@pytest.mark.timeout(60)
def test_a_remote_roles_dead_socket_is_restarted_and_stays_that_roles(short_tmp: Path):
    work = short_tmp / "work"
    work.mkdir()
    (work / ".choragos.toml").write_text(role_toml("orchestrator", start=True))
    events: list[tuple[str, dict[str, Any]]] = []

    def event(kind: str, **fields: Any) -> None:
        events.append((kind, fields))

    sup = Supervisor.start(SupervisorState(intensity=3), on_event=event)

    def supervise(name: str, served: RoleSocket) -> None:
        sup.ask(StartChild(ChildSpec(name, lambda h: ListenerActor.start(served, h, sup, name))),
                timeout=10)

    seats = RemoteSeats(load_config(None, work), work, short_tmp / "run" / "s.sock", event,
                        supervise)
    seats.dispatch = lambda role, request: wire.ok(caller=role, cmd=request["cmd"])
    try:
        path = seats._role_socket("coder")
        assert wire.request(path, {"cmd": "ping"}, timeout=5)["caller"] == "coder"
        seats.servers["coder"].inject_fault()
        wait_until(lambda: any(kind == "socket: accept loop died" and f.get("role") == "coder"
                               for kind, f in events), 10, message="the loop's death seen")
        restarted = wait_until(lambda: [f for kind, f in events if kind == "actor restarted"],
                               10, message="the socket's listener restarted")[0]
        assert restarted["actor"] == "socket:coder"
        answer = wait_until(lambda: _ping(path), 10, message="the socket served again")
        assert answer["caller"] == "coder"
    finally:
        seats.close()
        sup.ask(StopAll(), timeout=30)
        sup.stop()
        wait_until(lambda: not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()],
                   10, message="every actor stopped")
    assert not path.exists()


def _ping(path: Path) -> dict | None:
    try:
        return wire.request(path, {"cmd": "ping"}, timeout=5)
    except (wire.Unreachable, wire.WireError):
        return None
