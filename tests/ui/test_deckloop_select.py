"""The deck's event loop keeps one epoll set for its run: counted on the
real deck (selectors made while panes change), and the loop's own rules
on a real pipe (a watch removed and added again, a descriptor number
reused, alarms beside a busy descriptor, the look before idle)."""

from __future__ import annotations

import os
import selectors
import threading

import pytest

from choragos.ui.deckloop import KeptSelectLoop
from tests.conftest import wait_until
from tests.ui.test_redraw import _settled

pytestmark = pytest.mark.timeout(60)

CHANGES = 20


class _Counted(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    made = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).made += 1


def test_the_deck_makes_no_selector_per_wake_up(running, monkeypatch):
    deck, port = running
    monkeypatch.setattr(selectors, "DefaultSelector", _Counted)
    _Counted.made = 0
    woke = deck.mailbox.wakeups
    for i in range(CHANGES):
        frames = deck.frames
        port.terminals["orchestrator"].feed(b"\x1b[10;1Hline %d" % (i % 2))
        wait_until(lambda frames=frames: deck.frames > frames, 10, message="the line drawn")
    _settled(deck)
    assert deck.mailbox.wakeups - woke >= CHANGES // 2  # the loop did wake for them
    # urwid's own loop makes two a wake-up (the pass, the look before idle).
    assert _Counted.made == 0
    assert deck.loop.event_loop.selectors_made == 1


class _Running:
    """A KeptSelectLoop run on a thread of its own; stopped by an alarm."""

    def __init__(self, loop: KeptSelectLoop) -> None:
        self.loop = loop
        self.thread = threading.Thread(target=loop.run, daemon=True)
        self.thread.start()

    def call(self, fn) -> None:
        """Run ``fn`` on the loop's thread (through a pipe of its own)."""
        done = threading.Event()
        rd, wr = os.pipe()

        def once() -> None:
            self.loop.remove_watch_file(rd)
            os.close(rd)
            fn()
            done.set()
        self.loop.watch_file(rd, once)
        os.write(wr, b"!")
        os.close(wr)
        assert done.wait(10)

    def stop(self) -> None:
        from urwid import ExitMainLoop

        def leave() -> None:
            raise ExitMainLoop()
        self.call_soon(leave)
        self.thread.join(10)
        assert not self.thread.is_alive()

    def call_soon(self, fn) -> None:
        rd, wr = os.pipe()
        self.loop.watch_file(rd, fn)
        os.write(wr, b"!")


def _reader(fd: int, got: list[bytes]):
    def read() -> None:
        got.append(os.read(fd, 100))
    return read


def test_a_descriptor_number_watched_again_after_its_close_is_read():
    loop = KeptSelectLoop()
    rd, wr = os.pipe()
    got: list[bytes] = []
    loop.watch_file(rd, _reader(rd, got))  # watched before the run: registered at its start
    running = _Running(loop)
    try:
        os.write(wr, b"a")
        wait_until(lambda: got == [b"a"], 10, message="the first pipe read")
        old = rd

        def replace() -> None:
            loop.remove_watch_file(old)
            os.close(old)
            os.close(wr)
        running.call(replace)
        rd, wr = os.pipe()  # most likely the same number again
        running.call(lambda: loop.watch_file(rd, _reader(rd, got)))
        os.write(wr, b"b")
        wait_until(lambda: got == [b"a", b"b"], 10, message="the new pipe read")
    finally:
        running.stop()
    assert loop.selectors_made == 1
    os.close(rd)
    os.close(wr)


def test_alarms_run_beside_a_descriptor_always_readable_and_idle_waits_for_quiet():
    loop = KeptSelectLoop()
    rd, wr = os.pipe()
    os.write(wr, b"x")  # never read: readable on every pass
    reads, idles, fired = [], [], threading.Event()
    loop.watch_file(rd, lambda: reads.append(1))
    loop.enter_idle(lambda: idles.append(1))
    loop.alarm(0.05, fired.set)
    running = _Running(loop)
    try:
        assert fired.wait(10)
        assert not idles  # something was always ready: never idle
        running.call(lambda: loop.remove_watch_file(rd))
        wait_until(lambda: idles, 10, message="idle once the descriptor is gone")
    finally:
        running.stop()
    assert reads
    os.close(rd)
    os.close(wr)
