"""The attach socket with a stand-in deck: one client, refusals, takeover, and a
client that stops reading is dropped while the deck's output keeps flowing."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import termios
import threading
import time
import tty

import pytest

from choragos.terminal import timeslice
from choragos.ui import attachserver
from choragos.ui import framing as f
from choragos.ui.attachserver import AttachServer
from choragos.ui.attachtty import RESTORE
from tests.conftest import wait_until


class FakeScreen:
    def __init__(self) -> None:
        self.master, self.writer = os.pipe()
        os.set_blocking(self.master, False)


class FakeDeck:
    """What the attach server uses of a deck: its PTY and the notifications."""

    def __init__(self) -> None:
        self.screen = FakeScreen()
        self.events: list[tuple] = []
        self.on_detach = self.on_crash = None

    def client_attached(self, info) -> None:
        self.events.append(("attached", info.pid, info.cols, info.rows))

    def client_detached(self) -> None:
        self.events.append(("detached",))

    def feed_input(self, data: bytes) -> None:
        self.events.append(("input", data))

    def resize(self, cols: int, rows: int) -> None:
        self.events.append(("resize", cols, rows))


@pytest.fixture
def served(short_tmp):
    deck = FakeDeck()
    logged: list[tuple] = []
    pids: list[int] = []
    server = AttachServer(short_tmp / "s.ui.sock", deck, role_pids=lambda: pids,
                          workdir=short_tmp, on_event=lambda kind, **kw: logged.append((kind, kw)))
    server.start()
    yield server, deck, logged, pids
    server.close()
    os.close(deck.screen.writer)
    os.close(deck.screen.master)


def connect(server: AttachServer, passing: list[int] | None = None,
            **hello) -> tuple[socket.socket, f.Decoder, list]:
    """A client; with ``passing``, one that passes those descriptors with its
    hello, saying it brings its terminal."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(server.path))
    if passing is not None:
        hello["tty"] = True
    frame = f.encode_json(f.HELLO, {"pid": os.getpid(), "cols": 100, "rows": 30, **hello})
    socket.send_fds(sock, [frame], passing or [])
    decoder = f.Decoder()
    frames: list = []
    sock.settimeout(5)
    while not frames:
        frames += decoder.feed(sock.recv(65536))
    return sock, decoder, frames


def test_one_client_relays_both_ways(served):
    server, deck, _, _ = served
    sock, decoder, frames = connect(server)
    assert frames[0][0] == f.ACCEPTED
    assert f.decode_json(frames[0][1])["pid"] == os.getpid()
    wait_until(lambda: ("attached", os.getpid(), 100, 30) in deck.events, 5, message="attach")
    sock.sendall(f.encode_data(b"keys") + f.window(120, 40))
    wait_until(lambda: ("resize", 120, 40) in deck.events, 5, message="resize")
    assert ("input", b"keys") in deck.events
    os.write(deck.screen.writer, b"\x1b[Hscreen")
    got = bytearray()

    def screen_arrived() -> bool:
        for kind, payload in decoder.feed(sock.recv(65536)):
            if kind == f.DATA:
                got.extend(payload)
        return b"\x1b[Hscreen" in got
    wait_until(screen_arrived, 5, message="screen bytes")
    assert server.holder == os.getpid()
    sock.close()
    wait_until(lambda: ("detached",) in deck.events, 5, message="detach on close")
    assert server.holder is None


def test_a_second_client_is_refused_with_the_holders_pid_and_force_takes_over(served):
    server, _, _, _ = served
    first, first_decoder, _ = connect(server, pid=4242)
    wait_until(lambda: server.holder == 4242, 5, message="first client")
    second, _, frames = connect(server, pid=777)
    kind, payload = frames[0]
    assert kind == f.EXIT
    answer = f.decode_json(payload)
    assert answer["code"] == f.REFUSED and "pid 4242" in answer["reason"]
    assert server.holder == 4242
    third, _, frames = connect(server, pid=999, force=True)
    assert frames[0][0] == f.ACCEPTED
    wait_until(lambda: server.holder == 999, 5, message="takeover")

    def told() -> dict | None:
        for kind, payload in first_decoder.feed(first.recv(65536)):
            if kind == f.EXIT:
                return f.decode_json(payload)
        return None
    first.settimeout(5)
    message = wait_until(told, 5, message="the old client to be told")
    assert message["code"] == f.TAKEN_OVER and "pid 999" in message["reason"]
    for sock in (first, second, third):
        sock.close()


