"""Coloured logs take the block path and end up exactly as cell by cell.

Test runners and build tools put a colour escape (and sometimes an erase to
the end of the line) on every line; those lines go through the screen's block
path like plain ones.  Everything a reader can see -- text, styles, history,
cursor, the style the cursor carries on -- must be the same either way.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.terminal.emulator import Terminal
from choragos.terminal.vtscreen import VTScreen
from tests.unit.test_terminal import _observe, count_blocks, fed_in_pieces

_SGR = st.sampled_from(["\x1b[32m", "\x1b[0m", "\x1b[m", "\x1b[1;31m", "\x1b[33m", "\x1b[39m",
                        "\x1b[38;5;202m", "\x1b[48;2;20;60;20m", "\x1b[7m", "\x1b[22;49m",
                        "\x1b[38:2::1:2:3m", "\x1b[K", "\x1b[0K", "\x1b[44m\x1b[K"])
_WORD = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)
_ODD = st.sampled_from(["\t", "é", "漢", "\r", "\x1b[2K", "\x1b[A", "\x1b[?1049h", "\x1b[?1049l"])
_LINE = st.lists(st.one_of(_WORD, _SGR, _SGR, _ODD), max_size=8).map("".join)
# Through a PTY lines end in CR LF (CR CR LF from a program that writes CR LF,
# the PTY adding a CR); a program writing to a raw PTY sends bare LFs.
_LOG = st.tuples(st.lists(_LINE, min_size=4, max_size=40),
                 st.sampled_from(["\r\n", "\n", "\r\r\n", "\r\r\r\n"])).map(
    lambda log: log[1].join(log[0]) + log[1])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LOG, st.lists(st.integers(0, 10**6), max_size=5), st.integers(3, 40), st.integers(1, 8))
def test_a_coloured_log_ends_the_same_on_both_paths(log: str, cuts: list[int], cols: int,
                                                    rows: int) -> None:
    data = log.encode()
    outcomes = []
    for fast in (True, False):
        t, scrolled = fed_in_pieces(data, cuts, cols, rows, fast)
        logged = _observe(t, scrolled)
        t.resize(max(cols - 3, 1), rows + 1)  # rows kept as text, cut and grown
        t.resize(cols + 2, rows)
        # Text drawn after the log shows the style the log left the cursor with.
        t.feed(b"tail\x1b[Hafter\x1b[2;3H\x1b[1Kz\x1b[L")
        outcomes.append((logged, _observe(t, scrolled)))
    assert outcomes[0] == outcomes[1]


def test_a_test_runner_log_goes_through_the_block_path(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = count_blocks(monkeypatch)
    levels = ("\x1b[32mPASSED\x1b[0m", "\x1b[33mSKIPPED\x1b[0m", "\x1b[1;31mFAILED\x1b[0m")
    lines = [f"\x1b[36mtests/test_{i % 17}.py\x1b[0m::test_{i} {levels[i % 3]} [{i % 100:3d}%]"
             "\x1b[K" for i in range(3000)]
    data = "".join(f"{line}\r\n" for line in lines).encode()
    results = []
    for fast in (True, False):
        blocks.clear()
        t = Terminal(60, 10, fast_path=fast, scrollback=10_000)
        for i in range(0, len(data), 4095):
            t.feed(data[i:i + 4095])
        results.append((t.display(), t.history(), t.render_rows()))
        if fast:
            assert sum(blocks) > 2900  # nearly every line went through the block path
        else:
            assert not blocks
    assert results[0] == results[1]
    assert any(run.fg == "red" and run.bold for row in results[0][2] for run in row)


def test_coloured_lines_ended_by_a_bare_lf_leave_the_cursor_where_they_end() -> None:
    data = b"\r\n" * 3 + b"\x1b[31mab\nc\x1b[0md\nef\x1b[1m\ngh\nij\n" * 3
    results = []
    for fast in (True, False):
        scrolled: list[str] = []
        t = Terminal(10, 3, fast_path=fast, on_scrolled=scrolled.extend)
        t.feed(data)
        results.append((_observe(t, scrolled), t.render_rows()))
    assert results[0] == results[1]
    assert "  cd" in results[0][0][1]  # the second line starts where the first ended


@pytest.mark.parametrize("cols", [7, 13, 29])
def test_coloured_lines_wrapping_in_a_narrow_pane_keep_their_colours_on_every_row(
        monkeypatch: pytest.MonkeyPatch, cols: int) -> None:
    """A log line longer than a narrow pane wraps onto several rows on the
    block path; each row carries the colours of its own columns, colour
    changes inside a continued row included."""
    blocks = count_blocks(monkeypatch)
    lines = [f"\x1b[3{i % 7}m[{i:06d}]\x1b[0m compiling {'x' * (i % 11)}"
             f"\x1b[1;3{(i + 2) % 7}m ok \x1b[0m{'.' * (i % 23)}\x1b[44mend\x1b[0m"
             for i in range(400)]
    data = "".join(f"{line}\r\n" for line in lines).encode()
    results = []
    for fast in (True, False):
        blocks.clear()
        t = Terminal(cols, 24, fast_path=fast)
        for i in range(0, len(data), 1000):
            t.feed(data[i:i + 1000])
        results.append((t.display(), t.history(), t.render_rows(), t.cursor))
        assert bool(blocks) == fast
    assert results[0] == results[1]
    rows = results[0][2]
    # Some rows begin inside a line and change colour within themselves.
    assert any(len({(run.fg, run.bg, run.bold) for run in row}) >= 2 for row in rows)


# Log lines with a sequence at the start of each, so no block of them is plain.
_CLEAN_LINE = st.lists(st.one_of(_WORD, _SGR, _SGR), max_size=8).flatmap(
    lambda parts: _SGR.map(lambda first: first + "".join(parts)))


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(_CLEAN_LINE, min_size=12, max_size=60), st.lists(st.integers(0, 10**6), max_size=3),
       st.integers(3, 30), st.integers(1, 6), st.sampled_from(["\r\n", "\r\r\n"]))
def test_lines_that_scroll_off_within_a_block_are_taken_as_text_and_end_the_same(
        monkeypatch: pytest.MonkeyPatch, lines: list[str], cuts: list[int], cols: int,
        rows: int, end: str) -> None:
    """A block longer than the screen: the lines it pushes out within itself
    skip their styled rows (only their text is kept); history, transcript,
    screen and the style the last screenful starts in must not change."""
    data = "".join(f"{line}{end}" for line in lines).encode()
    outcomes = []
    with monkeypatch.context() as patch:  # undone after each example
        heads = _count_heads(patch)
        for fast in (True, False):
            t, scrolled = fed_in_pieces(data, cuts, cols, rows, fast)
            t.feed(b"tail")
            outcomes.append(_observe(t, scrolled))
    assert outcomes[0] == outcomes[1]
    if not cuts:
        assert heads  # one whole block of more lines than rows has a head


def _count_heads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows each coloured head pushed, in order."""
    heads: list[int] = []
    coloured_head = VTScreen._coloured_head

    def counting(screen: VTScreen, block: str, cursor: object, pushed: list[object],
                 *rest: object) -> object:
        before = len(pushed)
        found = coloured_head(screen, block, cursor, pushed, *rest)
        if found is not None:
            heads.append(len(pushed) - before)
        return found

    monkeypatch.setattr(VTScreen, "_coloured_head", counting)
    return heads


