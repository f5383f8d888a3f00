"""The PTY reader sleeps until there is something to do -- output, a halt,
the child's exit -- and still reports the exit of a child whose grandchild
keeps the PTY open, with the last output first.  Real PTYs and processes."""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path

import pytest

from choragos.terminal import ptyproc
from choragos.terminal.ptyproc import PtyChild, Reader
from choragos.terminal.restartpolicy import ExitStatus
from tests.conftest import wait_until


class Seen:
    """What a reader handed on, in order."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self.exited = threading.Event()

    def data(self, data: bytes) -> None:
        self.events.append(data)

    def exit(self, status: ExitStatus) -> None:
        self.events.append(status)
        self.exited.set()

    def output(self) -> bytes:
        return b"".join(e for e in self.events if isinstance(e, bytes))


def _spawn(tmp_path: Path, script: str) -> PtyChild:
    return PtyChild.spawn(["/bin/sh", "-c", script], tmp_path, {"PATH": os.defpath})


def _read(child: PtyChild, seen: Seen | None = None) -> tuple[Reader, Seen]:
    """A reader started on ``child``, handing on to ``seen`` (a fresh Seen)."""
    seen = seen if seen is not None else Seen()
    reader = Reader(child, seen.data, seen.exit)
    reader.start()
    return reader, seen


def _finish(child: PtyChild, reader: Reader) -> None:
    child.terminate(1.0)
    reader.halt()
    reader.join(5)
    child.close()
    assert not reader.is_alive()


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfds (Linux 5.3+)")
def test_a_silent_child_never_wakes_its_reader_and_a_halt_ends_it_at_once(tmp_path):
    child = _spawn(tmp_path, "echo ready; exec sleep 60")
    reader, seen = _read(child)
    wait_until(lambda: b"ready" in seen.output(), 10, message="the child's first line")
    time.sleep(1.2)  # the span watched: four wake-ups of the old 0.25 s poll
    assert reader.wakeups == 0
    halted = time.monotonic()
    reader.halt()
    reader.join(5)
    # Nothing else would wake it: with the pidfd there is no timeout at all.
    assert not reader.is_alive() and time.monotonic() - halted < 3
    assert not seen.exited.is_set()  # a halted reader reports no exit
    _finish(child, reader)


def test_without_pidfds_a_silent_child_is_looked_at_now_and_then(tmp_path, monkeypatch):
    monkeypatch.setattr(ptyproc, "_open_pidfd", lambda pid: None)
    child = _spawn(tmp_path, "echo ready; sleep 1; echo bye; exit 4")
    reader, seen = _read(child)
    assert seen.exited.wait(10)
    assert reader.wakeups >= 2
    assert seen.events[-1] == ExitStatus(code=4) and b"bye" in seen.output()
    _finish(child, reader)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_an_exit_is_reported_once_after_the_last_output_though_a_grandchild_holds_the_pty(
        tmp_path, monkeypatch, pidfd):
    if not pidfd:
        monkeypatch.setattr(ptyproc, "_open_pidfd", lambda pid: None)
    # The background sleep keeps the PTY open: no end of file ever comes.
    child = _spawn(tmp_path, "sleep 30 & echo last words; exit 3")
    reader, seen = _read(child)
    assert seen.exited.wait(5), seen.events
    assert b"last words" in seen.output()
    assert seen.events[-1] == ExitStatus(code=3)
    assert sum(isinstance(e, ExitStatus) for e in seen.events) == 1
    reader.join(5)
    assert not reader.is_alive()
    child.signal_group(9)
    _finish(child, reader)


def test_a_pty_past_descriptor_1024_is_read(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the descriptor limit ({hard}) leaves no room past 1024")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    child = _spawn(tmp_path, "read line; echo got $line; exit 0")
    high = os.dup2(child.fd, 1500)  # the same PTY; close() still closes the first number
    try:
        child.fd = high
        reader, seen = _read(child)
        assert child.write(b"hello\n")
        assert seen.exited.wait(10), seen.events
        assert b"got hello" in seen.output() and seen.events[-1] == ExitStatus(code=0)
        _finish(child, reader)
    finally:
        os.close(high)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_reader_that_cannot_start_leaves_no_descriptor_open(tmp_path, monkeypatch):
    """Out of threads: the start fails, and the reader's wake-up pipe goes with it."""
    child = _spawn(tmp_path, "exec sleep 60")
    try:
        before = set(os.listdir("/proc/self/fd"))
        reader = Reader(child, Seen().data, Seen().exit)
        assert len(set(os.listdir("/proc/self/fd")) - before) == 2  # the pipe

        def refuse(self) -> None:
            raise RuntimeError("can't start new thread")

        monkeypatch.setattr(threading.Thread, "start", refuse)
        with pytest.raises(RuntimeError):
            reader.start()
        monkeypatch.undo()
        assert set(os.listdir("/proc/self/fd")) - before == set()
        reader.halt()  # harmless on a reader that never ran
    finally:
        child.terminate(1.0)
        child.close()