def test_attaching_from_inside_a_pane_is_refused(served):
    server, _, logged, pids = served
    _, _, frames = connect(server, role="coder")
    assert frames[0][0] == f.EXIT and "own pane (coder)" in f.decode_json(frames[0][1])["reason"]
    pids.append(os.getpid())  # this test process plays a role's process: we descend from it
    _, _, frames = connect(server)
    assert frames[0][0] == f.EXIT
    assert "inside this session's own pane" in f.decode_json(frames[0][1])["reason"]
    assert server.holder is None
    assert [kind for kind, _ in logged].count("attach refused") == 2


def test_a_client_whose_ancestry_cannot_be_traced_is_refused(served, monkeypatch):
    """A walk that gives up before init may have stopped short of a pane."""
    from choragos.control import authority

    server = served[0]
    monkeypatch.setattr(authority, "MAX_DEPTH", 1)  # this process has parents above it
    _, _, frames = connect(server)
    assert frames[0][0] == f.EXIT and "too deep to trace" in f.decode_json(frames[0][1])["reason"]
    monkeypatch.setattr(authority, "MAX_DEPTH", 1024)
    sock, _, frames = connect(server)
    assert frames[0][0] == f.ACCEPTED
    sock.close()


def test_a_client_that_stops_reading_is_dropped_and_nothing_blocks(served, monkeypatch):
    server, deck, logged, _ = served
    monkeypatch.setattr(attachserver, "STALL_SECONDS", 1.0)
    sock, _, _ = connect(server)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    wait_until(lambda: server.holder is not None, 5, message="attach")
    # The deck keeps drawing; the client never reads.  The writer must never block.
    chunk = b"x" * 65536
    stop = threading.Event()
    written = {"bytes": 0, "longest": 0.0}

    def draw() -> None:
        while not stop.is_set():
            began = time.monotonic()
            try:
                written["bytes"] += os.write(deck.screen.writer, chunk)
            except BlockingIOError:
                time.sleep(0.001)
            written["longest"] = max(written["longest"], time.monotonic() - began)

    os.set_blocking(deck.screen.writer, False)
    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.holder is None, 15, message="the stalled client dropped")
        before = written["bytes"]
        wait_until(lambda: written["bytes"] > before + 10 * len(chunk), 5,
                   message="output to keep draining after the drop")
    finally:
        stop.set()
        thread.join(2)
    assert ("detached",) in deck.events
    assert any(kind == "detached" and "stopped reading" in kw["reason"]
               for kind, kw in logged)
    sock.close()


def test_the_socket_is_private(served):
    server, _, _, _ = served
    assert (os.stat(server.path).st_mode & 0o777) == 0o600
    assert (os.stat(server.path.parent).st_mode & 0o777) == 0o700


class DirectDeck(FakeDeck):
    """A stand-in deck with the real screen: frames are handed over directly."""

    def __init__(self) -> None:
        super().__init__()
        from choragos.ui.ptyscreen import PtyScreen

        self.screen = PtyScreen(80, 24)


def _data_until(sock: socket.socket, decoder: f.Decoder, needle: bytes) -> bytes:
    got = bytearray()

    def arrived() -> bool:
        for kind, payload in decoder.feed(sock.recv(65536)):
            if kind == f.DATA:
                got.extend(payload)
        return needle in got
    wait_until(arrived, 10, message=f"{needle!r} on the client")
    return bytes(got)


def test_frames_go_to_the_client_directly_not_through_the_pty(short_tmp):
    deck = DirectDeck()
    server = AttachServer(short_tmp / "s.ui.sock", deck, role_pids=list, workdir=short_tmp)
    server.start()
    try:
        deck.screen.write("before anyone\n")  # nobody attached: dropped
        deck.screen.flush()
        sock, decoder, frames = connect(server)
        assert frames[0][0] == f.ACCEPTED
        wait_until(lambda: server.holder is not None, 5, message="attach")
        deck.screen.write("\x1b[Hecho")
        deck.screen.write(" line\n")
        deck.screen.flush()
        got = _data_until(sock, decoder, b"echo line\r\n")
        assert got == b"\x1b[Hecho line\r\n"  # one frame, newline as a tty would send it
        with pytest.raises(BlockingIOError):  # nothing went through the PTY
            os.read(deck.screen.master, 4096)
        # A client slower than the frames: the socket's rest waits in the
        # outbox and the pump sends it, in order.
        sock.setblocking(True)
        big = "".join(f"row {i:06d}\n" for i in range(40000))
        deck.screen.write(big)
        deck.screen.flush()
        deck.screen.write("the end")
        deck.screen.flush()
        sock.settimeout(5)
        got = _data_until(sock, decoder, b"the end")
        assert got == big.replace("\n", "\r\n").encode() + b"the end"
        sock.close()
    finally:
        server.close()
        deck.screen.close()
    assert deck.screen._sink is None  # closed: back to the PTY


