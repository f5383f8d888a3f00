"""The attach server's threads belong to a supervised actor: a pump that dies
for real (the deck raises on the pump's thread) is a crash its supervisor
sees and restarts; the client it served is told why, and the next client is
relayed both ways by the fresh pump."""

from __future__ import annotations

import os
import threading
from typing import Any

import pykka
import pytest

from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor, SupervisorState
from choragos.ui import framing as f
from choragos.ui.attachactor import AttachActor
from choragos.ui.attachserver import AttachServer
from tests.conftest import wait_until
from tests.ui.test_attachserver import FakeDeck, connect


class FragileDeck(FakeDeck):
    """Raises on the pump's thread at the first key that says so."""

    def feed_input(self, data: bytes) -> None:
        if data == b"break":
            raise RuntimeError("the deck choked on a key")
        super().feed_input(data)


def told(sock, decoder: f.Decoder) -> dict:
    def exit_frame() -> dict | None:
        for kind, payload in decoder.feed(sock.recv(65536)):
            if kind == f.EXIT:
                return f.decode_json(payload)
        return None
    return wait_until(exit_frame, 5, message="the client to be told")


@pytest.mark.timeout(60)
def test_a_dead_pump_is_the_attach_actors_crash_and_comes_back(short_tmp):
    deck = FragileDeck()
    logged: list[tuple[str, dict]] = []
    events: list[tuple[str, dict[str, Any]]] = []
    server = AttachServer(short_tmp / "s.ui.sock", deck, role_pids=list, workdir=short_tmp,
                          on_event=lambda kind, **kw: logged.append((kind, kw)))
    server.bind()
    sup = Supervisor.start(SupervisorState(intensity=3),
                           on_event=lambda kind, **kw: events.append((kind, kw)))
    try:
        sup.ask(StartChild(ChildSpec("attach", lambda h: AttachActor.start(server, h, sup))),
                timeout=10)
        first, decoder, frames = connect(server)
        assert frames[0][0] == f.ACCEPTED
        first.sendall(f.encode_data(b"break"))
        exit_frame = told(first, decoder)
        assert exit_frame["code"] == f.DROPPED and "relay failed" in exit_frame["reason"]
        restarted = wait_until(lambda: [kw for kind, kw in events
                                        if kind == "actor restarted"], 5,
                               message="the attach actor restarted")[0]
        assert restarted["actor"] == "attach"
        assert "attach-pump: RuntimeError: the deck choked on a key" in restarted["error"]
        assert ("relay died", {"thread": "attach-pump",
                               "error": "RuntimeError: the deck choked on a key"}) in logged
        second, decoder, frames = connect(server)  # the fresh pump relays both ways
        assert frames[0][0] == f.ACCEPTED
        second.sendall(f.encode_data(b"keys"))
        wait_until(lambda: ("input", b"keys") in deck.events, 5, message="keys in")
        os.write(deck.screen.writer, b"screen")
        got = bytearray()

        def screen_arrived() -> bool:
            got.extend(b"".join(p for k, p in decoder.feed(second.recv(65536)) if k == f.DATA))
            return b"screen" in got
        wait_until(screen_arrived, 5, message="screen bytes out")
        for sock in (first, second):
            sock.close()
    finally:
        sup.ask(StopAll(), timeout=10)
        sup.stop()
        wait_until(lambda: not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()],
                   10, message="every actor stopped")
        os.close(deck.screen.writer)
        os.close(deck.screen.master)
    assert not server.path.exists()  # the actor's stop closed the server


@pytest.mark.timeout(60)
def test_a_restart_before_the_dead_pump_has_wound_down_still_starts_a_new_pump(short_tmp):
    """The supervisor may start the fresh actor while the dying thread is still
    alive (a loaded machine): the pump must be started again all the same."""
    deck = FragileDeck()
    server = AttachServer(short_tmp / "s.ui.sock", deck, role_pids=list, workdir=short_tmp,
                          on_event=lambda kind, **kw: None)
    server.bind()
    restarted: list[str] = []

    def died(error: str) -> None:  # on the dying pump, as fast a restart as can be
        server.serve()
        dying = threading.current_thread()
        restarted.extend(t.name for t in server._threads if t.is_alive() and t is not dying)

    server.on_died = died
    server.serve()
    try:
        sock, decoder, _ = connect(server)
        sock.sendall(f.encode_data(b"break"))
        told(sock, decoder)
        wait_until(lambda: restarted, 5, message="the restart")
        assert sorted(restarted) == ["attach-accept", "attach-pump"], restarted
    finally:
        server.close()
