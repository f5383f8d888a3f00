"""A pane's scrollback: the same lines as a bounded deque would keep, in
about half the memory of one string a line."""

from __future__ import annotations

import tracemalloc
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from choragos.terminal.emulator import Terminal
from choragos.terminal.vthistory import BLOCK, History

# A flooding test runner's line, as big_crew prints them (about 50 characters).
COLOURS = ("\x1b[32mPASSED\x1b[0m", "\x1b[33mSKIPPED\x1b[0m", "\x1b[1;31mFAILED\x1b[0m")


def log(lines: int) -> bytes:
    return "".join(f"tests/test_mod{n % 97}.py::test_case_{n} {COLOURS[n % 3]} "
                   f"[{n % 100:3d}%]\r\n" for n in range(lines)).encode()


lines = st.lists(st.text(alphabet="ab\n é", max_size=6), max_size=150)


@settings(max_examples=300, deadline=None)
@given(limit=st.sampled_from([0, 1, 5, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3, 300]),
       batches=st.lists(st.one_of(lines, st.just(None)), max_size=12))
def test_it_keeps_what_a_bounded_deque_keeps(limit: int, batches: list) -> None:
    history, model = History(limit), deque(maxlen=limit)
    for batch in batches:
        if batch is None:  # CSI 3 J
            history.clear()
            model.clear()
        else:
            history.extend(batch)
            model.extend(batch)
        assert list(history) == list(model)
        assert len(history) == len(model)


def test_lines_holding_a_newline_come_back_as_they_went_in() -> None:
    history = History(3 * BLOCK)
    given_lines = [f"row {n}" for n in range(BLOCK)] + ["one\ntwo"] + ["x"] * (BLOCK - 1)
    history.extend(given_lines)
    assert list(history) == given_lines


def test_a_flood_that_outruns_the_limit_in_one_go_keeps_only_the_newest() -> None:
    history = History(100)
    history.extend(str(n) for n in range(10_000))
    assert list(history) == [str(n) for n in range(9_900, 10_000)]


def _fed_memory(scrollback: int, data: bytes) -> tuple[int, Terminal]:
    """Bytes a terminal holds after ``data`` (traced), and the terminal."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        terminal = Terminal(160, 48, scrollback=scrollback)
        for start in range(0, len(data), 4096):
            terminal.feed(data[start:start + 4096])
        terminal.catch_up()
        return tracemalloc.get_traced_memory()[0] - before, terminal
    finally:
        tracemalloc.stop()


def test_a_stored_log_line_costs_its_text_and_little_more() -> None:
    """5,000 lines of about 50 characters took 108 bytes each as one string
    a line; joined into blocks, under 60."""
    data = log(6000)
    without, _ = _fed_memory(0, data)
    used, terminal = _fed_memory(5000, data)
    history = terminal.history()
    assert len(history) == 5000
    assert history[-1].startswith("tests/test_mod") and history[-1].endswith("%]")
    assert sum(len(line) for line in history) / 5000 > 40  # the bench's flood's lines
    per_line = (used - without) / 5000
    assert per_line < 60, f"{per_line:.0f} bytes a line"