def test_the_backlog_counts_what_the_client_has_not_read(short_tmp):
    deck = DirectDeck()
    server = AttachServer(short_tmp / "s.ui.sock", deck, role_pids=list, workdir=short_tmp)
    server.start()
    try:
        assert deck.client_backlog() == 0  # nobody attached
        sock, decoder, _ = connect(server)
        wait_until(lambda: server.holder is not None, 5, message="attach")
        deck.screen.write("x" * 200_000)  # the client reads none of it
        deck.screen.flush()
        backlog = deck.client_backlog()
        assert backlog >= 200_000 - attachserver.SEND_BUFFER * 2
        got = _data_until(sock, decoder, b"x" * 200_000)
        assert len(got) == 200_000
        wait_until(lambda: deck.client_backlog() == 0, 5, message="the backlog read")
        sock.close()
    finally:
        server.close()
        deck.screen.close()


def _wakeups(thread: threading.Thread) -> int:
    """How often ``thread`` has gone to sleep and woken again (the kernel's count)."""
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        for line in status:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches line")


def _sleeping(thread: threading.Thread) -> bool:
    with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "S"


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="counts wake-ups in /proc")
def test_with_a_client_attached_and_nothing_said_the_server_never_wakes(served):
    server, deck, _, _ = served
    sock, _, _ = connect(server)
    wait_until(lambda: ("attached", os.getpid(), 100, 30) in deck.events, 5, message="attach")
    wait_until(lambda: server.backlog() == 0, 5, message="the greeting sent")
    threads = server._threads
    # Settled first: the count goes up as a thread goes to sleep, so one
    # still finishing the greeting on a busy machine would add one later.
    seen: list[list[int]] = []

    def asleep() -> bool:
        seen.append([_wakeups(thread) for thread in threads])
        return len(seen) > 1 and seen[-1] == seen[-2] and all(map(_sleeping, threads))
    wait_until(asleep, 10, interval=0.2, message="both threads asleep")
    before = seen[-1]
    time.sleep(2.2)  # the span watched: two wake-ups each of a 1 s poll
    assert [_wakeups(thread) for thread in threads] == before
    sock.close()
    wait_until(lambda: ("detached",) in deck.events, 5, message="detach on close")
    server.close()  # joins each for 3 s at most: the accept loop must be woken
    assert not any(thread.is_alive() for thread in threads)


# -- a client served on its own terminal -------------------------------------------------

