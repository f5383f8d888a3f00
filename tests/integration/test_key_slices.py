"""The threads a keystroke wakes ask the scheduler for the shortest slice,
so a flood's batch on a core does not keep them waiting for it; a reader
that floods goes back to the default slice, and nothing the short threads
start inherits theirs.  Real PTYs, processes and the kernel's own record of
each thread's slice."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from choragos.terminal import ptyproc, schedslice
from choragos.terminal.ptyproc import PtyChild, Reader
from tests.conftest import wait_until

DEFAULT = schedslice.slice_of()
pytestmark = pytest.mark.skipif(
    DEFAULT is None or not schedslice.short(threading.get_native_id())
    or not schedslice.default(threading.get_native_id()),
    reason="needs sched_getattr/sched_setattr (Linux)")


class Slices:
    """Each piece a reader handed on, with its thread and that thread's slice then."""

    def __init__(self) -> None:
        self.pieces: list[tuple[int, int, int | None]] = []
        self.exited = threading.Event()

    def data(self, data: bytes) -> None:
        self.pieces.append((len(data), threading.get_native_id(), schedslice.slice_of()))

    def exit(self, _status: object) -> None:
        self.exited.set()

    def read(self) -> int:
        return sum(size for size, _, _ in self.pieces)


def _read(tmp_path: Path, script: str) -> tuple[PtyChild, Reader, Slices]:
    child = PtyChild.spawn(["/bin/sh", "-c", script], tmp_path, {"PATH": os.defpath})
    seen = Slices()
    reader = Reader(child, seen.data, seen.exit)
    reader.start()
    return child, reader, seen


def _finish(child: PtyChild, reader: Reader) -> None:
    child.terminate(1.0)
    reader.halt()
    reader.join(5)
    child.close()
    assert not reader.is_alive()


def test_a_quiet_panes_reader_has_the_short_slice_and_its_agent_the_default(tmp_path):
    child, reader, seen = _read(tmp_path, "echo ready; exec sleep 60")
    try:
        wait_until(lambda: seen.read() >= 5, 10, message="the child's first line")
        assert {slice_ for _, _, slice_ in seen.pieces} == {schedslice.SHORT}
        # The agent was spawned by this thread, not the reader; and a short
        # thread's children are reset anyway (asked below).
        assert schedslice.slice_of(child.pid) == DEFAULT
    finally:
        _finish(child, reader)


def test_a_flooding_reader_goes_back_to_the_default_and_the_next_turn_is_short(
        tmp_path, monkeypatch):
    monkeypatch.setattr(ptyproc, "FLOOD_BYTES", 65536)
    monkeypatch.setattr(ptyproc, "TURN_QUIET", 0.2)
    child, reader, seen = _read(tmp_path, "head -c 300000 /dev/zero | tr '\\0' x;"
                                          " sleep 0.6; echo after; exec sleep 60")
    try:
        wait_until(lambda: seen.read() >= 300000 + 7, 10, message="the flood and the line after")
        flooded = [(tid, slice_) for _, tid, slice_ in seen.pieces[:-1]]
        after_tid, after_slice = seen.pieces[-1][1:]
        assert flooded[0][1] == schedslice.SHORT  # before it was a flood
        assert flooded[-1][1] == DEFAULT  # past FLOOD_BYTES: its batches not cut short
        assert after_tid != flooded[-1][0] and after_slice == schedslice.SHORT
    finally:
        _finish(child, reader)


def test_what_a_short_thread_starts_gets_the_default_slice():
    found: dict[str, int | None] = {}

    def short_thread() -> None:
        assert schedslice.short()
        found["self"] = schedslice.slice_of()
        inner = threading.Thread(target=lambda: found.update(thread=schedslice.slice_of()))
        inner.start()
        inner.join()
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
        try:
            found["process"] = schedslice.slice_of(process.pid)
        finally:
            process.kill()
            process.wait()

    thread = threading.Thread(target=short_thread)
    thread.start()
    thread.join(10)
    assert found == {"self": schedslice.SHORT, "thread": DEFAULT, "process": DEFAULT}