class Holding(Seen):
    """A consumer that holds output back: it asks for a lull call ``hold``
    seconds after each chunk, and records when each chunk and call came."""

    def __init__(self, hold: float | None) -> None:
        super().__init__()
        self.hold = hold
        self.lulls: list[float] = []
        self.last_data = 0.0
        self.times: list[tuple[str, float]] = []

    def data(self, data: bytes) -> float | None:
        super().data(data)
        self.last_data = time.monotonic()
        self.times.append(("data", self.last_data))
        return self.hold

    def lull(self) -> None:
        self.events.append("lull")
        self.lulls.append(time.monotonic())
        self.times.append(("lull", self.lulls[-1]))

    def early_lulls(self) -> list[float]:
        """Lull calls that came sooner than ``hold`` after the chunk before
        them, or with no chunk since the last call: none is owed so."""
        early, previous = [], None
        for kind, at in self.times:
            if kind == "lull" and (previous is None or previous[0] == "lull"
                                   or at - previous[1] < self.hold - 0.005):
                early.append(at)
            previous = (kind, at)
        return early


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_a_consumer_holding_output_is_called_once_the_output_stops(tmp_path, monkeypatch,
                                                                    pidfd):
    if not pidfd:
        monkeypatch.setattr(ptyproc, "_open_pidfd", lambda pid: None)
    child = _spawn(tmp_path, "for i in 1 2 3 4 5; do echo chunk $i; sleep 0.01; done;"
                             " echo done; exec sleep 60")
    seen = Holding(0.05)
    reader = Reader(child, seen.data, seen.exit, on_lull=seen.lull)
    reader.start()
    try:
        wait_until(lambda: b"done" in seen.output() and seen.events[-1] == "lull", 10,
                   message="the lull call after the last chunk")
        # Chunks 10 ms apart put the call off; the silence after them does
        # not.  A loaded machine may leave a longer gap between two chunks,
        # and a call in that gap is owed too: every call must come a whole
        # hold after the chunk before it, never twice for one silence.
        assert seen.early_lulls() == []
        assert seen.lulls[-1] - seen.last_data >= 0.045
        calls, wakeups = len(seen.lulls), reader.wakeups
        time.sleep(0.3)  # nothing more is owed: no more calls, no more wake-ups
        assert len(seen.lulls) == calls and (not pidfd or reader.wakeups == wakeups)
    finally:
        _finish(child, reader)


def test_a_lull_owed_when_the_child_exits_comes_before_the_exit(tmp_path):
    child = _spawn(tmp_path, "echo last words; exit 2")
    seen = Holding(3600.0)  # never due: only the exit can bring it
    reader = Reader(child, seen.data, seen.exit, on_lull=seen.lull)
    reader.start()
    assert seen.exited.wait(10), seen.events
    assert seen.events[-2:] == ["lull", ExitStatus(code=2)]
    _finish(child, reader)


def test_a_consumer_that_holds_nothing_is_never_called(tmp_path):
    child = _spawn(tmp_path, "echo hello; exit 0")
    seen = Holding(None)
    reader = Reader(child, seen.data, seen.exit, on_lull=seen.lull)
    reader.start()
    assert seen.exited.wait(10)
    assert "lull" not in seen.events and b"hello" in seen.output()
    _finish(child, reader)


def test_an_echo_shown_ahead_is_announced_once_the_agent_stops_echoing(tmp_path):
    """A terminal fed by a real reader: an agent echoing a key a character at
    a time; each piece goes to the viewer as it comes (``on_echo``), the
    change once the pieces stop (the reader's lull), with the whole echo."""
    from choragos.terminal.emulator import Terminal

    term = Terminal(40, 5)
    told: list[str] = []
    changes: list[str] = []
    term.on_echo = lambda text, x, y: told.append(text) or True  # shown by the viewer
    # A viewer that draws every change at once (and so takes it).
    term.on_change = lambda: (changes.append(term.display()[0]), term.take_dirty())
    script = "stty raw -echo; printf '> '; sleep 0.3; for c in Q 0 0 1; do printf $c; done; " \
             "exec sleep 60"
    child = _spawn(tmp_path, script)
    reader = Reader(child, lambda data: term.feed(data, eager=b">" not in data),
                    lambda status: None, on_lull=term.catch_up)
    reader.start()
    try:
        wait_until(lambda: "".join(told) == "Q001" and changes and changes[-1] == "> Q001", 10,
                   message="the echo told piece by piece, then the change")
        assert changes.count("> Q001") == 1
    finally:
        _finish(child, reader)


