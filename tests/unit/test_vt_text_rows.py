"""Rows an agent's TUI redraws stay text, and end up exactly as cell by cell.

An agent CLI erases a row and writes it again left to right, colour escapes
between the pieces; the screen keeps such a row as text with style spans
(``choragos.terminal.vtrows``) instead of cells.  Whatever the stream -- cursor moves,
erases, colours, wide and combining characters, insert mode, line drawing --
what a reader sees must be the same as with the fast paths off.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.terminal.emulator import Terminal
from choragos.terminal.vtcells import TextRow, materialise, row_runs
from choragos.terminal.vtscreen import VTScreen
from tests.unit.test_terminal import _observe, fed_in_pieces

_SGR = st.sampled_from(["\x1b[32m", "\x1b[0m", "\x1b[m", "\x1b[1;31m", "\x1b[39m", "\x1b[2m",
                        "\x1b[22m", "\x1b[38;5;244m", "\x1b[38;2;215;119;87m", "\x1b[48;5;17m",
                        "\x1b[49m", "\x1b[7m", "\x1b[38:2::1:2:3m", "\x1b[1m\x1b[4m"])
_MOVES = st.sampled_from(["\x1b[2K", "\x1b[1A", "\x1b[G", "\x1b[5G", "\x1b[K", "\x1b[1K",
                          "\x1b[0K", "\x1b[3X", "\x1b[H", "\x1b[2;4H", "\x1b[J", "\x1b[2J",
                          "\x1b[B", "\x1b[3C", "\x1b[2D", "\x1b[P", "\x1b[2@", "\x1b[L",
                          "\x1b[M", "\x1b[?2026h", "\x1b[?2026l", "\x1b[?25l", "\x1b[?25h",
                          "\x1b[4h", "\x1b[4l", "\x1b[?7l", "\x1b[?7h", "\x1b(0", "\x1b(B",
                          "\x1b[?1049h", "\x1b[?1049l", "\x1b[2b", "\x1b7", "\x1b8",
                          "\r", "\n", "\r\n", "\x08", "\t"])
_TEXT = st.text(st.sampled_from("abc xyz─│╭╮⏺⎿·✻…→é"), min_size=1, max_size=30)
_ODD = st.sampled_from(["漢", "e\u0301", "👍", "\u200d", "q"])
# A row as a TUI draws it: start it afresh, then pieces of text and colour,
# sometimes skipping columns or erasing the rest.
_STARTS = st.sampled_from(["\x1b[2K\x1b[G", "\r\n", "\x1b[1A\x1b[2K", "\r", "\n", ""])
_SKIPS = st.sampled_from(["\x1b[3C", "\x1b[9G", "\t", "\x1b[K", "\x1b[2D", " "])
_PIECES = st.lists(st.one_of(_TEXT, _TEXT, _SGR, _SGR, _SKIPS), min_size=1, max_size=10)
_ROW = st.tuples(_STARTS, _PIECES).map(lambda row: row[0] + "".join(row[1]))
_TUI = st.lists(st.one_of(_ROW, _ROW, _ROW, _MOVES, _ODD), max_size=30).map("".join)


def _cells_agree(t: Terminal) -> None:
    """Every row kept as text renders as its cells would."""
    screen = t._screen
    for y in range(screen.lines):
        row = screen.row(y)
        if row.__class__ is TextRow:
            assert row_runs(row, screen.columns) == row_runs(materialise(row), screen.columns)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TUI, st.lists(st.integers(0, 10**6), max_size=5), st.integers(3, 40), st.integers(1, 8))
def test_a_redraw_stream_ends_the_same_with_rows_kept_as_text(stream: str, cuts: list[int],
                                                             cols: int, rows: int) -> None:
    data = stream.encode()
    outcomes = []
    for fast in (True, False):
        t, scrolled = fed_in_pieces(data, cuts, cols, rows, fast)
        _cells_agree(t)
        drawn = _observe(t, scrolled)
        t.resize(max(cols - 3, 1), rows + 1)  # rows kept as text, cut and grown
        t.resize(cols + 2, rows)
        t.feed(b"tail\x1b[31mred\x1b[Hafter\x1b[2;3H\x1b[1Kz\x1b[L\x1b[3;1Hx\x1b[K")
        _cells_agree(t)
        outcomes.append((drawn, _observe(t, scrolled), t.whole_display()))
    assert outcomes[0] == outcomes[1]


def test_an_ink_style_redraw_keeps_its_rows_as_text_and_shows_the_same() -> None:
    frame = ("\x1b[2K\x1b[1A" * 2 + "\x1b[2K\x1b[G"
             + "\x1b[38;2;215;119;87m✻\x1b[39m \x1b[1mThinking…\x1b[22m \x1b[2m(3s)\x1b[22m\r\n"
             + "\x1b[38;5;244m╭" + "─" * 18 + "╮\x1b[39m\r\n"
             + "  \x1b[38;5;135m⏵⏵ accept edits on\x1b[39m")
    data = ("\r\n" * 5 + frame * 20).encode()
    results = []
    for fast in (True, False):
        t = Terminal(20, 6, fast_path=fast)
        t.feed(data)
        kinds = {type(t._screen.row(y)).__name__ for y in range(6)}
        results.append((t.display(), t.render_rows(), t.cursor))
        if fast:
            assert kinds <= {"TextRow", "NoneType"}  # no row turned into cells
    assert results[0] == results[1]
    runs = results[0][1][3]
    assert runs[0].text == "✻" and runs[0].fg == "d77757"
    assert any(run.text == "Thinking…" and run.bold for run in runs)


@pytest.mark.parametrize("stream", [
    "\x1b[31mab\x1b[0m cd\x1b[4G\x1b[Kz",       # erase inside a text row, then write on
    "ab\x1b[10Gcd\x1b[3Gx",                       # a gap, then a write into the middle
    "\x1b[44m  \x1b[0mx\x1b[1K",                  # coloured blanks, erase to the start
    "abc\x1b[2D\x1b[1mZ\x1b[0m\x1b[K",            # overwrite inside, then erase the rest
    "\x1b[31mab\x1b[0m   \x1b[32m \x1b[0m  ",       # trailing blanks: only default ones go
    "\x1b[31mab\x1b[0m\x1b[6Gc\x1b[1;4H\x1b[K",     # a gap in default colours, then cut
])
def test_writes_into_a_text_row_agree_with_cells(stream: str) -> None:
    results = []
    for fast in (True, False):
        t = Terminal(12, 2, fast_path=fast)
        t.feed(stream.encode())
        results.append((t.display(), t.render_rows(), t.cursor))
    assert results[0] == results[1]


def test_a_run_that_would_wrap_is_drawn_piece_by_piece() -> None:
    screen = VTScreen(8, 2)
    screen.cursor.x = 5
    assert not screen.draw_run("ab\x1b[31mcd")
    screen.cursor.x = 0
    assert screen.draw_run("ab\x1b[31mcd")
    assert screen.cursor.x == 4 and screen.cursor.attrs.fg == "red"
    assert screen.row(0).__class__ is TextRow


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_ROW, _MOVES, _SGR, _TEXT), max_size=40), st.integers(3, 40),
       st.integers(1, 8))
def test_runs_of_sequences_act_as_the_same_sequences_one_by_one(pieces: list[str], cols: int,
                                                                rows: int) -> None:
    """Sequences in a row (erase, move up, ...) and text with colours between
    its pieces are each taken as one token; fed one piece per feed, every
    sequence is a token of its own."""
    whole = Terminal(cols, rows)
    whole.feed("".join(pieces).encode())
    one_by_one = Terminal(cols, rows)
    for piece in pieces:
        one_by_one.feed(piece.encode())
    assert _observe(whole, []) == _observe(one_by_one, [])
    assert whole.whole_display() == one_by_one.whole_display()


def test_a_row_rewritten_in_place_stays_text_and_agrees() -> None:
    # A progress bar redrawn after a CR, and a status row rewritten from its
    # first column without an erase: written over, not appended to.
    frames = "".join(f"\r\x1b[32m{'#' * (i % 11)}\x1b[0m{' ' * (10 - i % 11)} {i:3d}%"
                     f"\x1b[1;1H\x1b[2m{i % 7}\x1b[22m{'.' * (i % 5)}\x1b[3;1H"
                     for i in range(60))
    results = []
    for fast in (True, False):
        t = Terminal(20, 3, fast_path=fast)
        t.feed(("\r\n\r\n" + frames).encode())
        results.append((t.display(), t.render_rows(), t.cursor))
        if fast:
            assert t._screen.row(0).__class__ is TextRow
            assert t._screen.row(2).__class__ is TextRow
    assert results[0] == results[1]
    assert results[0][0][2] == "####        59%"


@pytest.mark.parametrize("stream", [
    "\x1b(0\r\n\r\n\r\n_\r\n",        # DEC graphics draws "_" as a no-break space
    "\r\nx\u00a0\u00a0\x1b[31m\u202f",  # other non-blank spaces, plain and coloured
])
def test_spaces_that_are_not_blanks_are_kept_in_text_rows(stream: str) -> None:
    results = []
    for fast in (True, False):
        t = Terminal(3, 4, fast_path=fast)
        t.feed(stream.encode())
        results.append((t.render_rows(), t.display()))
        t.resize(3, 2)  # blank rows below the cursor go first
        results.append((t.render_rows(), t.history()))
    assert results[:2] == results[2:]


def _token_loop_only(t: Terminal) -> None:
    """Send every feed of ``t`` through the parser's token loop: text the
    loop-free path would draw gets a NUL, a control the loop ignores."""
    parser = t._parser
    feed = parser.feed

    def looped(text: str, blocks: bool = True, hold: bool = False) -> None:
        if text.isprintable() and text and not (parser._pending or parser.held
                                                 or parser._unchecked):
            text += "\x00"
        feed(text, blocks, hold)
    parser.feed = looped


_TYPED = st.text(st.sampled_from("ab z~é─漢👍\u0301\u00a0"), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_TYPED, _TYPED, _TYPED, _MOVES, _SGR, _ODD), max_size=40),
       st.integers(3, 20), st.integers(1, 6), st.booleans())
def test_plain_text_drawn_without_the_token_loop_is_drawn_the_same(
        pieces: list[str], cols: int, rows: int, insert: bool) -> None:
    """Typed keys come back as plain text, one feed each: drawn straight, as
    the token loop would draw them (wide, combining and no-break characters,
    insert mode, line drawing, a sequence cut between feeds included)."""
    outcomes = []
    for straight in (True, False):
        scrolled: list[str] = []
        t = Terminal(cols, rows, on_scrolled=scrolled.extend)
        if not straight:
            _token_loop_only(t)
        if insert:
            t.feed(b"\x1b[4h")
        for piece in pieces:
            t.feed(piece.encode())
        outcomes.append(_observe(t, scrolled))
    assert outcomes[0] == outcomes[1]
