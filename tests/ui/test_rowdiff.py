"""Frames that write only the changed columns of a row leave the client's
terminal exactly as a frame writing whole rows would: same text, same
attributes, cell by cell (property test, through a real emulator)."""

from __future__ import annotations

import urwid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.terminal.emulator import Terminal
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


def _screen() -> tuple[PtyScreen, list[bytes], tuple[int, int]]:
    """A started screen whose frames go to the list, its last frame taken to
    be blank rows (unlike any row: the first paint writes every row whole)."""
    frames: list[bytes] = []
    screen = PtyScreen(COLS, ROWS)
    screen.set_sink(frames.append)
    screen.start()
    size = screen.get_cols_rows()
    screen.drawn_whole([(b"", []) for _ in range(ROWS)], None, size)
    return screen, frames, size


def _client_after(old_rows, new_rows, whole: bool):
    screen, frames, size = _screen()
    blank = [(b"", []) for _ in range(ROWS)]
    try:
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


def _painted(frames: list[tuple[list, tuple[int, int] | None]]) -> list[bytes]:
    """What each of ``frames`` (rows, cursor) sent through one screen."""
    screen, sent, size = _screen()
    out = []
    for rows, cursor in frames:
        before = len(sent)
        assert screen.paint(rows, cursor, size)
        out.append(b"".join(sent[before:]))
    screen.close()
    return out


_CURSOR = st.one_of(st.none(), st.tuples(st.integers(0, COLS - 1), st.integers(0, ROWS - 1)),
                    st.just("where the next change starts"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ROW, min_size=ROWS, max_size=ROWS),
       st.lists(st.tuples(st.lists(st.tuples(st.integers(0, ROWS - 1), st.integers(0, 7), _PIECE),
                                   max_size=3), _CURSOR), min_size=1, max_size=6))
def test_frames_that_trust_the_cursor_and_pen_they_left_show_every_frame(rows, steps):
    """A frame leaves out the cursor move and the attributes its last one
    left in place (as when typing at the cursor); the client's terminal must
    still show every frame exactly, cursor included."""
    pieces = list(rows)
    frames = []
    for changes, _ in steps:
        for y, index, piece in changes:
            pieces[y] = _edit(pieces[y], [(index, piece)])
        frames.append([_line(p) for p in pieces])
    cursors = []
    for i, (_, cursor) in enumerate(steps):
        if cursor == "where the next change starts":
            cursor = _next_change(frames[i], frames[i + 1] if i + 1 < len(frames) else None)
        cursors.append(cursor)
    sent = _painted([([_line(p) for p in rows], None), *zip(frames, cursors, strict=True)])
    client = Terminal(COLS, ROWS, scrollback=0)
    client.feed(sent[0])
    for frame, cursor, data in zip(frames, cursors, sent[1:], strict=True):
        client.feed(data)
        whole = Terminal(COLS, ROWS, scrollback=0)
        whole.feed(b"".join(_painted([(frame, cursor)])))
        assert (client.display(), client.render_rows()) == (whole.display(), whole.render_rows())
        if cursor is not None:
            assert client.cursor == cursor


def _next_change(rows, following) -> tuple[int, int] | None:
    """The column and row where ``following`` first differs from ``rows``."""
    if following is None:
        return None
    for y, (old, new) in enumerate(zip(rows, following, strict=True)):
        start, end, column = changed_span(old, new)
        if start < end:
            return (column, y) if column < COLS else None
    return None


def test_an_echo_typed_at_the_cursor_is_sent_as_its_text_alone():
    old = _line([("agent>     ", 0), ("│", 1), ("neighbour", 2)])
    new = _line([("agent> Q001", 0), ("│", 1), ("neighbour", 2)])
    blank = _line([])
    sent = _painted([([old, blank, blank], (7, 0)), ([new, blank, blank], (11, 0))])
    assert sent[1] == b"Q001"
    # The cursor elsewhere: moved there and back, hidden meanwhile.
    sent = _painted([([old, blank, blank], (0, 2)), ([new, blank, blank], (11, 0))])
    assert sent[1] == b"\x1b[?25l\x1b[1;8HQ001\x1b[?25h"
    # The end of a line rubbed out: the blanks to the end of the row are
    # erased, which leaves the cursor where the erase began.
    full, cut = _line([("x" * COLS, 0)]), _line([("x" * 10, 0)])
    sent = _painted([([full, blank, blank], (10, 0)), ([cut, blank, blank], (10, 0))])
    assert sent[1] == b"\x1b[K"


