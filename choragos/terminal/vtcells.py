"""Cells, styles and rows for the pane emulator.

A cell is pyte's ``Char``.  Colours in ``fg``/``bg`` are ``"default"``, one
of the sixteen palette names as pyte spells them (``"red"``, ``"brown"`` for
yellow, ``"brightred"`` …) so a renderer can follow the user's theme, or
``"rrggbb"`` hex for 256-colour indexes 16–255 and for true colour.

A row is a pyte ``Line`` (column -> Char), a :class:`TextRow` (characters
that take one cell each, in default colours or in style spans, kept as text
until something needs its cells), or None for a blank row.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import chain, compress, groupby, repeat
from operator import itemgetter
from typing import NamedTuple

from choragos.terminal.pytelib import Char, StaticDefaultDict, wcwidth

Line = StaticDefaultDict
_new_tuple = tuple.__new__  # builds a TextRow without namedtuple's Python-level __new__
BLANK = Char(" ")


class TextRow(NamedTuple):
    """A row of characters that take one cell each (ASCII from a log block;
    box drawing, spinners and the like too when a TUI writes the row).

    ``styles`` are (first column, cell attributes) spans in column order, each
    reaching to the next; empty when the whole row is in default colours.
    A log line with colour escapes stays this small until it is shown.
    """

    text: str
    tail: str = ""  # what a narrowing cut off the right (see ``whole_text``)
    styles: tuple[tuple[int, Char], ...] = ()


class Run(NamedTuple):
    """Consecutive cells of one row sharing the same style."""

    text: str
    fg: str = "default"
    bg: str = "default"
    bold: bool = False
    italic: bool = False
    underline: bool = False
    strikethrough: bool = False
    reverse: bool = False
    blink: bool = False


Row = Line | TextRow | None


def _narrow_pattern() -> re.Pattern[str]:
    """Characters that always take exactly one cell, as one regex class.

    Checking a text run against this class in C lets the common case (ASCII,
    box drawing, spinners, punctuation) skip a width lookup per character.
    """
    spans: list[str] = []
    start = prev = -2
    # The widths from the function under pyte's cache and wcwidth's own: the
    # scan asks each character once, so the caches would save nothing, and
    # would keep the 4,320 answers this class now gives (0.8 MB for the
    # process's life); the calls through them took twice the scan's time.
    width = wcwidth
    while getattr(width, "__wrapped__", None) is not None:
        width = width.__wrapped__
    combining = unicodedata.combining
    points = chain(range(0x20, 0x7F), range(0xA0, 0x530), range(0x2010, 0x2C00), (0xFFFD,))
    for cp in points:
        char = chr(cp)
        if width(char) != 1 or combining(char):
            continue
        if cp != prev + 1:
            if start >= 0:
                spans.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
            start = cp
        prev = cp
    spans.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
    return re.compile(f"[{''.join(spans)}]+")


NARROW = _narrow_pattern()
NARROW_OR_ONE = re.compile(f"({NARROW.pattern})|(.)", re.S)
# Log lines whose every character takes one cell: narrow text, tabs, CRs,
# LFs, colours and erases to the end of the line (a test runner's ✓ and ✗).
# Possessive: a run that fails at its end must not be tried again split in
# every possible way (that takes exponential time).
NARROW_LOG = re.compile(f"(?:[{NARROW.pattern[1:-2]}\t\r\n]++|\x1b\\[[0-9;:]*+m|\x1b\\[0?K)*+")


def one_cell_each(text: str) -> bool:
    """Whether every printable character of ``text`` takes exactly one cell:
    ASCII at once, anything else in one C pass (for a text that is not
    ASCII, only log lines as ``NARROW_LOG`` has them pass)."""
    return text.isascii() or NARROW_LOG.fullmatch(text) is not None

_NAMES = ("black", "red", "green", "brown", "blue", "magenta", "cyan", "white")
_LEVELS = (0, 95, 135, 175, 215, 255)


def palette(index: int) -> str:
    """The colour for a 256-colour index: a name for 0–15, hex beyond."""
    if index < 8:
        return _NAMES[index]
    if index < 16:
        return "bright" + _NAMES[index - 8]
    if index < 232:
        index -= 16
        rgb = (_LEVELS[index // 36], _LEVELS[index // 6 % 6], _LEVELS[index % 6])
    else:
        rgb = (8 + 10 * (index - 232),) * 3
    return "{:02x}{:02x}{:02x}".format(*rgb)


_FLAGS = {1: ("bold", True), 22: ("bold", False), 3: ("italics", True),
          23: ("italics", False), 4: ("underscore", True), 21: ("underscore", True),
          24: ("underscore", False), 5: ("blink", True), 6: ("blink", True),
          25: ("blink", False), 7: ("reverse", True), 27: ("reverse", False),
          9: ("strikethrough", True), 29: ("strikethrough", False)}


def number(field: str) -> int:
    """A decimal parameter, capped at 9999 as pyte does; anything else reads as 0."""
    if not field.isdigit():
        return 0
    digits = field.lstrip("0")
    return 9999 if len(digits) > 4 else int(digits or "0")


def _sgr_params(raw: str) -> list[int]:
    """SGR parameters, with colon sub-parameters folded into the ``;`` form."""
    out: list[int] = []
    for field in raw.split(";"):
        if ":" not in field:
            out.append(number(field))
            continue
        sub = [number(p) for p in field.split(":")]
        if sub[0] in (38, 48, 58) and sub[1:2] == [2] and len(sub) >= 5:
            out.extend([sub[0], 2, *sub[-3:]])  # drops the optional colour-space id
        elif sub[0] == 4:
            out.append(24 if sub[1] == 0 else 4)  # 4:3 curly etc. still underline
        else:
            out.extend(sub)
    return out


def _extended_colour(params: list[int], i: int) -> tuple[str | None, int]:
    """Parse ``5;n`` or ``2;r;g;b`` at ``params[i]``; return (colour, next index)."""
    kind = params[i] if i < len(params) else None
    if kind == 5 and i + 1 < len(params):
        n = params[i + 1]
        return (palette(n) if n < 256 else None), i + 2
    if kind == 2 and i + 3 < len(params):
        r, g, b = params[i + 1:i + 4]
        ok = max(r, g, b) < 256
        return (f"{r:02x}{g:02x}{b:02x}" if ok else None), i + 4
    return None, i + 1


def apply_sgr(attrs: Char, raw: str) -> Char:
    """The cursor attributes after ``CSI raw m``."""
    params = _sgr_params(raw) if raw else [0]
    state = attrs._asdict()
    i = 0
    while i < len(params):
        p = params[i]
        i += 1
        if p == 0:
            state.update(BLANK._asdict())
        elif p in _FLAGS:
            name, on = _FLAGS[p]
            state[name] = on
        elif 30 <= p <= 37 or 90 <= p <= 97:
            state["fg"] = ("" if p < 90 else "bright") + _NAMES[p % 10]
        elif 40 <= p <= 47 or 100 <= p <= 107:
            state["bg"] = ("" if p < 100 else "bright") + _NAMES[p % 10]
        elif p in (39, 49):
            state["fg" if p == 39 else "bg"] = "default"
        elif p in (38, 48, 58):
            colour, i = _extended_colour(params, i)
            if colour is not None and p != 58:  # 58 is underline colour: parsed, not kept
                state["fg" if p == 38 else "bg"] = colour
    state["data"] = " "
    return Char(**state)


class Cells(dict):
    """Cells for one set of attributes, built once per character."""

    def __init__(self, attrs: Char) -> None:
        super().__init__()
        self.attrs = attrs

    def __missing__(self, char: str) -> Char:
        if len(self) > 4096:
            self.clear()  # whatever text arrives, the cache stays small
        cell = self[char] = self.attrs._replace(data=char)
        return cell


_PLAIN_CELLS = Cells(BLANK)


_STYLED_CELLS: dict[Char, Cells] = {}


def materialise(row: TextRow) -> Line:
    """The cells of a TextRow (one cell per character)."""
    line = Line(BLANK)
    if row.styles:
        _styled_cells(line, row.text, row.styles)
    else:
        line.update(zip(range(len(row.text)), map(_PLAIN_CELLS.__getitem__, row.text),
                        strict=True))
    if row.tail:
        line.tail, line.tail_at = row.tail, len(row.text)
    return line


def _styled_cells(line: Line, text: str, styles: tuple[tuple[int, Char], ...]) -> None:
    ends = [start for start, _ in styles[1:]] + [len(text)]
    for (start, attrs), end in zip(styles, ends, strict=True):
        cells = _STYLED_CELLS.get(attrs)
        if cells is None:
            if len(_STYLED_CELLS) > 256:
                _STYLED_CELLS.clear()
            cells = _STYLED_CELLS[attrs] = Cells(attrs)
        line.update(zip(range(start, end), map(cells.__getitem__, text[start:end]), strict=True))


_data = itemgetter(0)
_style = itemgetter(slice(1, None))


def as_row(row: Row | str) -> Row:
    """A row given as its plain text (a log line in bulk) as a row; any other row as is."""
    if row.__class__ is str:
        return TextRow(row) if row else None  # type: ignore[arg-type]
    return row  # type: ignore[return-value]


def as_rows(rows: list[Row | str]) -> list[Row]:
    """``as_row`` of each, in one pass (the rows a block of log lines leaves)."""
    return [(_new_tuple(TextRow, (row, "", ())) if row else None) if row.__class__ is str
            else row for row in rows]  # type: ignore[misc]


def history_lines(rows: list[Row | str], cols: int) -> list[str]:
    """What the history keeps of rows leaving the screen (see ``whole_text``),
    the plain rows of a flood of log lines without a call each."""
    return [row.rstrip() if row.__class__ is str  # type: ignore[union-attr]
            else row.text[:cols].rstrip() if row.__class__ is TextRow and not row.tail
            else whole_text(row, cols) for row in rows]


def ascii_lines(rows: list[str], width: int, carry: str) -> tuple[list[str], str]:
    """Rows of printable ASCII that left a ``width``-column screen, trailing
    blanks cut, joined back into the lines the program wrote, as the
    transcript's ``logical_lines`` joins any rows: a row exactly ``width``
    long continues on the next, unless it is a rule (one character
    throughout).  The rows a flood of log lines scrolls: only those exactly
    ``width`` long are looked at one by one, the rest are taken as they are
    in C (a row at a time in Python cost a narrow pane's flood a third of
    its drawing)."""
    out: list[str] = []
    start = 0  # the first row not given out yet
    for i in compress(range(len(rows)), map(width.__eq__, map(len, rows))):
        row = rows[i]
        if row.count(row[0]) == width:
            continue  # a rule fills the width by design: it ends its line
        if i > start:  # rows that end their lines, the first continuing ``carry``
            out.append(carry + rows[start])
            out += rows[start + 1:i]
            carry = ""
        carry += row
        start = i + 1
    if start < len(rows):
        out.append(carry + rows[start])
        out += rows[start + 1:]
        carry = ""
    return out, carry


def row_text(row: Row, cols: int) -> str:
    """The visible text of a row, trailing blanks removed."""
    if row is None:
        return ""
    if row.__class__ is TextRow:
        return row.text[:cols].rstrip()
    if not row:
        return ""
    width = min(max(row) + 1, cols)
    return "".join(map(_data, map(row.get, range(width), repeat(BLANK)))).rstrip()


def whole_text(row: Row, cols: int) -> str:
    """The text of a row as the program wrote it: the visible cells plus the
    ``tail`` a narrowing of the screen cut off (see ``VTScreen.resize``).
    What the history and the transcript keep."""
    if row.__class__ is TextRow and not row.tail:  # a log line: every scrolled row of a flood
        return row.text[:cols].rstrip()
    text = row_text(row, cols)
    tail = getattr(row, "tail", "") if row is not None else ""
    if not tail:
        return text
    at = len(row.text) if row.__class__ is TextRow else row.tail_at
    if len(text) > at:
        return text  # written past the cut since the pane widened again: that text wins
    return (text.ljust(at) + tail).rstrip()


def row_runs(row: Row, cols: int) -> tuple[Run, ...]:
    """A row as style runs; trailing default blanks are left out."""
    if row is None:
        return ()
    if row.__class__ is TextRow:
        if row.styles:
            return _styled_runs(row, cols)
        # Only blanks go, as for cells: a no-break space (DEC graphics' "_")
        # is a character drawn in the row.
        text = row.text[:cols].rstrip(" ")
        return (Run(text),) if text else ()
    cells = list(map(row.get, range(cols), repeat(BLANK)))
    while cells and cells[-1] == BLANK:
        cells.pop()
    return tuple(Run("".join(map(_data, group)), *style)
                 for style, group in groupby(cells, _style))


def _styled_runs(row: TextRow, cols: int) -> tuple[Run, ...]:
    """The runs of a TextRow with styles, without making its cells: what
    ``row_runs`` gives for the same row as cells."""
    text = row.text[:cols]
    styles = row.styles
    parts: list[tuple[str, Char]] = []
    if styles[0][0] > 0:  # cells before the first span are blank
        styles = ((0, BLANK), *styles)
    for i, (start, attrs) in enumerate(styles):
        end = styles[i + 1][0] if i + 1 < len(styles) else len(text)
        piece = text[start:end]
        if not piece:
            continue
        if parts and parts[-1][1][1:] == attrs[1:]:
            parts[-1] = (parts[-1][0] + piece, parts[-1][1])
        else:
            parts.append((piece, attrs))
    while parts and parts[-1][1] == BLANK:
        piece = parts[-1][0].rstrip(" ")
        if piece:
            parts[-1] = (piece, BLANK)
            break
        parts.pop()
    return tuple(Run(piece, *attrs[1:]) for piece, attrs in parts)


def row_blank(row: Row) -> bool:
    """Whether a row shows nothing at all."""
    if row is None:
        return True
    if row.__class__ is TextRow:
        if row.styles:
            return row_blank(materialise(row))
        return not row.text.strip(" ")
    return all(cell == BLANK for cell in row.values())


@lru_cache(maxsize=256)
def erased(bg: str) -> Char:
    """What erasing leaves behind: a blank in the given background colour."""
    return BLANK._replace(bg=bg)
