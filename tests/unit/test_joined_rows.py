"""A flood's rows joined back into its lines where they are cut.

A role's transcript holds the lines a program wrote, its wrapped rows joined
again (``transcript.logical_lines``).  For the lines a block of log output
cuts into rows in bulk, the screen works out what they join back into as it
cuts them (``vtscreen._push_lines`` with ``joins``), and the terminal hands
that on with the rows (``emulator.Scrolled``), so the transcript does not
walk them again.  The transcript and the history must be byte for byte what
the rows joined again gave: every kind of output, every width, fed in any
pieces, with the pane resized between.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.terminal import vtscreen
from choragos.terminal.emulator import Terminal
from choragos.terminal.transcript import Transcript, logical_lines
from choragos.terminal.vtcells import ascii_lines

# Printable ASCII where it matters: blanks (a row cut at one is not joined),
# rules (never joined), and lines as wide as the screen or twice as wide.
_CHARS = st.sampled_from("ab -=.x")
_TEXT = st.one_of(st.text(_CHARS, max_size=30), st.sampled_from(["", " ", "-" * 8, "=" * 16]))


@settings(max_examples=400, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=25), st.integers(1, 12), st.text("ab ", max_size=6))
def test_the_rows_are_cut_as_before_and_join_back_as_the_transcript_joins_them(
        texts: list[str], cols: int, carry: str) -> None:
    before: list[object] = []
    vtscreen._push_lines(texts, cols, before)
    pushed: list[object] = ["kept"]
    joins: list[vtscreen.Joined] = []
    vtscreen._push_lines(texts, cols, pushed, joins)
    assert pushed[1:] == before
    [(start, count, lines, tail)] = joins
    assert (start, count) == (1, len(before))
    stripped = [row.rstrip() for row in before]  # type: ignore[attr-defined]
    if lines is None:
        lines, tail = stripped, ""
        assert all(len(row) < cols for row in stripped)
    assert (lines, tail) == ascii_lines(stripped, cols, "")
    # The transcript's carry joins the first line, whatever it is.
    expected = logical_lines(stripped, cols, carry)
    got = ([carry + lines[0], *lines[1:]], tail) if lines else ([], carry + tail)
    assert got == expected


def _the_old_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """The screen as before: rows cut without their lines worked out."""
    push = vtscreen._push_lines
    monkeypatch.setattr(vtscreen, "_push_lines",
                        lambda texts, cols, pushed, joins=None: push(texts, cols, pushed))


def _run(tmp: Path, data: bytes, cuts: list[int], cols: int, rows: int,
         resize_at: int | None) -> tuple[bytes, list[str], list[str], tuple[int, int]]:
    """Feed ``data`` in pieces through a role's terminal (held, as a role's
    is) and transcript: the transcript's bytes, the history, the screen."""
    terminal = Terminal(cols, rows, hold=3600.0, scrollback=10_000)
    transcript = Transcript(tmp / "role.log")
    terminal.on_scrolled = lambda lines: transcript.append_lines(lines, terminal.cols)
    bounds = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    for n, (start, end) in enumerate(pairwise(bounds)):
        if n == resize_at:
            terminal.resize(max(cols - 5, 1), rows)
        terminal.feed(data[start:end])
    terminal.catch_up()
    transcript.flush_screen(terminal.whole_display(), terminal.cols)
    transcript.close()
    log = tmp / "role.log"  # none when nothing was written
    return (log.read_bytes() if log.exists() else b"", terminal.history(),
            terminal.display(), terminal.cursor)


_SGR = st.sampled_from(["\x1b[32m", "\x1b[0m", "\x1b[1;31m", "\x1b[K", "\x1b[44m\x1b[K"])
_ODD = st.sampled_from(["\t", "✓", "漢", "\x1b[2J", "\x1b[A", "\x1b[?1049h", "\x1b[?1049l",
                        "\x1b[H", "\x07"])
_LINE = st.one_of(
    _TEXT,  # plain, wrapped, blanks and rules
    st.lists(st.one_of(_TEXT, _SGR), max_size=5).map("".join),  # coloured
    st.lists(st.one_of(_TEXT, _SGR, _ODD), max_size=5).map("".join),  # marked, TUI
)
_LOG = st.tuples(st.lists(_LINE, min_size=20, max_size=200),
                 st.sampled_from(["\r\n", "\r\r\n", "\n"])).map(
    lambda log: (log[1].join(log[0]) + log[1]).encode())


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_LOG, st.lists(st.integers(0, 10**6), max_size=6), st.integers(1, 20),
       st.integers(1, 6), st.one_of(st.none(), st.integers(1, 4)))
def test_a_role_s_transcript_and_history_are_byte_identical_to_the_rows_joined_again(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, log: bytes,
        cuts: list[int], cols: int, rows: int, resize_at: int | None) -> None:
    new = _run(tmp_path_factory.mktemp("new"), log, cuts, cols, rows, resize_at)
    with monkeypatch.context() as patch:
        _the_old_cut(patch)
        old = _run(tmp_path_factory.mktemp("old"), log, cuts, cols, rows, resize_at)
    assert new == old


def _flood(lines: int, width: int) -> bytes:
    """The attach bench's neighbour: coloured log lines with blanks, some
    as wide as ``width`` or wrapping onto a row of dots only (a rule)."""
    return "".join(f"\x1b[3{n % 6 + 1}m[{n:08d}]\x1b[0m compiling module_{n % 997}.py ... ok "
                   f"{'.' * (n % (2 * width))}\r\r\n" for n in range(lines)).encode()


@pytest.mark.parametrize(("cols", "rows"), [(80, 24), (79, 6), (40, 10), (12, 3)])
def test_the_bench_s_flood_gives_the_same_transcript_and_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cols: int, rows: int) -> None:
    data = _flood(3000, cols) + b"partial line"
    cuts = list(range(0, len(data), 4095))  # a Linux PTY's reads
    for side in ("new", "old"):
        (tmp_path / side).mkdir()
    new = _run(tmp_path / "new", data, cuts, cols, rows, None)
    _the_old_cut(monkeypatch)
    old = _run(tmp_path / "old", data, cuts, cols, rows, None)
    assert new == old
    assert len(new[0].splitlines()) > 2900  # every line, the screen's last ones flushed
