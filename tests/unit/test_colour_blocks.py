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

from choragos.terminal import Terminal
from tests.unit.test_terminal import _observe, count_blocks, fed_in_pieces

_SGR = st.sampled_from(["\x1b[32m", "\x1b[0m", "\x1b[m", "\x1b[1;31m", "\x1b[33m", "\x1b[39m",
                        "\x1b[38;5;202m", "\x1b[48;2;20;60;20m", "\x1b[7m", "\x1b[22;49m",
                        "\x1b[38:2::1:2:3m", "\x1b[K", "\x1b[0K", "\x1b[44m\x1b[K"])
_WORD = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)
_ODD = st.sampled_from(["\t", "é", "漢", "\r", "\x1b[2K", "\x1b[A", "\x1b[?1049h", "\x1b[?1049l"])
_LINE = st.lists(st.one_of(_WORD, _SGR, _SGR, _ODD), max_size=8).map("".join)
# Through a PTY lines end in CR LF; a program writing to a raw PTY sends bare LFs.
_LOG = st.tuples(st.lists(_LINE, min_size=4, max_size=40), st.sampled_from(["\r\n", "\n"])).map(
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
