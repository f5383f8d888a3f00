"""A pyte screen tuned for agent CLIs: bulk hot paths and the modes pyte lacks.

pyte's ``Screen`` supplies the cell model (rows of ``Char`` keyed by column)
and the less frequent operations.  :class:`VTScreen` replaces the hot ones
(drawing text, scrolling, erasing, SGR) with bulk versions, adds the
alternate screen and the private modes agent CLIs use, and lets a row hold
plain text (:class:`TextRow`) until something needs its cells, so a flood of
log lines never turns into per-cell objects.

Colours in ``Char.fg``/``Char.bg``: ``"default"``, one of the sixteen names
(``"red"``, ``"brown"`` for yellow as pyte spells it, ``"brightred"`` …) for
the themable palette entries, or ``"rrggbb"`` hex for 256-colour indexes
16–255 and true colour.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Callable
from itertools import chain, groupby, repeat
from operator import itemgetter
from typing import Any, NamedTuple

import pyte
from pyte import charsets
from pyte import modes as mo
from pyte.screens import Char, Margins, StaticDefaultDict, wcwidth

Line = StaticDefaultDict
BLANK = Char(" ")
_ALT_MODES = frozenset({47, 1047, 1049})
_MOUSE_MODES = (9, 1000, 1002, 1003)


class TextRow(NamedTuple):
    """A row drawn as plain ASCII in default colours: one character per cell."""

    text: str


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
    points = chain(range(0x20, 0x7F), range(0xA0, 0x530), range(0x2010, 0x2C00), (0xFFFD,))
    for cp in points:
        char = chr(cp)
        if wcwidth(char) != 1 or unicodedata.combining(char):
            continue
        if cp != prev + 1:
            if start >= 0:
                spans.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
            start = cp
        prev = cp
    spans.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
    return re.compile(f"[{''.join(spans)}]+")


_NARROW = _narrow_pattern()
_NARROW_OR_ONE = re.compile(f"({_NARROW.pattern})|(.)", re.S)

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


class _Chars(dict):
    """Cells for one set of attributes, built once per character."""

    def __init__(self, attrs: Char) -> None:
        super().__init__()
        self.attrs = attrs

    def __missing__(self, char: str) -> Char:
        cell = self[char] = self.attrs._replace(data=char)
        return cell


class _Rows(dict):
    """The screen buffer: row -> Line, or TextRow until its cells are needed.

    Every mutation in pyte goes through ``buffer[y]``, so materialising there
    keeps TextRow invisible to pyte's methods.
    """

    def __missing__(self, y: int) -> Line:
        line = Line(BLANK)
        dict.__setitem__(self, y, line)
        return line

    def __getitem__(self, y: int) -> Line:
        row = dict.get(self, y)
        if row is None:
            return self.__missing__(y)
        if row.__class__ is TextRow:
            row = materialise(row)
            dict.__setitem__(self, y, row)
        return row


_PLAIN_CELLS = _Chars(BLANK)


def materialise(row: TextRow) -> Line:
    """The cells of a TextRow (default colours, one cell per character)."""
    line = Line(BLANK)
    line.update(zip(range(len(row.text)), map(_PLAIN_CELLS.__getitem__, row.text), strict=True))
    return line


_data = itemgetter(0)
_style = itemgetter(slice(1, None))


def row_text(row: Row, cols: int) -> str:
    """The visible text of a row, trailing blanks removed."""
    if row is None:
        return ""
    if row.__class__ is TextRow:
        return row.text.rstrip()
    if not row:
        return ""
    width = min(max(row) + 1, cols)
    return "".join(map(_data, map(row.get, range(width), repeat(BLANK)))).rstrip()


def row_runs(row: Row, cols: int) -> tuple[Run, ...]:
    """A row as style runs; trailing default blanks are left out."""
    if row is None:
        return ()
    if row.__class__ is TextRow:
        text = row.text.rstrip()
        return (Run(text),) if text else ()
    cells = list(map(row.get, range(cols), repeat(BLANK)))
    while cells and cells[-1] == BLANK:
        cells.pop()
    return tuple(Run("".join(map(_data, group)), *style)
                 for style, group in groupby(cells, _style))


def _row_blank(row: Row) -> bool:
    if row is None:
        return True
    if row.__class__ is TextRow:
        return not row.text.strip()
    return all(cell == BLANK for cell in row.values())


def _ignore(*_args: Any) -> None:
    """Default hook: nobody listens."""


class VTScreen(pyte.Screen):
    """pyte's screen with faster hot paths, the alternate screen and more modes.

    ``on_scroll(row)`` receives each row leaving the top of the main screen;
    ``on_clear_history()`` is called for ``CSI 3 J``.
    """

    default_char = BLANK  # reverse video is a display flag here, never baked into cells

    def __init__(self, columns: int, lines: int) -> None:
        self.on_scroll: Callable[[Row], None] = _ignore
        self.on_scroll_rows: Callable[[list[Row]], None] = self._scroll_each
        self.on_clear_history: Callable[[], None] = _ignore
        self.private_modes: set[int] = set()
        self.modes_serial = 0
        self.alternate = False
        self.last_char = ""
        self._other = _Rows()
        self._alt_saved: tuple[Any, ...] | None = None
        self._chars: _Chars = _Chars(BLANK)
        self._char_sets: dict[Char, _Chars] = {}
        self._sgr_cache: dict[tuple[Char, str], Char] = {}
        self._wide_seen = False
        self._scratch: VTScreen | None = None
        super().__init__(columns, lines)

    def _scroll_each(self, rows: list[Row]) -> None:
        for row in rows:
            self.on_scroll(row)

    # -- state -------------------------------------------------------------

    def reset(self) -> None:
        super().reset()
        self.buffer = _Rows()
        self._other = _Rows()
        self.alternate = False
        self._alt_saved = None
        self.private_modes.clear()
        self.modes_serial += 1
        self.last_char = ""

    def set_private(self, modes: tuple[int, ...], on: bool) -> None:
        """``CSI ? Pm h`` / ``l``."""
        for mode in modes:
            self._set_private(mode, on)
        self.modes_serial += 1

    def _set_private(self, mode: int, on: bool) -> None:
        if mode in _ALT_MODES:
            self.set_alternate(on, mode)
        elif mode in (6, 7, 25):
            flag = mode << 5
            (self.mode.add if on else self.mode.discard)(flag)
            if mode == 25:
                self.cursor.hidden = not on
            elif mode == 6:
                self.cursor_position()
        elif mode in _MOUSE_MODES:
            self.private_modes.difference_update(_MOUSE_MODES)  # one tracking mode at a time
        if on:
            self.private_modes.add(mode)
        else:
            self.private_modes.discard(mode)

    def set_ansi(self, modes: tuple[int, ...], on: bool) -> None:
        """``CSI Pm h`` / ``l``: only insert (4) and new-line (20) mean anything."""
        for mode in modes:
            if mode in (mo.IRM, mo.LNM):
                (self.mode.add if on else self.mode.discard)(mode)
        self.modes_serial += 1

    def private_mode(self, mode: int) -> bool | None:
        """Whether a private mode is set; None when this screen does not know it."""
        if mode in (6, 7, 25):
            return (mode << 5) in self.mode
        if mode in _ALT_MODES:
            return self.alternate
        if mode in _KNOWN_PRIVATE:
            return mode in self.private_modes
        return None

    # -- alternate screen ----------------------------------------------------

    def set_alternate(self, on: bool, mode: int) -> None:
        """Enter or leave the alternate screen (modes 47, 1047, 1049)."""
        if on == self.alternate:
            if on and mode == 1049:
                self._clear_rows(self.buffer)
            return
        if on and mode == 1049:
            self._alt_saved = (copy.copy(self.cursor), self.g0_charset, self.g1_charset,
                               self.charset)
        if not on and mode == 1047:
            self._clear_rows(self.buffer)
        self.buffer, self._other = self._other, self.buffer
        self.alternate = on
        if on and mode == 1049:
            self._clear_rows(self.buffer)
        if not on and mode == 1049 and self._alt_saved is not None:
            self.cursor, self.g0_charset, self.g1_charset, self.charset = self._alt_saved
            self._alt_saved = None
            self.ensure_hbounds()
            self.ensure_vbounds()
        self.dirty.update(range(self.lines))

    def _clear_rows(self, rows: _Rows) -> None:
        rows.clear()
        self.dirty.update(range(self.lines))

    def main_rows(self) -> list[Row]:
        """The rows of the main screen, whichever screen is showing."""
        rows = self._other if self.alternate else self.buffer
        return [dict.get(rows, y) for y in range(self.lines)]

    def row(self, y: int) -> Row:
        """The raw row at ``y`` of the visible screen (None when blank)."""
        return dict.get(self.buffer, y)

    # -- drawing -------------------------------------------------------------

    def draw(self, data: str) -> None:
        if self.charset or self.g0_charset is not charsets.LAT1_MAP:
            data = data.translate(self.g1_charset if self.charset else self.g0_charset)
        if mo.IRM not in self.mode and (data.isascii() or _NARROW.fullmatch(data)):
            self._put_narrow(data)
        else:
            self._put_mixed(data)
        self.last_char = data[-1:]

    def _cells(self) -> _Chars:
        attrs = self.cursor.attrs
        if self._chars.attrs is not attrs:
            chars = self._char_sets.get(attrs)
            if chars is None:
                if len(self._char_sets) > 64:
                    self._char_sets.clear()
                chars = self._char_sets[attrs] = _Chars(attrs)
            self._chars = chars
        return self._chars

    def _put_narrow(self, text: str) -> None:
        """Draw characters that each take one cell, a row-slice at a time."""
        cur = self.cursor
        x = cur.x
        end = x + len(text)
        if end <= self.columns and not self._wide_seen:
            # The usual case, kept short: it fits on the row and no wide
            # character can be cut.
            row = dict.get(self.buffer, cur.y)
            line = row if row.__class__ is Line else self.buffer[cur.y]
            cells = self._chars if self._chars.attrs is cur.attrs else self._cells()
            line.update(zip(range(x, end), map(cells.__getitem__, text), strict=True))
            cur.x = end
            self.dirty.add(cur.y)
            return
        self._put_narrow_wrapping(text)

    def _put_narrow_wrapping(self, text: str) -> None:
        cur = self.cursor
        cols = self.columns
        cells = self._cells()
        while text:
            if cur.x >= cols:
                if mo.DECAWM not in self.mode:
                    self._overwrite_last(cells[text[-1]])
                    return
                self.dirty.add(cur.y)
                cur.x = 0
                self.linefeed()
            x = cur.x
            part, text = text[:cols - x], text[cols - x:]
            end = x + len(part)
            line = self.buffer[cur.y]
            if self._wide_seen:
                self._split_wide(line, x, end)
            line.update(zip(range(x, end), map(cells.__getitem__, part), strict=True))
            cur.x = end
            self.dirty.add(cur.y)

    def _overwrite_last(self, cell: Char) -> None:
        # Without auto-wrap every further character lands on the last column.
        line = self.buffer[self.cursor.y]
        if self._wide_seen:
            self._split_wide(line, self.columns - 1, self.columns)
        line[self.columns - 1] = cell
        self.cursor.x = self.columns
        self.dirty.add(self.cursor.y)

    def _put_mixed(self, text: str) -> None:
        insert = mo.IRM in self.mode
        for match in _NARROW_OR_ONE.finditer(text):
            if match.lastindex == 1 and not insert:
                self._put_narrow(match.group())
            else:
                for char in match.group():
                    self._put_char(char)

    def _put_char(self, char: str) -> None:
        """One character of any width, following pyte's rules except where noted."""
        width = wcwidth(char)
        if width <= 0:
            if width == 0:
                self._combine(char)
            return  # unprintable: skipped (pyte would drop the rest of the run)
        cur = self.cursor
        cols = self.columns
        if cur.x + width > cols:
            if mo.DECAWM in self.mode:
                # A wide character that does not fit wraps whole, as in xterm.
                self.dirty.add(cur.y)
                cur.x = 0
                self.linefeed()
            else:
                cur.x = max(cols - width, 0)
        if mo.IRM in self.mode:
            self.insert_characters(width)
        line = self.buffer[cur.y]
        x = cur.x
        if self._wide_seen or width == 2:
            self._wide_seen = True
            self._split_wide(line, x, x + width)
        cells = self._cells()
        line[x] = cells[char]
        if width == 2 and x + 1 < cols:
            line[x + 1] = cells[""]  # the right half of a wide character
        cur.x = min(x + width, cols)
        self.dirty.add(cur.y)

    def _split_wide(self, line: Line, start: int, end: int) -> None:
        """Blank the surviving half of any wide character cut by [start, end)."""
        get = line.get
        if start > 0:
            cell = get(start)
            if cell is not None and cell.data == "":
                left = get(start - 1)
                if left is not None:
                    line[start - 1] = left._replace(data=" ")
        cell = get(end)
        if cell is not None and cell.data == "":
            line[end] = cell._replace(data=" ")

    def _combine(self, char: str) -> None:
        """Attach a zero-width character (combining mark, ZWJ, VS16) to the last cell.

        At column 0 there is no cell before it on this row and it is dropped;
        pyte would reach into the row above, which a CR or LF has left behind.
        """
        cur = self.cursor
        if cur.x == 0:
            return
        y, x = cur.y, min(cur.x, self.columns) - 1
        line = self.buffer[y]
        cell = line[x]
        if cell.data == "" and x > 0:
            x -= 1
            cell = line[x]
        line[x] = cell._replace(data=unicodedata.normalize("NFC", cell.data + char))
        self.dirty.add(y)

    def repeat(self, count: int | None = None) -> None:
        """``CSI n b`` (REP): draw the last printed character again."""
        if self.last_char:
            self.draw(self.last_char * min(count or 1, self.columns * self.lines))

    # -- scrolling -----------------------------------------------------------

    def index(self) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        y = self.cursor.y
        if y != bottom:
            # Below the region the cursor still moves down (pyte would pull it up).
            self.cursor.y = min(y + 1, bottom if y < bottom else self.lines - 1)
            return
        if top == 0 and not self.alternate:
            self.on_scroll(dict.get(self.buffer, 0))
        self._shift_up(top, bottom, 1)

    def _shift_up(self, top: int, bottom: int, count: int) -> None:
        buf = self.buffer
        get, put, pop = dict.get, dict.__setitem__, dict.pop
        for y in range(top, bottom + 1 - count):
            row = get(buf, y + count)
            if row is None:
                pop(buf, y, None)
            else:
                put(buf, y, row)
        for y in range(max(top, bottom + 1 - count), bottom + 1):
            pop(buf, y, None)
        self.dirty.update(range(top, bottom + 1))

    def _shift_down(self, top: int, bottom: int, count: int) -> None:
        buf = self.buffer
        get, put, pop = dict.get, dict.__setitem__, dict.pop
        for y in range(bottom, top + count - 1, -1):
            row = get(buf, y - count)
            if row is None:
                pop(buf, y, None)
            else:
                put(buf, y, row)
        for y in range(top, min(top + count, bottom + 1)):
            pop(buf, y, None)
        self.dirty.update(range(top, bottom + 1))

    def scroll_up(self, count: int | None = None) -> None:
        """``CSI n S`` (SU): scroll the region up; the cursor stays put."""
        top, bottom = self.margins or (0, self.lines - 1)
        self._shift_up(top, bottom, min(count or 1, bottom - top + 1))

    def scroll_down(self, count: int | None = None) -> None:
        """``CSI n T`` (SD): scroll the region down; the cursor stays put."""
        top, bottom = self.margins or (0, self.lines - 1)
        self._shift_down(top, bottom, min(count or 1, bottom - top + 1))

    def next_line(self) -> None:
        """``ESC E`` (NEL) is carriage return plus index, whatever LNM says."""
        self.carriage_return()
        self.index()

    # -- erasing -------------------------------------------------------------

    def erase_in_line(self, how: int | None = 0, private: bool = False) -> None:
        if not how:
            self._blank(self.cursor.y, self.cursor.x, self.columns)
        elif how == 1:
            self._blank(self.cursor.y, 0, self.cursor.x + 1)
        elif how == 2:
            self._blank(self.cursor.y, 0, self.columns)

    def erase_in_display(self, how: int | None = 0, *args: Any, **kwargs: Any) -> None:
        how = how or 0
        y = self.cursor.y
        if how == 3:  # xterm: erase the saved lines only
            self.on_clear_history()
            return
        if how == 0:
            self.erase_in_line(0)
            rows = range(y + 1, self.lines)
        elif how == 1:
            self.erase_in_line(1)
            rows = range(y)
        elif how == 2:
            rows = range(self.lines)
        else:
            return
        for row in rows:
            self._blank(row, 0, self.columns)

    def _blank(self, y: int, start: int, end: int) -> None:
        """Erase cells [start, end) of row ``y`` to the cursor's colours."""
        attrs = self.cursor.attrs
        plain = attrs == BLANK
        end = min(end, self.columns)
        self.dirty.add(y)
        if plain and start == 0 and end == self.columns:
            dict.pop(self.buffer, y, None)
            return
        line = self.buffer[y]
        if self._wide_seen:
            self._split_wide(line, start, end)
        if not plain:
            line.update(dict.fromkeys(range(start, end), attrs))
        elif len(line) < end - start:
            for x in [x for x in line if start <= x < end]:
                del line[x]
        else:
            for x in range(start, end):
                line.pop(x, None)

    # -- attributes ----------------------------------------------------------

    def sgr(self, raw: str) -> None:
        """``CSI raw m``; results are cached because agents repeat a few styles."""
        key = (self.cursor.attrs, raw)
        attrs = self._sgr_cache.get(key)
        if attrs is None:
            if len(self._sgr_cache) > 4096:
                self._sgr_cache.clear()
            attrs = self._sgr_cache[key] = apply_sgr(self.cursor.attrs, raw)
        self.cursor.attrs = attrs

    def select_graphic_rendition(self, *attrs: int) -> None:
        self.sgr(";".join(map(str, attrs)))

    def soft_reset(self) -> None:
        """``CSI ! p`` (DECSTR)."""
        self.mode.difference_update({mo.IRM, mo.DECOM})
        self.mode.update({mo.DECAWM, mo.DECTCEM})
        self.cursor.hidden = False
        self.cursor.attrs = BLANK
        self.margins = None
        self.charset = 0
        self.g0_charset = self.g1_charset = charsets.LAT1_MAP
        self.private_modes.discard(1)
        self.modes_serial += 1

    # -- cursor ----------------------------------------------------------------

    def cursor_to_line(self, line: int | None = None) -> None:
        # pyte asserts when origin mode is on without margins; treat that as no margins.
        if self.margins is None:
            self.cursor.y = (line or 1) - 1
            self.ensure_vbounds()
        else:
            super().cursor_to_line(line)

    def tab_forward(self, count: int | None = None) -> None:
        """``CSI n I`` (CHT)."""
        for _ in range(min(count or 1, self.columns)):
            self.tab()

    def tab_back(self, count: int | None = None) -> None:
        """``CSI n Z`` (CBT)."""
        for _ in range(min(count or 1, self.columns)):
            stops = [s for s in self.tabstops if s < self.cursor.x]
            self.cursor.x = max(stops, default=0)

    # -- size ------------------------------------------------------------------

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        lines = lines or self.lines
        columns = columns or self.columns
        if (lines, columns) == (self.lines, self.columns):
            return
        if lines < self.lines:
            self.cursor.y = self._shrink(self.buffer, self.cursor.y, lines, not self.alternate)
            if self.alternate:
                self._shrink_saved_main(lines)
        if columns < self.columns:
            for rows in (self.buffer, self._other):
                _truncate(rows, columns)
        self.tabstops = {s for s in self.tabstops if s < columns}
        self.tabstops.update(range((self.columns + 7) // 8 * 8, columns, 8))
        self.lines, self.columns = lines, columns
        self.margins = None
        self.cursor.x = min(self.cursor.x, columns - 1)
        self.cursor.y = min(self.cursor.y, lines - 1)
        self.dirty.update(range(lines))

    def _shrink(self, rows: _Rows, cursor_y: int, lines: int, keep: bool) -> int:
        """Drop rows to fit ``lines``: blank ones below the cursor first, then
        the top ones (into the history when ``keep``). Returns the new cursor row."""
        excess = self.lines - lines
        bottom = self.lines - 1
        while excess and bottom > cursor_y and _row_blank(dict.get(rows, bottom)):
            dict.pop(rows, bottom, None)
            bottom -= 1
            excess -= 1
        if excess:
            if keep:
                for y in range(excess):
                    self.on_scroll(dict.get(rows, y))
            for y in range(bottom + 1):
                row = dict.pop(rows, y + excess, None) if y + excess <= bottom else None
                dict.pop(rows, y, None)
                if row is not None:
                    dict.__setitem__(rows, y, row)
        return max(cursor_y - excess, 0)

    def _shrink_saved_main(self, lines: int) -> None:
        saved = self._alt_saved
        cursor_y = saved[0].y if saved else 0
        new_y = self._shrink(self._other, cursor_y, lines, True)
        if saved:
            saved[0].y = new_y

    # -- the plain-text fast path -----------------------------------------------

    def block_ready(self) -> bool:
        """Whether a run of plain lines can skip cell-by-cell scrolling here."""
        return (not self.alternate
                and self.cursor.y == self.lines - 1
                and (self.margins is None or self.margins == (0, self.lines - 1))
                and mo.DECAWM in self.mode
                and mo.IRM not in self.mode
                and mo.LNM not in self.mode
                and (self.g1_charset if self.charset else self.g0_charset)
                is charsets.LAT1_MAP)

    def take_block(self, block: str) -> None:
        """Process printable text with tabs, CRs and LFs; ``block_ready()`` must hold.

        With the cursor on the bottom row every LF pushes one row towards the
        history, so the block is worked out on a one-row scratch screen (same
        code, same rules) and the rows it pushes out are collected instead of
        shifted through the screen line by line.  A plain ASCII line in default
        colours skips even the scratch screen and becomes a ``TextRow``.
        """
        scratch = self._scratch_for_block()
        pushed: list[Row] = []
        scratch.on_scroll = pushed.append
        bottom = self.lines - 1
        fresh = self._play_block(scratch, block.split("\n"), pushed,
                                 dict.get(self.buffer, bottom) is None)
        keep = [dict.get(self.buffer, y) for y in range(bottom)] + pushed
        cut = len(pushed)
        self.on_scroll_rows(keep[:cut])
        self.buffer.clear()
        dict.update(self.buffer, ((y, row) for y, row in enumerate(keep[cut:]) if row is not None))
        if not fresh and dict.get(scratch.buffer, 0) is not None:
            dict.__setitem__(self.buffer, bottom, dict.get(scratch.buffer, 0))
        self.cursor.x = scratch.cursor.x
        self._wide_seen |= scratch._wide_seen
        self.last_char = block.rstrip("\t\r\n")[-1:] or self.last_char
        self.dirty.update(range(self.lines))

    def _scratch_for_block(self) -> VTScreen:
        scratch = self._scratch
        if scratch is None or scratch.columns != self.columns:
            scratch = self._scratch = VTScreen(self.columns, 1)
        scratch.buffer.clear()
        current = dict.get(self.buffer, self.lines - 1)
        if current is not None:
            dict.__setitem__(scratch.buffer, 0, current)
        scratch.mode = self.mode
        scratch.tabstops = self.tabstops
        scratch.cursor.x, scratch.cursor.y = self.cursor.x, 0
        scratch.cursor.attrs = self.cursor.attrs
        scratch._wide_seen = self._wide_seen
        return scratch

    def _play_block(self, scratch: VTScreen, segments: list[str], pushed: list[Row],
                    fresh: bool) -> bool:
        """Run the segments on the scratch row; True when it ends on a fresh row."""
        plain = self.cursor.attrs == BLANK
        last = len(segments) - 1
        cols = self.columns
        for i, segment in enumerate(segments):
            if i < last and fresh and plain and scratch.cursor.x == 0:
                rows, x = _text_rows(segment, cols)
                if rows:
                    pushed.extend(rows)
                    scratch.cursor.x = x
                    continue
            if segment:
                scratch._plain_segment(segment)
                fresh = False
            if i < last:
                scratch.index()
                fresh = True
        return fresh

    def _plain_segment(self, segment: str) -> None:
        for match in _PLAIN_PIECES.finditer(segment):
            if match.lastindex == 1:
                self.draw(match.group())
            elif match.lastindex == 2:
                self.tab()
            else:
                self.carriage_return()


_PLAIN_PIECES = re.compile(r"([^\t\r]+)|(\t)|(\r)")


def _text_rows(segment: str, cols: int) -> tuple[list[Row], int]:
    """The rows one LF-terminated ASCII line makes from column 0 of a fresh row,
    and the column it leaves the cursor at; ([], 0) when it is not that simple."""
    cr = segment.endswith("\r")
    text = segment[:-1] if cr else segment
    if not text.isascii() or "\r" in text or "\t" in text:
        return [], 0
    if not text:
        return [None], 0
    rows: list[Row] = [TextRow(text[i:i + cols]) for i in range(0, len(text), cols)]
    return rows, 0 if cr else len(text) - (len(rows) - 1) * cols


def _truncate(rows: _Rows, columns: int) -> None:
    for y, row in list(rows.items()):
        if row.__class__ is TextRow:
            dict.__setitem__(rows, y, TextRow(row.text[:columns]))
        else:
            for x in [x for x in row if x >= columns]:
                del row[x]


_KNOWN_PRIVATE = frozenset({1, 5, 9, 12, 66, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 2004})
__all__ = ["BLANK", "Line", "Margins", "Row", "Run", "TextRow", "VTScreen", "apply_sgr",
           "materialise", "number", "palette", "row_runs", "row_text"]