def _opened(path: str) -> int:
    """How many of this process's descriptors are open on ``path``."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{name}") == path
    return count


@pytest.fixture
def terminal():
    """A terminal in raw mode, as the client leaves it: (master, slave, slave's path)."""
    master, slave = os.openpty()
    tty.setraw(slave)
    os.set_blocking(master, False)
    yield master, slave, os.ttyname(slave)
    os.close(master)
    os.close(slave)


def _read_until(fd: int, needle: bytes) -> bytes:
    got = bytearray()

    def arrived() -> bool:
        with contextlib.suppress(BlockingIOError):
            got.extend(os.read(fd, 65536))
        return needle in got
    wait_until(arrived, 10, message=f"{needle!r} on the terminal")
    return bytes(got)


def test_a_client_that_passes_its_terminal_is_served_on_it(served, terminal):
    server, deck, logged, _ = served
    master, slave, path = terminal
    sock, decoder, frames = connect(server, [slave])
    assert frames[0][0] == f.ACCEPTED and f.decode_json(frames[0][1])["direct"] is True
    wait_until(lambda: ("attached", os.getpid(), 100, 30) in deck.events, 5, message="attach")
    assert any(kind == "attached" and kw["direct"] for kind, kw in logged)
    # The passed descriptor was closed at once; the server holds its own.
    assert _opened(path) == 2
    # Drawn before the client said its terminal is raw: held, then sent in order.
    os.write(deck.screen.writer, b"\x1b[Hfirst frame\n")
    wait_until(lambda: server.backlog() > 0, 5, message="the frame held")
    with pytest.raises(BlockingIOError):
        os.read(master, 4096)
    sock.sendall(f.encode(f.READY))
    os.write(deck.screen.writer, b"second")
    assert _read_until(master, b"second") == b"\x1b[Hfirst frame\nsecond"  # as drawn, unframed
    # Keys come from the terminal; the socket still carries the window size.
    os.write(master, b"typed keys")
    sock.sendall(f.window(120, 40))
    wait_until(lambda: ("resize", 120, 40) in deck.events, 5, message="resize")
    wait_until(lambda: b"typed keys" in b"".join(e[1] for e in deck.events if e[0] == "input"),
               5, message="the keys")
    assert not decoder.feed(_nothing_or(sock))  # no screen bytes on the socket
    sock.close()
    wait_until(lambda: ("detached",) in deck.events, 5, message="detach on close")
    wait_until(lambda: _opened(path) == 1, 5, message="the terminal let go")
    assert not [kind for kind, _ in logged if kind == "terminal restored"]  # ours to restore


def _nothing_or(sock: socket.socket) -> bytes:
    sock.setblocking(False)
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return b""
    finally:
        sock.setblocking(True)


def test_a_detach_lets_go_of_the_terminal_before_the_client_hears_it(served, terminal):
    server, deck, _, _ = served
    master, slave, path = terminal
    sock, decoder, _ = connect(server, [slave])
    sock.sendall(f.encode(f.READY))
    wait_until(lambda: server.holder is not None, 5, message="attach")
    os.write(deck.screen.writer, b"last words")
    _read_until(master, b"last words")
    deck.on_detach("you pressed detach")
    frames: list = []
    while not frames:
        frames += decoder.feed(sock.recv(65536))
    # By the time the client hears it, nothing of the session's writes to its
    # terminal any more: it can restore the modes safely.
    assert _opened(path) == 1
    assert frames[0][0] == f.EXIT and f.decode_json(frames[0][1])["code"] == f.DETACHED
    sock.close()


def test_what_is_no_single_terminal_is_relayed_and_closed(served):
    server, deck, _, _ = served
    read_end, write_end = os.pipe()
    pipe = os.readlink(f"/proc/self/fd/{read_end}")
    sock, _, frames = connect(server, [read_end])
    assert f.decode_json(frames[0][1])["direct"] is False
    wait_until(lambda: server.holder is not None, 5, message="attach")
    assert _opened(pipe) == 2  # ours only: the server closed what it was passed
    sock.sendall(f.encode_data(b"relayed keys"))
    wait_until(lambda: ("input", b"relayed keys") in deck.events, 5, message="the keys relayed")
    sock.close()
    wait_until(lambda: server.holder is None, 5, message="detach")
    master, slave = os.openpty()
    try:
        # Two terminals at once is not one terminal either.
        second, _, frames = connect(server, [slave, slave])
        assert f.decode_json(frames[0][1])["direct"] is False
        wait_until(lambda: _opened(os.ttyname(slave)) == 1, 5, message="both closed")
        second.close()
    finally:
        for fd in (read_end, write_end, master, slave):
            os.close(fd)


def test_a_client_that_never_says_its_terminal_is_ready_is_dropped(served, terminal,
                                                                   monkeypatch):
    server, deck, logged, _ = served
    monkeypatch.setattr(attachserver, "STALL_SECONDS", 1.0)
    master, slave, path = terminal
    sock, _, _ = connect(server, [slave])
    wait_until(lambda: server.holder is not None, 5, message="attach")
    os.write(deck.screen.writer, b"a frame nobody may see yet")
    wait_until(lambda: server.holder is None, 10, message="the silent client dropped")
    # The holder goes first; the event once the client has been told.
    wait_until(lambda: any(kind == "detached" and "stopped reading" in kw["reason"]
                           for kind, kw in list(logged)), 5, message="the drop logged")
    assert _opened(path) == 1
    with pytest.raises(BlockingIOError):
        os.read(master, 4096)  # never written to a terminal not said to be raw
    sock.close()


CLIENT = r"""
import os, socket, sys, time, tty
from choragos.ui import framing as f
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
hello = f.encode_json(f.HELLO, {"pid": os.getpid(), "cols": 80, "rows": 24, "tty": True})
socket.send_fds(sock, [hello], [0])
decoder, frames = f.Decoder(), []
while not frames:
    frames += decoder.feed(sock.recv(65536))
tty.setraw(0)  # as the real client does, once accepted
sock.sendall(f.encode(f.READY))
print("raw now", flush=True)
time.sleep(60)
"""


def test_a_killed_client_gets_its_terminal_back_from_the_session(served, short_tmp):
    """SIGKILL gives the client no say; the session, which holds its
    terminal, turns the deck's modes off and puts the settings back."""
    server, deck, logged, _ = served
    master, slave = os.openpty()  # cooked, as a shell leaves it
    os.set_blocking(master, False)
    cooked = termios.tcgetattr(slave)[3]
    assert cooked & termios.ECHO and cooked & termios.ICANON
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(server.path)],
                              stdin=slave, stdout=slave, stderr=slave)
    try:
        _read_until(master, b"raw now")
        wait_until(lambda: server.holder is not None, 5, message="attach")
        assert not termios.tcgetattr(slave)[3] & termios.ECHO
        os.write(deck.screen.writer, b"deck frame")
        _read_until(master, b"deck frame")
        client.kill()
        client.wait(5)
        assert _read_until(master, RESTORE).endswith(RESTORE)
        wait_until(lambda: any(kind == "terminal restored" for kind, _ in logged), 5,
                   message="the terminal restored")
        lflag = termios.tcgetattr(slave)[3]
        assert lflag & termios.ECHO and lflag & termios.ICANON
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(5)
        os.close(master)
        os.close(slave)


