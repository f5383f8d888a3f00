"""The threads a keystroke wakes ask the scheduler for the shortest slice,
so a flood's batch on a core does not keep them waiting for it: the reader
of the pane typed at (once its echo is read), not its neighbours; a reader
that holds a flood's batch goes back to the default slice; nothing a short
thread starts inherits it.  A role's real terminal, echo wait and reader
callbacks, fed on a thread of their own, and the kernel's own record of
each thread's slice."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from choragos.actors import roleio
from choragos.terminal import timeslice
from choragos.terminal.echowait import EchoWait
from choragos.terminal.emulator import Terminal

DEFAULT = timeslice.slice_of()
pytestmark = pytest.mark.skipif(
    DEFAULT is None or not timeslice.short_slice(threading.get_native_id())
    or not timeslice.default_slice(threading.get_native_id()),
    reason="needs sched_getattr/sched_setattr (Linux)")
FLOOD = b"".join(b"\x1b[32mline %05d\x1b[0m of a flood, coloured\r\n" % i for i in range(120))


class Actor:
    closed = False

    def tell(self, _message: object) -> None:
        pass


def _role(name: str, wait: EchoWait) -> roleio.OutputFeed:
    state = SimpleNamespace(spec=SimpleNamespace(name=name), echo_wait=wait,
                            feed_lock=threading.Lock(), gen=1, last_output=0.0,
                            output_noticed=False, classify_pending=False, typing=None,
                            terminal=Terminal(80, 24, hold=roleio.FLOOD_HOLD))
    return roleio.OutputFeed(state, Actor(), 1)


def _slices_on_a_reader(feed: roleio.OutputFeed, pieces: list[bytes],
                        between: Callable[[], None] = lambda: None) -> list[int | None]:
    """Each piece fed on one fresh thread, as a reader does: that thread's
    slice after each (``between`` called after the first)."""
    seen: list[int | None] = []

    def read() -> None:
        for piece in pieces:
            feed.data(piece)
            seen.append(timeslice.slice_of())
            between()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(10)
    return seen


def test_the_typed_panes_reader_takes_the_short_slice_its_neighbour_does_not():
    wait = EchoWait(hold=5)
    typed, neighbour = _role("echo", wait), _role("idle", wait)
    assert _slices_on_a_reader(typed, [b"$ "]) == [DEFAULT]  # nobody typed yet
    wait.expect("echo", 1)
    assert _slices_on_a_reader(typed, [b"k"]) == [timeslice.SHORT_SLICE]  # the awaited echo
    wait.expect("echo", 1)
    wait.drawn()  # the neighbour would hold its output for the echo otherwise
    assert _slices_on_a_reader(neighbour, [b"a line\r\n"]) == [DEFAULT]


def test_a_reader_that_holds_a_floods_batch_goes_back_to_the_default_slice():
    wait = EchoWait(hold=5)
    feed = _role("echo", wait)
    wait.expect("echo", 1)
    seen = _slices_on_a_reader(feed, [b"k", FLOOD[:2048], FLOOD[2048:4096]], wait.drawn)
    assert feed.terminal.held  # the flood's pieces held for a batch
    assert seen == [timeslice.SHORT_SLICE, DEFAULT, DEFAULT]


def test_what_a_short_thread_starts_gets_the_default_slice():
    found: dict[str, int | None] = {}

    def short_thread() -> None:
        assert timeslice.short_slice()
        found["self"] = timeslice.slice_of()
        inner = threading.Thread(target=lambda: found.update(thread=timeslice.slice_of()))
        inner.start()
        inner.join()
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
        try:
            found["process"] = timeslice.slice_of(process.pid)
        finally:
            process.kill()
            process.wait()

    thread = threading.Thread(target=short_thread)
    thread.start()
    thread.join(10)
    assert found == {"self": timeslice.SHORT_SLICE, "thread": DEFAULT, "process": DEFAULT}