@pytest.mark.parametrize("end", ["\r\n", "\r\r\n"])
def test_a_coloured_flood_in_a_narrow_pane_skips_the_rows_it_pushes_out(
        monkeypatch: pytest.MonkeyPatch, end: str) -> None:
    """The crew's shape: a 39-column pane taking 50 wrapping coloured lines
    per write.  Most rows leave the screen within their write and go out as
    text, yet every row left on it keeps its colours."""
    heads = _count_heads(monkeypatch)
    lines = [f"\x1b[3{i % 7}m[{i:08d}]\x1b[0m compiling module_{i}.py ... ok {'.' * (i % 60)}"
             for i in range(500)]
    writes = ["".join(f"{line}{end}" for line in lines[i:i + 50]).encode()
              for i in range(0, len(lines), 50)]
    results = _fed_both_ways(writes, 39, 12)
    assert results[0] == results[1]
    assert sum(heads) > 0.6 * len(results[0][1])  # most scrolled rows skipped their styles
    assert any(run.fg != "default" for row in results[0][2] for run in row)


@pytest.mark.parametrize("last", [
    "\x1b[3{i}m" + "x" * 10 + "\x1b[0m",             # exactly one row wide: one row, not two
    "\x1b[3{i}m" + "a" * 20 + "\rbb\x1b[0m",         # a CR inside: back over its own rows
])
def test_the_lines_kept_for_the_screen_are_counted_by_the_rows_they_make(
        monkeypatch: pytest.MonkeyPatch, last: str) -> None:
    """The lines played with their colours must fill the screen: counting a
    line as more rows than it makes would leave a row of the screen without
    its colours."""
    heads = _count_heads(monkeypatch)
    lines = [f"\x1b[3{i % 7}mline {i}\x1b[0m" for i in range(12)]
    lines += [last.format(i=i % 7) for i in range(2)]
    data = "".join(f"{line}\r\n" for line in lines).encode()
    results = []
    for fast in (True, False):
        t = Terminal(10, 4, fast_path=fast)
        t.feed(b"\r\n" * 3)  # the cursor on the bottom row: the next write is one block
        t.feed(data)
        results.append((t.display(), t.history(), t.render_rows()))
    assert heads
    assert results[0] == results[1]


