"""The server asks glibc for one malloc arena (its threads take turns on
the interpreter's lock, and each extra arena keeps what it grew to)."""

from __future__ import annotations

import platform
import subprocess
import sys
import threading

import pytest

from choragos.mallocarenas import one_arena
from tests.unit.test_server_imports import COUNT_PROCESSES


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="a glibc setting")
def test_glibc_takes_the_setting() -> None:
    # In a child: the setting is for the whole process.
    code = "from choragos.mallocarenas import one_arena; print(one_arena())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "True"


def test_without_glibc_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_libc(_name: object) -> object:
        raise OSError("no C library by that name")

    monkeypatch.setattr("ctypes.CDLL", no_libc)
    assert one_arena() is False


def test_asking_starts_no_process() -> None:
    """ctypes.util.find_library runs ``ldconfig -p``: a process forked from
    the server on its way to the first frame."""
    code = COUNT_PROCESSES + """
import json
from choragos.mallocarenas import one_arena
from choragos.gitstore.treewatch import _libc
one_arena()
_libc()
print(json.dumps(started))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == "[]"


# What a thread's glibc cache holds is what the heap's in-use bytes fall by
# when the thread ends (its cached blocks are freed then).  In a child: the
# heap is the whole process's.
CACHE_HELD = """
import ctypes, os, queue, threading, time
from choragos.mallocarenas import one_arena
one_arena()


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
asks, done = queue.Queue(), queue.Queue()


def serve_asks():
    while (ask := asks.get()) is not None:
        try:
            ask()
        finally:
            done.put(None)
    done.put(None)
    asks.get()  # ends when told


thread = threading.Thread(target=serve_asks)
thread.start()


def on_thread(ask):
    asks.put(ask)
    done.get()


def cache_held():
    asks.put(None)
    done.get()
    before = libc.mallinfo2().uordblks
    asks.put(None)
    thread.join()
    while os.path.exists(f"/proc/self/task/{thread.native_id}"):
        time.sleep(0.001)  # the native thread frees its cache as it ends
    return before - libc.mallinfo2().uordblks
"""

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's cache")


def _child(code: str) -> int:
    out = subprocess.run([sys.executable, "-c", CACHE_HELD + code], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    return int(out.strip())


@glibc_only
def test_a_drained_thread_keeps_no_freed_blocks_cached() -> None:
    # Blocks of 520-1,000 bytes freed on the thread: 7 of each size stay in its cache.
    fill = """
def churn():
    for size in range(520, 1000, 16):
        blocks = [bytes(size) for _ in range(10)]
        del blocks
"""
    kept = _child(fill + "on_thread(churn)\nprint(cache_held())\n")
    assert kept > 100_000  # 30 sizes x 7 blocks: what the drain is for
    drained = _child(fill + """
from choragos.mallocarenas import drain_thread_cache
on_thread(churn)
on_thread(drain_thread_cache)
print(cache_held())
""")
    assert drained < 16_000  # the thread's own structures, its cache empty


@glibc_only
def test_a_thread_that_drew_a_flood_hands_its_cache_back_at_its_next_read() -> None:
    """A role's thread reading the screen draws held output (a parse); once
    the output paused, its next read drains its cache.  On a flood like the
    big crew bench's, the thread kept 163 KB cached before; after, 12 KB."""
    kept = _child("""
from choragos.terminal.emulator import Terminal
terminal = Terminal(100, 30, scrollback=5000, hold=60.0)
line = "tests/test_mod{}.py::test_case_{} \\x1b[32mPASSED\\x1b[0m [{:3d}%]\\r\\n"
text = "".join(line.format(n % 97, n, n % 100) for n in range(30000)).encode()
for start in range(0, len(text), 4096):
    terminal.feed(text[start:start + 4096])
    if start // 4096 % 3 == 0:
        on_thread(terminal.display)  # draws what the feeds held, on that thread
terminal.catch_up()  # the output paused
on_thread(terminal.display)  # the thread drew held output a moment ago: not yet
from choragos import mallocarenas
mallocarenas._clock = lambda: time.monotonic() + mallocarenas.QUIET
on_thread(terminal.display)  # quiet since
print(cache_held())
""")
    assert kept < 32_000


def test_only_a_thread_owed_a_drain_drains(monkeypatch: pytest.MonkeyPatch) -> None:
    from choragos import mallocarenas

    drained: list[int] = []
    monkeypatch.setattr(mallocarenas, "drain_thread_cache",
                        lambda: drained.append(threading.get_ident()) or True)
    monkeypatch.setattr(mallocarenas, "owed", set())
    monkeypatch.setattr(mallocarenas, "_drew_at", {})
    now = [100.0]
    monkeypatch.setattr(mallocarenas, "_clock", lambda: now[0])
    assert mallocarenas.settle() is False
    mallocarenas.owe_drain([threading.get_ident() + 1])
    assert mallocarenas.settle() is False and drained == []
    mallocarenas.owe_drain([threading.get_ident()])
    mallocarenas.drew()  # still drawing a flood's output
    now[0] += mallocarenas.QUIET / 2
    assert mallocarenas.settle() is False and drained == []
    mallocarenas.drew()
    now[0] += mallocarenas.QUIET
    assert mallocarenas.settle() is True
    assert mallocarenas.settle() is False  # once
    assert drained == [threading.get_ident()]


def test_without_glibc_a_drain_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from choragos import mallocarenas

    def no_libc(_name: object) -> object:
        raise OSError("no C library by that name")

    monkeypatch.setattr("ctypes.CDLL", no_libc)
    monkeypatch.setattr(mallocarenas, "_heap", None)
    assert mallocarenas.drain_thread_cache() is False
    monkeypatch.setattr(mallocarenas, "_heap", None)  # looked up afresh next time


@glibc_only
def test_a_drain_without_a_thread_to_spare_gives_the_blocks_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from choragos import mallocarenas

    freed: list[int] = []
    malloc, free = mallocarenas._heap_calls()
    monkeypatch.setattr(mallocarenas, "_heap", (malloc, lambda a: freed.append(a) or free(a)))

    def no_thread(_self: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    assert mallocarenas.drain_thread_cache() is False
    assert len(freed) == 64 * 7  # every block taken is freed again, none lost


def test_a_flood_that_pauses_often_drains_its_reader_once_it_is_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Output at a steady rate packs the history at every pause; the thread
    drawing it (the deck's, a role's) drains once, after it stopped drawing,
    not at every pause."""
    from choragos import mallocarenas
    from choragos.terminal.emulator import Terminal

    drained: list[int] = []
    monkeypatch.setattr(mallocarenas, "drain_thread_cache", lambda: drained.append(1) or True)
    monkeypatch.setattr(mallocarenas, "owed", set())
    monkeypatch.setattr(mallocarenas, "_drew_at", {})
    now = [100.0]
    monkeypatch.setattr(mallocarenas, "_clock", lambda: now[0])
    terminal = Terminal(80, 24, scrollback=5000, hold=60.0)
    line = 0
    for _pause in range(20):  # 20 bursts of 400 lines, 50 ms apart
        burst = "".join(f"line {n}\r\n" for n in range(line, line + 400)).encode()
        line += 400
        for start in range(0, len(burst), 4096):
            terminal.feed(burst[start:start + 4096])
        terminal.display()  # draws what was held
        terminal.catch_up()  # the pause: the history packs
        terminal.display()
        now[0] += 0.05
    assert drained == []
    assert terminal.history()[-1] == f"line {line - 24}"  # nothing lost
    now[0] += mallocarenas.QUIET
    terminal.display()
    terminal.display()
    assert drained == [1]