@pytest.mark.skipif(timeslice.slice_of() is None, reason="needs sched_getattr (Linux)")
def test_the_pump_that_reads_the_keys_has_the_shortest_slice(served):
    server, _, _, _ = served
    pump = next(thread for thread in server._threads if thread.name == "attach-pump")
    accept = next(thread for thread in server._threads if thread.name == "attach-accept")
    wait_until(lambda: timeslice.slice_of(pump.native_id) == timeslice.SHORT_SLICE, 5,
               message="the pump's slice")
    assert timeslice.slice_of(accept.native_id) == timeslice.slice_of()  # the default


def test_a_given_up_deck_is_brought_back_by_the_next_attach_only(short_tmp):
    """Given up, the client is sent away with the reason.  The next attach
    asks ``revive``: refused with the reason when it cannot bring the deck
    back; else served by the new deck (its frames, its keys), the old one's
    screen no longer read."""
    old, new = DirectDeck(), DirectDeck()
    asked: list[int] = []
    server = AttachServer(short_tmp / "s.ui.sock", old, role_pids=list, workdir=short_tmp)
    server.start()
    try:
        first, first_decoder, _ = connect(server, pid=4242)
        wait_until(lambda: server.holder == 4242, 5, message="attach")
        server.give_up("the deck stopped; `choragos attach` starts the deck again")
        first.settimeout(5)
        told = [f.decode_json(p) for k, p in first_decoder.feed(first.recv(65536))
                if k == f.EXIT]
        assert told and told[0]["code"] == f.DROPPED and "starts the deck" in told[0]["reason"]

        server.revive = lambda pid: asked.append(pid) or False
        _, _, frames = connect(server, pid=777)
        assert frames[0][0] == f.EXIT and "starts the deck" in f.decode_json(frames[0][1])[
            "reason"]

        def brought_back(pid: int) -> bool:
            asked.append(pid)
            server.adopt(new)
            server.serve()  # as the new attach actor's start does
            return True
        server.revive = brought_back
        sock, decoder, frames = connect(server, pid=999)
        assert frames[0][0] == f.ACCEPTED and asked == [os.getpid(), os.getpid()]
        wait_until(lambda: ("attached", 999, 100, 30) in new.events, 5, message="new deck")
        assert not [e for e in old.events if e[0] == "attached" and e[1] != 4242]
        new.screen.write("the new deck")
        new.screen.flush()
        assert b"the new deck" in _data_until(sock, decoder, b"the new deck")
        sock.sendall(f.encode_data(b"keys"))
        wait_until(lambda: ("input", b"keys") in new.events, 5, message="keys to the new deck")
        assert server.refusal == ""
        _, _, frames = connect(server, pid=555)  # running again: no second revival
        assert frames[0][0] == f.EXIT and "pid 999" in f.decode_json(frames[0][1])["reason"]
        assert len(asked) == 2
        sock.close()
    finally:
        server.close()
        old.screen.close()
        new.screen.close()


def test_a_deck_given_up_again_while_its_attach_is_accepted_refuses_that_client(short_tmp):
    """The revived deck fails at once (a bug hit at every start): the client
    whose attach revived it hears the reason at once, not the silence of a
    pump that has stopped before taking it."""
    old, new = FakeDeck(), FakeDeck()
    server = AttachServer(short_tmp / "s.ui.sock", old, role_pids=list, workdir=short_tmp)
    server.start()
    try:
        server.give_up("given up")

        def revived_and_given_up_again(pid: int) -> bool:
            server.adopt(new)
            server.serve()
            server.give_up("given up again")
            return True
        server.revive = revived_and_given_up_again
        sock, _, frames = connect(server, pid=999)
        assert frames[0][0] == f.EXIT
        assert f.decode_json(frames[0][1])["reason"] == "given up again"
        assert server.holder is None and not new.events
        sock.close()
    finally:
        server.close()
        for deck in (old, new):
            os.close(deck.screen.writer)
            os.close(deck.screen.master)