@pytest.mark.parametrize("end", ["\r\n", "\r\r\n"])  # CR LF as written; through a PTY
def test_a_flood_read_in_pieces_finishes_its_cut_lines_as_text(
        monkeypatch: pytest.MonkeyPatch, end: str) -> None:
    """A PTY hands a flood over in pieces that cut lines anywhere; the rest
    of a cut line is appended to its row's text (not drawn cell by cell),
    and the screen, its colours and the history end the same."""
    finished: list[bool] = []
    styled_rows = VTScreen._styled_rows

    def counting(screen: VTScreen, segment: str, cursor: object, lead: object = None) -> object:
        found = styled_rows(screen, segment, cursor, lead)
        if lead is not None:
            finished.append(bool(found[0]))
        return found

    monkeypatch.setattr(VTScreen, "_styled_rows", counting)
    cell_by_cell: list[str] = []
    plain_segment = VTScreen._plain_segment

    def drawn_by_cells(screen: VTScreen, segment: str) -> None:
        cell_by_cell.append(segment)
        plain_segment(screen, segment)

    monkeypatch.setattr(VTScreen, "_plain_segment", drawn_by_cells)
    lines = [f"\x1b[3{i % 7}m[{i:08d}]\x1b[0m compiling \x1b[1mmodule_{i}\x1b[0m.py ok"
             f"{'.' * (i % 50)}" for i in range(600)]
    data = "".join(f"{line}{end}" for line in lines).encode()
    results = _fed_both_ways([data[i:i + 997] for i in range(0, len(data), 997)], 39, 12)
    assert results[0] == results[1]
    assert finished.count(True) > 40  # nearly every piece finished its cut line as text
    assert len(cell_by_cell) < 5  # nor left the line it cut for the next one cell by cell


def _fed_both_ways(writes: list[bytes], cols: int, rows: int) -> list[tuple[object, ...]]:
    """What a terminal shows after ``writes``, with its fast paths and without."""
    results = []
    for fast in (True, False):
        t = Terminal(cols, rows, fast_path=fast, scrollback=10_000)
        for write in writes:
            t.feed(write)
        results.append((t.display(), t.history(), t.render_rows(), t.cursor))
    return results


def test_coloured_lines_of_accented_text_and_test_marks_take_the_block_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A test runner's ✓ and ✗ (and accented names) take one cell each: the
    lines go through the block path like ASCII ones, and end the same."""
    blocks = count_blocks(monkeypatch)
    marks = ("\x1b[32m✓\x1b[0m", "\x1b[31m✗\x1b[0m", "\x1b[33m–\x1b[0m")
    data = "".join(f"  {marks[i % 3]} tëst_{i} › renders · {'é' * (i % 50)}\r\n"
                   for i in range(2000)).encode()
    results = _fed_both_ways([data[i:i + 4095] for i in range(0, len(data), 4095)], 50, 12)
    assert results[0] == results[1]
    assert sum(blocks) > 1900


@pytest.mark.timeout(30)
def test_a_long_narrow_run_ending_in_a_wide_character_is_refused_at_once() -> None:
    """Whether a block's characters take one cell each is one regex pass; a
    run that fails only at its end must not be retried split every way
    (exponential time: hostile output would freeze the session)."""
    line = "\x1b[32m" + "é" * 20_000 + "漢\x1b[0m\r\n"
    results = _fed_both_ways([line.encode() * 5], 80, 10)
    assert results[0] == results[1]
