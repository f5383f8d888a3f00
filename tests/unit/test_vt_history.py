"""A pane's scrollback: the same lines as a bounded deque would keep, in
about half the memory of one string a line, and packed with zlib (about a
tenth) once the output pauses, with the newest sealed block left plain."""

from __future__ import annotations

import gc
import tracemalloc
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from choragos.terminal.emulator import Terminal
from choragos.terminal.vthistory import BLOCK, CACHE, SLOW, History

# A flooding test runner's line, as big_crew prints them (about 50 characters).
COLOURS = ("\x1b[32mPASSED\x1b[0m", "\x1b[33mSKIPPED\x1b[0m", "\x1b[1;31mFAILED\x1b[0m")


def log(lines: int) -> bytes:
    return "".join(f"tests/test_mod{n % 97}.py::test_case_{n} {COLOURS[n % 3]} "
                   f"[{n % 100:3d}%]\r\n" for n in range(lines)).encode()


lines = st.lists(st.text(alphabet="ab\n é", max_size=6), max_size=150)


class Clock:
    """A clock the test moves: seals a second apart are slow output."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@settings(max_examples=300, deadline=None)
@given(limit=st.sampled_from([0, 1, 5, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3, 300]),
       batches=st.lists(st.one_of(lines, st.sampled_from(["clear", "pack", "pause"])),
                        max_size=12),
       window=st.tuples(st.integers(-400, 400), st.integers(-400, 400)))
def test_it_keeps_what_a_bounded_deque_keeps(limit: int, batches: list,
                                             window: tuple[int, int]) -> None:
    clock = Clock()
    history, model = History(limit, clock=clock), deque(maxlen=limit)
    for batch in batches:
        if batch == "clear":  # CSI 3 J
            history.clear()
            model.clear()
        elif batch == "pack":  # the output paused
            history.pack()
        elif batch == "pause":  # the next seal is slow output
            clock.now += SLOW
        else:
            history.extend(batch)
            model.extend(batch)
        assert list(history) == list(model)
        assert len(history) == len(model)
        assert history.lines(*window) == list(model)[slice(*window)]
        assert history.cached() <= CACHE


def test_a_window_inside_the_sealed_lines_takes_nothing_of_the_newest() -> None:
    """Found by the property above in a full run: 67 lines kept 5 of them,
    2 sealed and 3 newest; the first line alone came back with two more."""
    history = History(5)
    history.extend(str(n) for n in range(67))
    assert history.lines(0, 1) == ["62"]
    assert history.lines(1, 3) == ["63", "64"]


def test_lines_holding_a_newline_come_back_as_they_went_in() -> None:
    history = History(3 * BLOCK)
    given_lines = [f"row {n}" for n in range(BLOCK)] + ["one\ntwo"] + ["x"] * (BLOCK - 1)
    history.extend(given_lines)
    assert list(history) == given_lines


def test_a_flood_that_outruns_the_limit_in_one_go_keeps_only_the_newest() -> None:
    history = History(100)
    history.extend(str(n) for n in range(10_000))
    assert list(history) == [str(n) for n in range(9_900, 10_000)]


def _fed_memory(scrollback: int, data: bytes, pause: bool = True) -> tuple[int, Terminal]:
    """Bytes a terminal holds after ``data`` (traced), and the terminal;
    ``pause``: the output pauses after it (the history packs).

    Collected on both sides of the window: cyclic garbage an earlier test
    left (a socket in a cycle, say) is otherwise freed inside it, and what
    its finalizers and warnings allocate is counted as the terminal's (5
    such sockets took a paused flood from 11.6 to 30 bytes a line); and
    garbage the feed made and the collector had not reached yet is counted
    or not with the collector's phase (8.9 or 11.5 bytes a line)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        terminal = Terminal(160, 48, scrollback=scrollback)
        for start in range(0, len(data), 4096):
            terminal.feed(data[start:start + 4096])
        if pause:
            terminal.catch_up()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, terminal
    finally:
        tracemalloc.stop()


def test_a_stored_log_line_costs_its_text_and_little_more() -> None:
    """5,000 lines of about 50 characters took 108 bytes each as one string
    a line; joined into blocks (the output not paused yet), under 60."""
    data = log(6000)
    without, _ = _fed_memory(0, data, pause=False)
    used, terminal = _fed_memory(5000, data, pause=False)
    history = terminal.history()
    assert len(history) == 5000
    assert history[-1].startswith("tests/test_mod") and history[-1].endswith("%]")
    assert sum(len(line) for line in history) / 5000 > 40  # the bench's flood's lines
    per_line = (used - without) / 5000
    assert per_line < 60, f"{per_line:.0f} bytes a line"


