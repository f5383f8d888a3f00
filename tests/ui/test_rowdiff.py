"""Frames that write only the changed columns of a row leave the client's
terminal exactly as a frame writing whole rows would: same text, same
attributes, cell by cell (property test, through a real emulator)."""

from __future__ import annotations

import urwid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.terminal import Terminal
from choragos.ui.pane import RowBuilder
from choragos.ui.ptyscreen import PtyScreen
from choragos.ui.rowdiff import changed_span, runs_between

COLS, ROWS = 24, 3
_ATTRS = [None, urwid.AttrSpec("dark red", "default", 256),
          urwid.AttrSpec("light green,bold", "dark blue", 256),
          urwid.AttrSpec("h202", "default", 256)]
# ASCII, box drawing, wide (CJK), a combining acute accent, an accented
# letter; pairs that share their leading UTF-8 bytes (│ ─, 中 丰) or their
# trailing ones (─ 攀).
_CHARS = st.sampled_from([*"abc xyz-│─", "中", "丰", "攀", "文", "e\u0301", "é", "\u0301"])
_PIECE = st.tuples(st.lists(_CHARS, min_size=1, max_size=6).map("".join),
                   st.integers(0, len(_ATTRS) - 1))
_ROW = st.lists(_PIECE, min_size=0, max_size=8)


def _line(pieces: list[tuple[str, int]]):
    row = RowBuilder(COLS)
    for text, attr in pieces:
        row.add(text, _ATTRS[attr])
    return row.line()


def _edit(pieces, changes):
    """``pieces`` with some replaced: rows that share most of their text."""
    out = list(pieces)
    for index, piece in changes:
        if out:
            out[index % len(out)] = piece
        else:
            out.append(piece)
    return out


def _client_after(old_rows, new_rows, whole: bool):
    frames: list[bytes] = []
    screen = PtyScreen(COLS, ROWS)
    try:
        screen.set_sink(frames.append)
        screen.start()
        size = screen.get_cols_rows()
        blank = [(b"", []) for _ in range(ROWS)]  # differs from any row: written whole
        screen.drawn_whole(blank, None, size)
        assert screen.paint(old_rows, None, size)
        if whole:
            screen.drawn_whole(blank, None, size)
        assert screen.paint(new_rows, None, size)
    finally:
        screen.close()
    client = Terminal(COLS, ROWS, scrollback=0)
    client.feed(b"".join(frames))
    return client.display(), client.render_rows()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ROW, min_size=ROWS, max_size=ROWS),
       st.lists(st.lists(st.tuples(st.integers(0, 7), _PIECE), max_size=3),
                min_size=ROWS, max_size=ROWS))
def test_writing_the_changed_span_equals_writing_the_whole_row(rows, edits):
    old = [_line(pieces) for pieces in rows]
    new = [_line(_edit(pieces, change)) for pieces, change in zip(rows, edits, strict=True)]
    assert _client_after(old, new, whole=False) == _client_after(old, new, whole=True)


def test_an_echo_writes_the_typed_characters_not_the_row():
    old = _line([("agent>     ", 0), ("│", 1), ("neighbour", 2)])
    new = _line([("agent> Q001", 0), ("│", 1), ("neighbour", 2)])
    start, end, column = changed_span(old, new)
    assert (column, new[0][start:end]) == (7, b"Q001")
    assert runs_between(new[1], start, end) == [(None, 4)]


def test_a_changed_attribute_alone_is_a_change():
    old = _line([("same text", 0)])
    new = _line([("same ", 0), ("text", 1)])
    start, end, column = changed_span(old, new)
    assert (column, new[0][start:end]) == (5, b"text")


def test_equal_rows_give_an_empty_span():
    row = _line([("中文 and │ bars", 1)])
    start, end, _ = changed_span(row, (bytes(row[0]), list(row[1])))
    assert start == end


def test_a_span_never_splits_a_character_or_its_combining_mark():
    old = _line([("ab中cd", 0)])
    new = _line([("ab文cd", 0)])
    start, end, column = changed_span(old, new)
    assert new[0][start:end].decode() == "文" and column == 2
    old = _line([("xe\u0301y", 0)])
    new = _line([("xa\u0301y", 0)])
    start, end, column = changed_span(old, new)
    assert new[0][start:end].decode() == "a\u0301" and column == 1
