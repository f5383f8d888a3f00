"""What one keystroke costs the session's Python, counted in bytecodes: from
the key's bytes given to the deck to their write into the agent's PTY, and
from the echo's read off that PTY by the role's reader to its bytes handed
to the client.  Beside ``test_key_calls.py`` (calls): on a core the floods
left cold each bytecode costs about a microsecond, so this is the figure a
change to either half moves first.

The real pieces, as ``test_key_calls.py`` has them: the deck, the roles'
view with a real role actor, its agent (the echo fixture) in a real PTY,
that role's reader thread, terminal and echo wait.  Counted with a trace
hook asking for opcode events, not timed.  The attach pump's own share
(from its poll's return to the key's write, and from there to its next
poll) is counted on the real attach server with a stand-in deck.
"""

from __future__ import annotations

import os
import sys
import threading
import tty

import pytest

from choragos.ui.attachserver import AttachServer
from choragos.ui.deck import Deck
from tests.conftest import wait_until
from tests.ui.test_attachserver import _read_until, connect
from tests.ui.test_key_calls import _take, typed, typing_deck
from tests.ui.test_redraw import _settled

pytestmark = pytest.mark.timeout(120)

KEYS = 8
# Bytecodes on each half (the median key), measured on Python 3.11: the
# key's way in 252 (258 before the eleventh pass: the deck's own feed_input
# between the pump and the key path), the echo's way out 1015 (1026
# before: the terminal joined and encoded its empty replies on every feed).
# Each bound leaves room for another Python's compiler, not for new steps.
MOST_IN = 262
MOST_OUT = 1040
# The reader after its write, to its next poll: 263 (611 before: the screen
# worked the echo into its rows there, 335 bytecodes the client's kworker
# waited behind on that CPU; now a note, worked in by the next frame).
MOST_AFTER_ECHO = 300