def test_after_anything_else_wrote_the_next_frame_sets_its_attributes_again():
    """urwid draws whole frames (dialogs) through the same screen, leaving
    its own attributes in force: the frame after must not trust ours."""
    red = _line([("red text", 1)])
    redder = _line([("red text!", 1)])
    blank = _line([])
    screen, sent, size = _screen()
    assert screen.paint([red, blank, blank], (8, 0), size)
    screen.write("\x1b[0m\x1b[3;1Hdialog")  # another writer, its pen reset
    screen.flush()
    screen.drawn_whole([red, blank, blank], (8, 0), size)
    assert screen.paint([redder, blank, blank], (9, 0), size)
    screen.close()
    client = Terminal(COLS, ROWS, scrollback=0)
    client.feed(b"".join(sent))
    assert [run.fg for run in client.render_rows()[0] if "!" in run.text] == ["red"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40), st.binary(max_size=40), st.binary(max_size=6))
def test_shared_ends_are_counted_to_the_byte(head: bytes, tail: bytes, shared: bytes) -> None:
    from choragos.ui.rowdiff import _common_prefix, _common_suffix

    def naive(a: bytes, b: bytes) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n
    for a, b in ((shared + head, shared + tail), (head + shared, tail + shared), (head, tail)):
        assert _common_prefix(a, b) == naive(a, b)
        assert _common_suffix(a, b) == naive(a[::-1], b[::-1])


_RUN_TEXT = st.text(st.sampled_from("ab z~é─漢\u0301\x01"), max_size=14)
_STYLE = st.fixed_dictionaries({"fg": st.sampled_from(["default", "red", "d7875f"]),
                                "bold": st.booleans(), "reverse": st.booleans()})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_RUN_TEXT, _STYLE), max_size=3), st.integers(0, 16),
       st.sampled_from([1, 16, 256]))
def test_a_pane_row_is_built_as_the_row_builder_builds_it(runs, width: int, colors: int) -> None:
    """A prompt's one run of plain text is padded without a RowBuilder; any
    row comes out as the builder makes it."""
    from choragos.terminal.vtcells import Run
    from choragos.ui.pane import _live_row
    from choragos.ui.theme import attr_of

    styled = tuple(Run(text, **style) for text, style in runs)
    row = RowBuilder(width)
    for run in styled:
        row.add(run.text, attr_of(run, colors))
    want = row.line() if styled else (b" " * width, [(None, width)] if width else [])
    assert _live_row(styled, width, colors) == want


def _added_char_by_char(width: int, pieces: list[tuple[str, object]]):
    """A row built as RowBuilder builds one, every width looked up."""
    from urwid import str_util
    parts, attrs, col = [], [], 0
    # The pieces, then the fill to the width (twice: after a wide character
    # that did not fit, the gap it leaves).
    for text, attr in [*pieces, (" " * width, None), (" ", None)]:
        room = width - col
        if room <= 0 or not text:
            continue
        text = "".join(c if c.isprintable() else " " for c in text)
        pos, used = str_util.calc_text_pos(text, 0, len(text), room)
        data = text[:pos].encode()
        if not data:
            continue
        parts.append(data)
        col += used
        if attrs and attrs[-1][0] == attr:
            attrs[-1] = (attr, attrs[-1][1] + len(data))
        else:
            attrs.append((attr, len(data)))
    return b"".join(parts), attrs


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(st.sampled_from("ab ─│╭╮⏺·é中\u0301\u00a0\x07"), max_size=12),
                          st.integers(0, len(_ATTRS) - 1)), max_size=4),
       st.integers(0, 30))
def test_box_drawing_is_added_as_one_cell_a_character(pieces, width: int) -> None:
    """Text of one-cell characters (an agent's box drawing) is added without
    a width looked up per character, and comes out the same."""
    row = RowBuilder(width)
    for text, attr in pieces:
        row.add(text, _ATTRS[attr])
    assert row.line() == _added_char_by_char(width, [(text, _ATTRS[a]) for text, a in pieces])
