"""What a flood of log lines costs a role's pane, counted: the Python calls
made per line on the way from the PTY's pieces through the terminal (held
and drawn a batch at a time, as a role's is) to the history and the
transcript.  A step that works per character or per cell in Python shows
here as tens of calls a line; what the session pays per line must stay a
few calls, the rest being done in C (regex, str and bytes methods)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from choragos.terminal.emulator import Terminal
from choragos.terminal.transcript import Transcript

LINES = 3000


def _flood(lines: int) -> bytes:
    """Coloured log lines as the attach bench's neighbour writes them, of 40
    to 72 columns (none exactly as wide as a pane, or twice: the transcript
    takes such a line for a wrapped one) and without spaces (a row cut
    at one loses it, and is not joined), with CR LF through a PTY that adds
    a CR before each LF."""
    colours = itertools.cycle([31, 32, 33, 34, 35, 36])
    return "".join(f"\x1b[{next(colours)}m[{n:08d}]\x1b[0m_compiling_module_{n % 997}.py"
                   f"_..._ok_{'.' * (n % 30)}\r\r\n" for n in range(lines)).encode()


def _python_calls(run) -> int:
    calls = 0

    def count(_frame, event, _arg) -> None:
        nonlocal calls
        if event == "call":  # a Python function entered, or a generator resumed
            calls += 1

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        run()
    finally:
        sys.setprofile(previous)
    return calls


@pytest.mark.parametrize(("cols", "rows"), [(80, 24), (39, 12)])
def test_a_flooded_pane_costs_a_few_python_calls_a_line(tmp_path: Path, cols: int,
                                                        rows: int) -> None:
    # Held as a role's terminal holds, but batches cut by size alone (as at
    # a full rate): a slow machine must not turn the count into one of time.
    terminal = Terminal(cols, rows, hold=3600.0)
    transcript = Transcript(tmp_path / "flood.log")
    terminal.on_scrolled = lambda lines: transcript.append_lines(lines, terminal.cols)
    data = _flood(LINES)
    pieces = [data[i:i + 4095] for i in range(0, len(data), 4095)]  # a Linux PTY's reads

    def take() -> None:
        for piece in pieces:
            terminal.feed(piece)
        terminal.catch_up()

    per_line = _python_calls(take) / LINES
    # About 1 at 80 columns and at 39 (its lines wrap); 3 and 6 while the
    # transcript walked every row in Python and wrote through a generator,
    # 61-65 while it measured each row's width a character at a time.
    assert per_line < 2
    # ... and the transcript holds the lines as written, wrapped rows joined.
    written = (tmp_path / "flood.log").read_text().splitlines()
    assert len(written) >= LINES - 3 * rows  # all but what is still on the screen
    assert written == [f"[{n:08d}]_compiling_module_{n % 997}.py_..._ok_{'.' * (n % 30)}"
                       for n in range(len(written))]


@pytest.mark.parametrize(("cols", "rows"), [(80, 24), (39, 12)])
def test_a_flood_s_rows_are_joined_where_they_are_cut_not_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cols: int, rows: int) -> None:
    """The transcript joins again only the rows a batch did not cut from
    its lines in bulk (the screen's last rows before it): the rest come
    joined from where the block cut them."""
    from choragos.terminal import transcript as tr

    walked = []
    join = tr.logical_lines
    monkeypatch.setattr(tr, "logical_lines",
                        lambda lines, width, carry="": walked.append(len(lines))
                        or join(lines, width, carry))
    terminal = Terminal(cols, rows, hold=3600.0)
    transcript = Transcript(tmp_path / "flood.log")
    terminal.on_scrolled = lambda lines: transcript.append_lines(lines, terminal.cols)
    data = _flood(LINES)
    for i in range(0, len(data), 4095):
        terminal.feed(data[i:i + 4095])
    terminal.catch_up()
    # 0.05 a line (the screen's rows at each batch); 1 and 2 when every
    # row scrolled off was joined again.
    assert sum(walked) / LINES < 0.1
    assert len((tmp_path / "flood.log").read_text().splitlines()) >= LINES - 3 * rows
