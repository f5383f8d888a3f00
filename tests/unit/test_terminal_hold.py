"""A terminal that holds log lines back draws them in batches, and nobody can
tell: every read sees all that was fed, the scrolled lines arrive once each
and in order whatever thread draws them, and nothing waits longer than the
hold or past ``HOLD_LIMIT``."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.terminal import emulator as terminal_mod
from choragos.terminal.emulator import HOLD_FROM, HOLD_LIMIT, Terminal
from tests.unit.test_colour_blocks import _LOG
from tests.unit.test_terminal import _STREAM, _cut, _observe, count_blocks

LONG = 3600.0  # a hold no test outlives: only reads, the limit and catch_up draw


def _log(lines: int, start: int = 0) -> bytes:
    return "".join(f"\x1b[3{i % 7}m[{i:06d}]\x1b[0m compiling module_{i % 97}.py ... ok\r\n"
                   for i in range(start, start + lines)).encode()


def _pieces(data: bytes, size: int = 4095) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_LOG, _STREAM), min_size=1, max_size=3).map("".join),
       st.lists(st.integers(0, 10**6), max_size=8), st.lists(st.booleans(), max_size=9),
       st.booleans(), st.integers(3, 40), st.integers(1, 8))
def test_a_held_stream_reads_the_same_as_one_drawn_at_once(
        stream: str, cuts: list[int], reads: list[bool], lead: bool, cols: int,
        rows: int) -> None:
    """Reads between the pieces (or not), then more output on top: each read
    and the end look the same with and without holding.  With ``lead`` a log
    has filled the screen first, so the rest comes while lines are held."""
    data = (_log(rows + 2) if lead else b"") + stream.encode()
    pieces = _cut(data, cuts)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(terminal_mod, "HOLD_FROM", 0)  # any piece may start holding
        outcomes = [_read_along(pieces, reads, cols, rows, hold) for hold in (LONG, 0.0)]
    assert outcomes[0] == outcomes[1]


def _read_along(pieces: list[bytes], reads: list[bool], cols: int, rows: int,
                hold: float) -> list[tuple[object, ...]]:
    """What reads between the pieces see, and the end after more output."""
    scrolled: list[str] = []
    t = Terminal(cols, rows, hold=hold, on_scrolled=scrolled.extend, scrollback=10_000)
    seen = []
    for i, piece in enumerate(pieces):
        t.feed(piece)
        if i < len(reads) and reads[i]:
            seen.append(_observe(t, scrolled))
    t.resize(cols + 1, rows)
    t.feed(b"tail\x1b[Hafter\x1b[2;3H\x1b[1Kz\x1b[L")
    seen.append(_observe(t, scrolled))
    return seen


def test_a_flood_is_drawn_once_per_batch_and_nothing_shows_until_then(
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = count_blocks(monkeypatch)
    woke: list[int] = []
    scrolled: list[str] = []
    t = Terminal(80, 24, hold=LONG, on_change=lambda: woke.append(1),
                 on_scrolled=scrolled.extend)
    t.feed(b"$ make\r\n" + b"\r\n" * 23)  # the cursor on the bottom row, where a log scrolls
    assert t.take_dirty() and woke == [1] and scrolled == ["$ make"]
    del scrolled[:]
    generation = t.generation
    pieces = _pieces(_log(400))
    dues = [t.feed(piece) for piece in pieces[:8]]
    # Held: no block drawn, no wake, no new generation, nothing scrolled.
    assert blocks == [] and woke == [1] and t.generation == generation and scrolled == []
    assert all(due is not None and 0 < due <= LONG for due in dues)
    # The deck reads the screen as last drawn: the flood stays held for its reader.
    before = t.live_rows([], catch_up=False)
    assert blocks == [] and t.held and "compiling" not in str(before.runs)
    t.catch_up()
    assert len(blocks) == 1  # eight pieces, one block
    assert woke == [1, 1] and t.generation > generation
    logged = [line for line in scrolled if line]
    assert logged[0].startswith("[000000]") and logged[-1].startswith("[000")
    assert t.display()[-1] == "" and "compiling" in t.display()[-2]
    assert t.catch_up() is None and len(blocks) == 1  # nothing more held


def test_a_read_draws_what_is_held_and_its_lines_scroll_in_order() -> None:
    scrolled: list[str] = []
    t = Terminal(60, 10, hold=LONG, on_scrolled=scrolled.extend, scrollback=100_000)
    data = _log(2000)
    for piece in _pieces(data):
        t.feed(piece)
    shown = t.display()
    assert shown[-2].startswith("[001999]")
    assert [line[:8] for line in scrolled] == [f"[{i:06d}]" for i in range(len(scrolled))]
    assert len(scrolled) + sum(1 for line in shown if line) == 2000


def test_holding_is_bounded_by_the_limit_and_by_time() -> None:
    t = Terminal(80, 24, hold=LONG)
    most = 0
    for piece in _pieces(_log(20_000)):
        t.feed(piece)
        most = max(most, t.held)
    assert HOLD_LIMIT - 4095 <= most < HOLD_LIMIT
    quick = Terminal(80, 24, hold=0.0)
    assert quick.feed(_log(100)) is None and not quick.held
    expired = Terminal(80, 24, hold=1e-9)
    assert expired.feed(_log(100)) is None and not expired.held


def test_only_a_big_piece_starts_holding_and_what_follows_joins_it() -> None:
    t = Terminal(80, 24, hold=LONG)
    t.feed(b"\r\n" * 30)  # the cursor on the bottom row
    assert t.feed(b"banner\r\n" * 5 + b"agent> ") is None  # a prompt: drawn at once
    assert t.display()[-1] == "agent>"
    log = _log(200)
    assert t.feed(log[:HOLD_FROM]) is not None  # a piece of a flood: held
    assert t.feed(b"tail\r\n" * 5 + b"$ ") is not None and t.display()[-1] == "$"


def test_an_echo_awaited_is_drawn_at_once() -> None:
    t = Terminal(80, 24, hold=LONG)
    assert t.feed(_log(100), eager=True) is None
    assert not t.held and t.take_dirty()


def test_what_is_not_a_log_line_is_drawn_after_the_held_lines() -> None:
    t = Terminal(40, 6, hold=LONG)
    assert t.feed(_log(50)) is not None
    assert t.feed(b"\x08") is None  # a control character: everything drawn at once, in order
    assert not t.held and t.display()[-2].startswith("[000049]")
    assert t.feed(_log(50, 50)) is not None
    # An escape joins the held lines unparsed; drawing them finds it is no
    # colour and parses the lot, in order.
    assert t.feed(b"\x1b[1;1Htop") is not None
    assert t.display()[0].startswith("top") and t.display()[-2].startswith("[000099]")
    assert not t.held


def test_scrolled_lines_keep_their_order_when_readers_draw_them(monkeypatch) -> None:
    """A feeding thread and reading threads all draw held lines; each
    batch's lines reach ``on_scrolled`` in the order they left the screen,
    even when the thread that drew a batch is slow to hand it on."""
    scrolled: list[str] = []
    slow = threading.local()
    real = terminal_mod._safecall

    def handing_on(callback, *args):
        if getattr(slow, "on", False):
            threading.Event().wait(0.001)  # a reader preempted before it hands its lines on
        return real(callback, *args)

    monkeypatch.setattr(terminal_mod, "_safecall", handing_on)
    t = Terminal(60, 8, hold=LONG, on_scrolled=scrolled.extend, scrollback=10)
    stop = threading.Event()

    def read() -> None:
        slow.on = True
        while not stop.is_set():
            t.display()

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for piece in _pieces(_log(6000), 1500):
            t.feed(piece)
    finally:
        stop.set()
        for reader in readers:
            reader.join(5)
    t.display()
    numbers = [int(line[1:7]) for line in scrolled]
    assert numbers == list(range(len(numbers))) and len(numbers) >= 6000 - 8