@pytest.mark.skipif(not Path("/proc/thread-self/comm").exists(), reason="names threads on Linux")
def test_the_reader_thread_carries_its_name_where_the_system_shows_it(tmp_path):
    """``top -H`` and the soak bench tell a role's reader from the session's
    other threads by the name the system shows (15 bytes of it)."""
    child = _spawn(tmp_path, "echo ready; exec sleep 60")
    seen = Seen()
    reader = Reader(child, seen.data, seen.exit, name="pty-orchestrator")
    reader.start()
    try:
        comm = Path(f"/proc/{os.getpid()}/task/{reader.native_id}/comm")
        wait_until(lambda: comm.read_text().strip() == "pty-orchestrato", 5,
                   message="the reader's thread named")
    finally:
        _finish(child, reader)


class Threads(Seen):
    """What a reader handed on, and the threads it was handed on from."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []

    def data(self, data: bytes) -> None:
        super().data(data)
        if not self.threads or self.threads[-1] is not threading.current_thread():
            self.threads.append(threading.current_thread())


@pytest.fixture
def short_turns(monkeypatch):
    """A flood of 64 KB, a turn ended by 0.2 s of quiet."""
    monkeypatch.setattr(ptyproc, "FLOOD_BYTES", 65536)
    monkeypatch.setattr(ptyproc, "TURN_QUIET", 0.2)


def test_after_a_flood_a_fresh_thread_reads_on_and_the_flooded_one_ends(tmp_path, short_turns):
    """glibc keeps a thread's freed blocks in a cache of its own until the
    thread ends: the thread that parsed a flood ends once the pane is quiet."""
    child = _spawn(tmp_path, "head -c 300000 /dev/zero | tr '\\0' x; sleep 0.6; echo after;"
                             " sleep 0.1; echo bye; exit 3")
    reader, seen = _read(child, Threads())
    try:
        assert seen.exited.wait(10), seen.events
        assert seen.output().count(b"x") == 300000 and seen.output().endswith(b"bye\r\n")
        assert [e for e in seen.events if isinstance(e, ExitStatus)] == [ExitStatus(code=3)]
        assert reader.turns == 2 and len(seen.threads) == 2
        flooded, after = seen.threads
        # Ended after the quiet: its cache went back (the thread itself: the
        # reader's is_alive follows the reading, on whichever thread).
        assert not threading.Thread.is_alive(flooded)
        assert flooded.name == after.name == reader.name
        assert threading.current_thread() not in seen.threads
    finally:
        _finish(child, reader)


def test_after_a_flood_one_thread_reads_the_pane_and_none_waits(tmp_path, short_turns):
    """The flooded turn's thread starts the next turn's and ends: no thread
    waits for the turns (a stack and more of the server's memory per pane)."""
    child = _spawn(tmp_path, "head -c 300000 /dev/zero | tr '\\0' x; exec sleep 60")
    reader, seen = _read(child, Threads())
    try:
        wait_until(lambda: reader.turns == 2, 10, message="the turn after the flood")
        wait_until(lambda: len([t for t in threading.enumerate() if t.name == reader.name]) == 1,
                   5, message="one thread reading the pane")
        assert reader.is_alive() and not seen.exited.is_set()
        reader.join(timeout=0.05)  # the reading goes on: join waits for it, not a turn
        assert reader.is_alive()
    finally:
        _finish(child, reader)


def test_output_with_pauses_between_keeps_its_thread(tmp_path, short_turns):
    """An agent's turns are bursts with pauses between: no flood, however
    much they add up to, and no thread started or wake-up spent on them."""
    child = _spawn(tmp_path, "for i in 1 2 3 4; do head -c 40000 /dev/zero | tr '\\0' y;"
                             " sleep 0.3; done; echo done; exec sleep 60")
    reader, seen = _read(child, Threads())
    try:
        wait_until(lambda: b"done" in seen.output(), 10, message="the four bursts")
        # Nothing happens to wait for: a turn wrongly ended would end within one
        # quiet turn (0.2 s) of the last output, so watch for two.
        time.sleep(0.4)
        assert seen.output().count(b"y") == 160000
        assert reader.turns == 1 and len(seen.threads) == 1 and seen.threads[0].is_alive()
        assert not hasattr(os, "pidfd_open") or reader.wakeups == 0
    finally:
        _finish(child, reader)