class _Ops:
    """Bytecodes run on one thread from a ``read`` (or ``begin``) to the next
    ``write`` of the posix module (``counts``), and from that write to the
    thread's next ``poll`` (``after``): one count per key."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.after: list[int] = []
        self._n: int | None = None
        self._after: int | None = None

    def begin(self) -> None:
        self._n = 0

    def trace(self, frame, event: str, _arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            if self._n is not None:
                self._n += 1
            elif self._after is not None:
                self._after += 1
        return self.trace

    def profile(self, _frame, event: str, arg) -> None:
        if event != "c_call":
            return
        name = getattr(arg, "__name__", "")
        if name == "poll":
            if self._after is not None:
                self.after.append(self._after)
            self._after = None
        elif getattr(arg, "__module__", "") != "posix":
            return
        elif name == "read":
            self._n, self._after = 0, None
        elif name == "write" and self._n is not None:
            self.counts.append(self._n)
            self._n, self._after = None, 0


def test_a_keystroke_and_its_echo_take_few_bytecodes(tmp_path):
    echo = _Ops()
    reader = "pty-orchestrator"

    def on_trace(frame, event, arg):
        return echo.trace(frame, event, arg) if threading.current_thread().name == reader \
            else None

    def on_profile(frame, event, arg):
        if threading.current_thread().name == reader:
            echo.profile(frame, event, arg)

    threading.settrace(on_trace)
    threading.setprofile(on_profile)
    try:
        with typing_deck(tmp_path) as (deck, client):
            typing, echoes, after = _type(deck, echo, client)
    finally:
        threading.settrace(None)
        threading.setprofile(None)
    assert len(typing.counts) == KEYS  # every key went straight into the PTY
    assert deck.lane.sent_ahead >= KEYS // 2, deck.lane.sent_ahead
    assert sorted(typing.counts)[KEYS // 2] <= MOST_IN, typing.counts
    assert sorted(echoes)[KEYS // 2] <= MOST_OUT, echoes
    assert sorted(after)[KEYS // 2] <= MOST_AFTER_ECHO, after


def _type(deck: Deck, echo: _Ops, client: int) -> tuple[_Ops, list[int], list[int]]:
    """Type KEYS keys at the deck, each once the last one's echo came back:
    the typing's counts, and the reader's to its write and after it."""
    typing = _Ops()
    echoes: list[int] = []
    after: list[int] = []
    for i in range(KEYS):
        key = b"abcdefgh"[i:i + 1]
        echo.counts.clear()
        echo.after.clear()

        def hooked(on: bool) -> None:
            if on:
                typing.begin()
            sys.settrace(typing.trace if on else None)
            sys.setprofile(typing.profile if on else None)
        typed(deck, client, key, hooked, lambda: bool(echo.counts))
        echoes.append(echo.counts[0])
        wait_until(lambda: echo.after, 10, message="the reader back in its poll")
        after.append(echo.after[0])
        _settled(deck, quiet=0.05)
        _take(client)
    return typing, echoes, after


# -- the pump's own share: the attach server from its poll's return to the key's
# write, and from that write to its next poll (a stand-in deck that writes
# the key at once, so the deck's key path, counted above, is not in it).

# Measured: 53 to the write (84 before: the terminal's keys were the last of
# four descriptors the dispatch looked at, and the select module's masks
# looked up on each), 72 from it to the next poll (145 before: the poll set
# made again after every key).
PUMP_TO_WRITE = 60
PUMP_AFTER_WRITE = 80


class _PumpOps:
    """Bytecodes on the pump's thread: poll's return -> the write, the write -> poll."""

    def __init__(self) -> None:
        self.to_write: list[int] = []
        self.after: list[int] = []
        self._n: int | None = None
        self._written = False

    def trace(self, frame, event: str, _arg):
        frame.f_trace_opcodes = True
        if event == "opcode" and self._n is not None:
            self._n += 1
        return self.trace

    def profile(self, _frame, event: str, arg) -> None:
        name = getattr(arg, "__name__", "")
        if event == "c_return" and name == "poll":
            self._n, self._written = 0, False
        elif event != "c_call" or self._n is None:
            return
        elif name == "poll":
            if self._written:
                self.after.append(self._n)
            self._n = None
        elif name == "write" and getattr(arg, "__module__", "") == "posix" \
                and not self._written:
            self.to_write.append(self._n)
            self._n, self._written = 0, True


class _KeyDeck:
    """What the attach server uses of a deck, with each key written on at
    once (as the deck's key path ends): the pump's own steps alone counted."""

    def __init__(self, sink: int) -> None:
        self.screen = _Pipe()
        self.sink = sink
        self.on_detach = self.on_crash = None

    def client_attached(self, info) -> None:
        pass

    def client_detached(self) -> None:
        pass

    def feed_input(self, data: bytes) -> None:
        os.write(self.sink, data)


class _Pipe:
    def __init__(self) -> None:
        self.master, self.writer = os.pipe()
        os.set_blocking(self.master, False)


def test_the_pump_takes_few_bytecodes_around_a_key(short_tmp):
    ops = _PumpOps()

    def on_trace(frame, event, arg):
        return ops.trace(frame, event, arg) if threading.current_thread().name == "attach-pump" \
            else None

    def on_profile(frame, event, arg):
        if threading.current_thread().name == "attach-pump":
            ops.profile(frame, event, arg)

    keys_r, keys_w = os.pipe()
    master, slave = os.openpty()
    tty.setraw(slave)
    deck = _KeyDeck(keys_w)
    threading.settrace(on_trace)
    threading.setprofile(on_profile)
    server = AttachServer(short_tmp / "s.ui.sock", deck, role_pids=list, workdir=short_tmp)
    try:
        server.start()
        sock, _decoder, _frames = connect(server, [slave])
        to_write, after = [], []
        for i in range(KEYS):
            ops.to_write.clear()
            ops.after.clear()
            key = b"abcdefgh"[i:i + 1]
            os.write(master, key)
            assert _read_until(keys_r, key) == key  # one read, one write: one key
            wait_until(lambda: ops.after, 5, message="the pump back in its poll")
            to_write.append(ops.to_write[0])
            after.append(ops.after[0])
        sock.close()
    finally:
        server.close()
        threading.settrace(None)
        threading.setprofile(None)
        for fd in (keys_r, keys_w, master, slave, deck.screen.master, deck.screen.writer):
            os.close(fd)
    assert sorted(to_write)[KEYS // 2] <= PUMP_TO_WRITE, to_write
    assert sorted(after)[KEYS // 2] <= PUMP_AFTER_WRITE, after