def test_blocks_seal_plain_in_a_flood_and_pack_when_it_pauses() -> None:
    clock = Clock()
    history = History(10 * BLOCK, clock=clock)
    history.extend(f"line {n}" for n in range(3))  # the first seal comes later
    for n in range(12):  # 64 lines at a time, as fast as a flood comes
        history.extend(f"{n}:{k}" for k in range(BLOCK))
    assert history.held()[:2] == (0, 10)  # a flood packs nothing: most of it is dropped again
    assert history.pack() == 9
    assert history.held()[:2] == (9, 1)  # the newest sealed block stays plain
    assert history.pack() == 0
    clock.now += SLOW  # slow output: the blocks sealed since the last are packed
    history.extend(f"slow {k}" for k in range(2 * BLOCK))  # drops the two oldest
    assert history.held()[:2] == (9, 1)
    assert list(history)[-1] == f"slow {2 * BLOCK - 1}"


def test_packed_lines_come_back_whole() -> None:
    """What rows hold: colour sequences a program left in a title, wide and
    combining characters, blanks at both ends, empty lines."""
    given_lines = ["\x1b[1;31mFAILED\x1b[0m tests/x.py", "中文 and emoji 🎉", "e\u0301",
                   "  indented", "", "tab\there", "\x00nul", "ß" * 300]
    history = History(1000)
    history.extend(given_lines * BLOCK)
    history.pack()
    assert history.held()[0] == len(given_lines) - 1
    assert list(history) == given_lines * BLOCK


def test_reads_keep_only_a_few_blocks_unpacked() -> None:
    history = History(40 * BLOCK)
    history.extend(str(n) for n in range(40 * BLOCK))
    history.pack()
    assert list(history) == [str(n) for n in range(40 * BLOCK)]
    assert history.cached() == CACHE
    # A scroll's page across a block's edge unpacks those two blocks only.
    assert history.lines(3 * BLOCK - 2, 3 * BLOCK + 2) == [str(n) for n in
                                                           range(3 * BLOCK - 2, 3 * BLOCK + 2)]
    assert history.cached() == CACHE
    history.extend(str(n) for n in range(40 * BLOCK))  # all dropped: their cache goes too
    assert history.cached() == 0


def test_a_paused_flood_keeps_about_nine_bytes_a_line() -> None:
    """The bench's flood (5,000 lines kept of about 50 characters): packed
    once the output paused, a stored line costs its share of the packed
    text, about 9 bytes, where the joined blocks took about 52."""
    data = log(6000)
    without, _ = _fed_memory(0, data)
    used, terminal = _fed_memory(5000, data)
    per_line = (used - without) / 5000
    # What the process holds moves by a byte or two a line with what other
    # tests left cached; the packed text itself (below) is exact.
    assert per_line < 16, f"{per_line:.0f} bytes a line"
    packed, plain, size = terminal._history.held()
    assert plain == 1 and packed >= 5000 // BLOCK - 1
    assert size / 5000 < 12


def test_a_paused_flood_s_packed_blocks_take_one_block_of_the_heap() -> None:
    """Packed one by one, a flood's blocks were each a bytes object of about
    700 bytes, allocated at the pause into the holes the parse left, each
    keeping a page of the heap resident: they now share one buffer."""
    tracemalloc.start()
    try:
        terminal = Terminal(160, 48, scrollback=5000)
        data = log(6000)
        for start in range(0, len(data), 4096):
            terminal.feed(data[start:start + 4096])
        terminal.catch_up()
        held = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(True, "*/vthistory.py")])
    finally:
        tracemalloc.stop()
    # Blocks over 512 bytes: the heap's, not Python's small-object arenas.
    # Beside it: the newest block, plain, and the deque's own two (1 KB).
    big = sorted(trace.size for trace in held.traces if trace.size > 512)
    assert len(big) <= 4, big  # 81 before: one per packed block
    packed, plain, size = terminal._history.held()
    assert plain == 1 and packed >= 5000 // BLOCK - 1
    assert big[-1] >= size - 4096  # the packed text, in one piece


def test_scrolling_and_search_reach_across_packed_blocks() -> None:
    terminal = Terminal(80, 10, scrollback=1000, hold=0.05)
    text = "".join(f"row {n}\r\n" for n in range(2000))
    for start in range(0, len(text), 4096):
        terminal.feed(text[start:start + 4096].encode())
    terminal.catch_up()
    packed, plain, _ = terminal._history.held()
    assert plain == 1 and packed >= 1000 // BLOCK - 1
    history = terminal.history()
    assert history == [f"row {n}" for n in range(991, 1991)]
    assert terminal.search("row 1000") == [9]
    assert terminal.search("ROW 991", ignore_case=True) == [0]
    assert terminal.search("row 1995") == [1000 + 4]  # on the screen, after the history


def test_a_pause_that_packed_hands_the_free_pages_back(monkeypatch) -> None:
    from choragos import mallocarenas

    given_back = []
    monkeypatch.setattr(mallocarenas, "give_back", lambda: given_back.append(1) or True)
    terminal = Terminal(80, 10, scrollback=1000)
    for _ in range(2):  # the first seal packs what is before it (nothing came before it)
        terminal.feed("".join(f"row {n}\r\n" for n in range(3 * BLOCK)).encode())
    terminal.catch_up()
    assert given_back == [1]
    terminal.catch_up()  # nothing new to pack: the heap is left alone
    assert given_back == [1]
