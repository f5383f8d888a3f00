"""The attach server tells its ``on_client`` of a client once the deck's
first frame for it has gone out (`serve` starts the rest of the session
then, and writes the sidecar), once per attach, and of its leaving.  The
clients here have the deck's size, as `serve`'s has (a client of another
size is drawn once the deck's screen has taken its resize)."""

from __future__ import annotations

import pytest

from choragos.ui import framing as f
from choragos.ui.attachserver import AttachServer
from choragos.ui.deck import Deck
from tests.conftest import wait_until
from tests.ui.test_attachserver import connect
from tests.ui.test_redraw import FakePort


def _frame_on(sock, decoder: f.Decoder, first: list) -> bytes:
    """The frame's bytes, from the ones ``connect`` read with the answer on:
    on a busy machine the answer waits in the outbox for the pump, the frame
    joins it there, and both come in one read."""
    got = bytearray(b"".join(p for k, p in first if k == f.DATA))
    if b"C-b ? help" in got:
        return bytes(got)

    def arrived() -> bool:
        try:
            data = sock.recv(65536)
        except TimeoutError:  # the socket's own timeout: the deadline below decides
            return False
        got.extend(b"".join(p for k, p in decoder.feed(data) if k == f.DATA))
        return b"C-b ? help" in got  # the status line: the whole frame's last part
    wait_until(arrived, 30, message="the client's first frame")
    return bytes(got)


@pytest.mark.timeout(60)
def test_on_client_is_told_after_the_clients_first_frame_once_per_attach(short_tmp):
    deck = Deck(FakePort(short_tmp), 120, 40)
    told: list[tuple[int | None, int, bool]] = []
    server = AttachServer(short_tmp / "s.ui.sock", deck, role_pids=list, workdir=short_tmp,
                          on_client=lambda pid: told.append((pid, deck.frames, deck.attached)))
    server.start()
    deck.start()
    try:
        frames = deck.frames
        sock, decoder, hello = connect(server, pid=4242, cols=120, rows=40)
        assert hello[0][0] == f.ACCEPTED
        _frame_on(sock, decoder, hello)
        wait_until(lambda: told, 10, message="on_client told")
        # Told on the frame's way out, not at the attach: a frame was drawn first.
        assert told[0][0] == 4242 and told[0][1] > frames and told[0][2] is True
        more = deck.frames
        deck.redraw()
        deck.post(lambda: None)  # a later frame is no first frame: told once
        wait_until(lambda: deck.frames > more, 10, message="a second frame")
        assert [pid for pid, _, _ in told] == [4242]
        sock.close()
        wait_until(lambda: len(told) == 2, 10, message="the client's leaving told")
        assert told[1][0] is None
        frames = deck.frames
        again, _, _ = connect(server, pid=4343, cols=120, rows=40)
        wait_until(lambda: len(told) == 3, 10, message="the next client's frame told")
        assert told[2][0] == 4343 and told[2][1] > frames
        again.close()
        wait_until(lambda: len(told) == 4, 10, message="the next client's leaving told")
    finally:
        server.close()
        deck.stop()
        deck.screen.close()
    assert [pid for pid, _, _ in told] == [4242, None, 4343, None]
