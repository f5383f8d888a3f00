"""The session's first gateway waits, briefly, for a port still held by the
gateway of a server that was killed (it ends once its stdin closes), instead
of failing to listen and being started again."""

from __future__ import annotations

import subprocess
import sys

import pykka

from choragos.actors.latemessages import ProberState
from choragos.actors.proxyrunner import ProxyRunner, ProxyRunnerState, Ready
from choragos.config.model import ProxySettings
from choragos.gateway.portfree import await_free, bindable
from tests.conftest import Told
from tests.integration.gatewayfakes import free_port

# Listens on the port, says so, and lets it go half a second later: an old
# gateway that noticed its server is gone and is ending.
HOLDER = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("held", flush=True)
time.sleep(0.5)
"""


def _hold(port: int) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(port)], stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b"held\n"
    return holder


def test_a_port_let_go_within_the_wait_is_waited_for_and_one_held_on_is_not():
    port = free_port()
    addr = f"127.0.0.1:{port}"
    holder = _hold(port)
    try:
        assert not bindable(addr)
        assert await_free(addr, 0.1) is None  # still held: the wait is bounded
        waited = await_free(addr, 10.0)
        assert waited is not None and waited > 0 and holder.wait(5) == 0
        assert await_free(addr, 0.0) == 0.0  # free at once: no wait
    finally:
        holder.kill()
        holder.wait()


def test_a_resumed_sessions_first_gateway_starts_once_its_old_one_lets_go(tmp_path):
    port = free_port()
    addr = f"127.0.0.1:{port}"
    events: list[tuple[str, dict]] = []
    state = ProxyRunnerState(ProxySettings(builtin=True, addr=addr),
                             ProberState(f"http://{addr}/metrics"), tmp_path / "gateway.log",
                             lambda event, **fields: events.append((event, fields)),
                             key=b"k" * 32, resumed={})
    holder = _hold(port)
    runner = None
    try:
        runner = ProxyRunner.start(state, Told())
        problem = runner.ask(Ready(), timeout=30)
        assert problem == "", (problem, (tmp_path / "gateway.log").read_text())
        assert state.spawned == 1
        assert [name for name, _ in events] == ["gateway port waited", "gateway started"]
        assert events[0][1]["addr"] == addr and events[0][1]["seconds"] > 0
    finally:
        if runner is not None:
            runner.stop()
        holder.kill()
        holder.wait()
    assert state.proc is None  # its process ended with it
    assert not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()]
