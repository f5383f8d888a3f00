"""A pyte screen tuned for agent CLIs: bulk hot paths and the modes pyte lacks.

pyte's ``Screen`` supplies the cell model and the less frequent operations.
:class:`VTScreen` replaces the hot ones (drawing text, scrolling, erasing,
SGR) with bulk versions, adds the alternate screen and the private modes
agent CLIs use, bounds what pyte leaves unbounded, and takes runs of
log lines, plain or coloured, as one block (:meth:`VTScreen.take_block`), so
a flood of log lines never turns into per-cell objects, and keeps a row a TUI
writes left to right as text (:mod:`choragos.terminal.vtrows`).
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from choragos.terminal.pytelib import Char, charsets, mo, pyte, wcwidth
from choragos.terminal.vtcells import (
    BLANK,
    NARROW,
    NARROW_OR_ONE,
    Cells,
    Line,
    Row,
    TextRow,
    apply_sgr,
    as_row,
    as_rows,
    ascii_lines,
    erased,
    materialise,
    one_cell_each,
    row_blank,
)
from choragos.terminal.vtrows import appended, cut_at, parse_run, text_row

_ALT_MODES = frozenset({47, 1047, 1049})
_IRM = mo.IRM
_LAT1 = charsets.LAT1_MAP
_MOUSE_MODES = (9, 1000, 1002, 1003)


class _Rows(list):
    """The screen buffer, one entry per row: a Line, a TextRow until its cells
    are needed, or None while the row is blank.

    pyte's methods index it as they would their own dict of Lines, so
    materialising on ``rows[y]`` keeps TextRow and None invisible to them;
    this module reads raw entries with ``_raw`` and scrolls with C-level
    ``del`` and slice assignment instead of re-keying a dict row by row.
    """

    def __init__(self, lines: int) -> None:
        super().__init__([None] * lines)

    def __getitem__(self, y: int) -> Line:  # type: ignore[override]
        row = _raw(self, y)
        if row.__class__ is not Line:
            row = Line(BLANK) if row is None else materialise(row)
            list.__setitem__(self, y, row)
        return row


_raw = list.__getitem__


def _ignore(*_args: Any) -> None:
    """Default hook: nobody listens."""


# What rows a block took in bulk join back into in a transcript (see
# ``transcript.logical_lines``), worked out as the rows were cut from the
# program's lines: the index of the first row, how many rows, the lines
# (None: each row is one), and the text left waiting for the row after.
Joined = tuple[int, int, list[str] | None, str]



class VTScreen(pyte.Screen):
    """pyte's screen with faster hot paths, the alternate screen and more modes.

    ``on_scroll(row)`` receives each row leaving the top of the main screen
    (``on_scroll_rows(rows, joined)`` rows leaving together, ``joined`` a
    :data:`Joined` for some of them, or None);
    ``on_clear_history()`` is called for ``CSI 3 J``, ``on_erase_screen()``
    just before ``CSI 2 J`` blanks the main screen.
    """

    default_char = BLANK  # reverse video is a display flag here, never baked into cells

    def __init__(self, columns: int, lines: int) -> None:
        self.on_scroll: Callable[[Row], None] = _ignore
        # Rows leaving in bulk; a str among them is a plain text row (see take_block).
        self.on_scroll_rows: Callable[[list[Row | str], Joined | None], None] = \
            self._scroll_each
        self.on_clear_history: Callable[[], None] = _ignore
        self.on_erase_screen: Callable[[], None] = _ignore
        self.private_modes: set[int] = set()
        self.modes_serial = 0
        self.alternate = False
        self.last_char = ""
        self._other = _Rows(lines)
        self._alt_saved: tuple[Any, ...] | None = None
        self._chars: Cells = Cells(BLANK)
        self._char_sets: dict[Char, Cells] = {}
        self._sgr_cache: dict[tuple[Char, str], Char] = {}
        self._runs: dict[tuple[str, Char], tuple[Any, ...]] = {}
        self.text_rows = True  # whether rows written left to right stay text
        self._wide_seen = False
        self._scratch: VTScreen | None = None
        super().__init__(columns, lines)

    def _scroll_each(self, rows: list[Row | str], _joined: Joined | None = None) -> None:
        for row in rows:
            self.on_scroll(as_row(row))

    # -- state -------------------------------------------------------------

    def reset(self) -> None:
        super().reset()
        self.buffer = _Rows(self.lines)
        self._other = _Rows(self.lines)
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
        rows[:] = [None] * self.lines
        self.dirty.update(range(self.lines))

    def main_rows(self) -> list[Row]:
        """The rows of the main screen, whichever screen is showing."""
        rows = self._other if self.alternate else self.buffer
        return list(rows)

    def row(self, y: int) -> Row:
        """The raw row at ``y`` of the visible screen (None when blank)."""
        return _raw(self.buffer, y)

    # -- drawing -------------------------------------------------------------

    def draw(self, data: str) -> None:
        if self.charset or self.g0_charset is not _LAT1:
            data = data.translate(self.g1_charset if self.charset else self.g0_charset)
        if _IRM not in self.mode and (data.isascii() or NARROW.fullmatch(data)):
            self._put_narrow(data)
        else:
            self._put_mixed(data)
        self.last_char = data[-1:]

    def _cells(self) -> Cells:
        attrs = self.cursor.attrs
        if self._chars.attrs is not attrs:
            chars = self._char_sets.get(attrs)
            if chars is None:
                if len(self._char_sets) > 64:
                    self._char_sets.clear()
                chars = self._char_sets[attrs] = Cells(attrs)
            self._chars = chars
        return self._chars

    def _put_narrow(self, text: str) -> None:
        """Draw characters that each take one cell, a row-slice at a time."""
        cur = self.cursor
        x = cur.x
        end = x + len(text)
        if end > self.columns:
            self._put_narrow_wrapping(text)
            return
        y = cur.y
        line = _raw(self.buffer, y)
        if line.__class__ is not Line and self.text_rows:
            # A row being written left to right stays text (see vtrows).
            row = appended(line, x, text, ((0, cur.attrs),))
            if row is not None:
                list.__setitem__(self.buffer, y, row)
                cur.x = end
                self.dirty.add(y)
                return
        if not self._wide_seen:
            # The usual case, kept short: it fits on the row and no wide
            # character can be cut.
            if line.__class__ is not Line:
                line = self.buffer[y]
            cells = self._chars
            if cells.attrs is not cur.attrs:
                cells = self._cells()
            line.update(zip(range(x, end), map(cells.__getitem__, text), strict=True))
            cur.x = end
            self.dirty.add(y)
            return
        self._put_narrow_wrapping(text)

    def draw_run(self, run: str) -> bool:
        """Text with colour (SGR) sequences between its pieces, as a row kept
        as text: True when drawn, False when it must be played piece by piece
        (it would wrap, a character is not one cell wide, the row has cells,
        insert mode or a line-drawing charset is on)."""
        if _IRM in self.mode or self.charset or self.g0_charset is not _LAT1:
            return False
        cur = self.cursor
        key = (run, cur.attrs)
        found = self._runs.get(key)
        if found is None:
            if len(self._runs) > 256:  # a TUI repeats a few dozen lines a frame
                self._runs.clear()
            found = self._runs[key] = parse_run(run, cur.attrs, self.sgr_of) or ()
        if not found:
            return False
        text, spans, attrs = found
        x = cur.x
        if x + len(text) > self.columns:
            return False
        y = cur.y
        row = appended(_raw(self.buffer, y), x, text, spans)
        if row is None:
            return False
        list.__setitem__(self.buffer, y, row)
        cur.x = x + len(text)
        cur.attrs = attrs
        self.last_char = text[-1]
        self.dirty.add(y)
        return True

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
            row = appended(_raw(self.buffer, cur.y), x, part, ((0, cur.attrs),)) \
                if self.text_rows else None
            if row is not None:
                list.__setitem__(self.buffer, cur.y, row)
            else:
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
        for match in NARROW_OR_ONE.finditer(text):
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
            self.on_scroll(_raw(self.buffer, 0))
        self._shift_up(top, bottom, 1)

    def _shift_up(self, top: int, bottom: int, count: int) -> None:
        """Move rows top..bottom up by ``count``; blank rows come in at the bottom."""
        buf = self.buffer
        del buf[top:top + count]
        buf[bottom + 1 - count:bottom + 1 - count] = [None] * count
        self.dirty.update(range(top, bottom + 1))

    def _shift_down(self, top: int, bottom: int, count: int) -> None:
        """Move rows top..bottom down by ``count``; blank rows come in at the top."""
        buf = self.buffer
        del buf[bottom + 1 - count:bottom + 1]
        buf[top:top] = [None] * count
        self.dirty.update(range(top, bottom + 1))

    # pyte's own line insertion and deletion assume every row is present in
    # the buffer; here blank rows are absent, so they go through the shifts.

    def reverse_index(self) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        if self.cursor.y == top:
            self._shift_down(top, bottom, 1)
        else:
            self.cursor_up()

    def insert_lines(self, count: int | None = None) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        y = self.cursor.y
        if top <= y <= bottom:
            self._shift_down(y, bottom, min(count or 1, bottom - y + 1))
            self.carriage_return()

    def delete_lines(self, count: int | None = None) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        y = self.cursor.y
        if top <= y <= bottom:
            self._shift_up(y, bottom, min(count or 1, bottom - y + 1))
            self.carriage_return()

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

    def erase_rows_up(self, count: int) -> None:
        """``count`` times: erase the cursor's row and move up one
        (``CSI 2 K CSI 1 A``), the way Ink (Gemini CLI, Claude Code) takes
        its last frame off the screen before each redraw.  With plain
        blanks to leave, in one loop rather than two calls a row."""
        if self.cursor.attrs.bg != "default":
            for _ in range(count):
                self.erase_in_line(2)
                self.cursor_up(1)
            return
        top = self.margins[0] if self.margins else 0
        buffer, dirty, y = self.buffer, self.dirty, self.cursor.y
        for _ in range(count):
            buffer[y] = None  # what _blank leaves of a whole row's plain erase
            dirty.add(y)
            y = max(y - 1, top)  # as pyte's cursor_up: stops at (or moves to) the top margin
        self.cursor.y = y

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
            if not self.alternate:
                self.on_erase_screen()  # lines that never scrolled off are lost
            rows = range(self.lines)
        else:
            return
        for row in rows:
            self._blank(row, 0, self.columns)

    def erase_characters(self, count: int | None = None) -> None:
        x = self.cursor.x
        self._blank(self.cursor.y, x, x + (count or 1))

    def _blank(self, y: int, start: int, end: int) -> None:
        """Erase cells [start, end) of row ``y``.

        Erased cells take the cursor's background colour and nothing else, as
        in xterm and tmux; pyte would also copy reverse, underline and the rest.
        """
        bg = self.cursor.attrs.bg
        plain = bg == "default"
        attrs = BLANK if plain else erased(bg)
        end = min(end, self.columns)
        self.dirty.add(y)
        if plain and start == 0 and end == self.columns:
            self.buffer[y] = None
            return
        if plain and end == self.columns and _raw(self.buffer, y).__class__ is TextRow:
            list.__setitem__(self.buffer, y, cut_at(_raw(self.buffer, y), start))
            return
        line = self.buffer[y]
        if end == self.columns:
            _drop_hidden(line)
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
        """``CSI raw m``."""
        attrs = self._sgr_cache.get((self.cursor.attrs, raw))
        self.cursor.attrs = attrs or self.sgr_of(self.cursor.attrs, raw)

    def sgr_of(self, attrs: Char, raw: str) -> Char:
        """``attrs`` after ``CSI raw m``; cached because agents repeat a few styles."""
        key = (attrs, raw)
        found = self._sgr_cache.get(key)
        if found is None:
            if len(self._sgr_cache) > 4096:
                self._sgr_cache.clear()
            found = self._sgr_cache[key] = apply_sgr(attrs, raw)
        return found

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

    def save_cursor(self) -> None:
        # One slot, as in xterm: pyte stacks every DECSC, so a program that
        # only ever saves would grow memory without bound.
        super().save_cursor()
        del self.savepoints[:-1]

    def restore_cursor(self) -> None:
        saved = self.savepoints[-1] if self.savepoints else None
        super().restore_cursor()
        if saved is not None:
            # The slot survives a DECRC (pyte pops it), and must not alias the live cursor.
            self.savepoints.append(saved._replace(cursor=copy.copy(saved.cursor)))

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
        for rows in (self.buffer, self._other):
            del rows[lines:]  # only the hidden alternate screen is still too long here
            rows.extend([None] * (lines - len(rows)))
        if columns < self.columns:
            # A main-screen row keeps what the narrowing cuts off as its tail, for
            # the transcript: a line printed in a wide pane must reach it whole.
            # The alternate screen never reaches the transcript.
            main, alternate = (self._other, self.buffer) if self.alternate else (self.buffer,
                                                                                 self._other)
            _truncate(main, columns, keep=True)
            _truncate(alternate, columns, keep=False)
        self.tabstops = {s for s in self.tabstops if s < columns}
        self.tabstops.update(range((self.columns + 7) // 8 * 8, columns, 8))
        self.lines, self.columns = lines, columns
        self.margins = None
        self.cursor.x = min(self.cursor.x, columns)  # == columns: a wrap still pending
        self.cursor.y = min(self.cursor.y, lines - 1)
        self.dirty.update(range(lines))

    def _shrink(self, rows: _Rows, cursor_y: int, lines: int, keep: bool) -> int:
        """Drop rows to fit ``lines``: blank ones below the cursor first, then
        the top ones (into the history when ``keep``). Returns the new cursor row."""
        while len(rows) > lines and len(rows) - 1 > cursor_y and row_blank(_raw(rows, -1)):
            del rows[-1]
        excess = len(rows) - lines
        if excess > 0:
            if keep:
                self.on_scroll_rows(list(rows)[:excess], None)
            del rows[:excess]
        return max(cursor_y - max(excess, 0), 0)

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
        """Process printable text with tabs, CRs, LFs, colours (SGR) and erases to
        the end of the line (EL 0); ``block_ready()`` must hold.

        With the cursor on the bottom row every LF pushes one row towards the
        history, so the block is worked out on a one-row scratch screen (same
        code, same rules) and the rows it pushes out are collected instead of
        shifted through the screen line by line.  A plain ASCII line in default
        colours skips even the scratch screen and becomes a ``TextRow``.
        """
        if "\r\r" in block:
            # A program writing CR LF through a PTY that adds a CR to each LF
            # sends CR CR LF; the second CR changes nothing, so the line takes
            # the same paths as one ended by CR LF.  Replaced in C first: the
            # regex alone took a flood's 32 KB block eight times as long.
            block = block.replace("\r\r\n", "\r\n")
            if "\r\r" in block:
                block = _CRS_BEFORE_LF.sub("\r\n", block)
        scratch = self._scratch_for_block()
        pushed: list[Row | str] = []  # a str: a plain text row, kept as its text
        scratch.on_scroll = pushed.append
        bottom = self.lines - 1
        fresh = _raw(self.buffer, bottom) is None
        rest = block
        if not fresh or scratch.cursor.x:
            # A line begun by an earlier feed: finish it first, then the rest
            # may start on a fresh row.
            first = block.find("\n")
            fresh = self._finish_line(scratch, block[:first], pushed, fresh)
            rest = block[first + 1:]
        segments = None
        joins: list[Joined] = []
        if fresh and scratch.cursor.x == 0:
            if scratch.cursor.attrs == BLANK:
                segments = _plain_lines(rest, self.columns, pushed, joins, bottom)
            if segments is None:
                segments = self._coloured_head(rest, scratch.cursor, pushed, joins)
        fresh = self._play_block(scratch, segments or rest.split("\n"), pushed, fresh)
        scratch.on_scroll = _ignore
        keep = list(self.buffer)[:bottom] + pushed
        cut = len(pushed)
        self.on_scroll_rows(keep[:cut], _leaving(joins, bottom, cut))
        self.buffer[:] = [*as_rows(keep[cut:]), None if fresh else _raw(scratch.buffer, 0)]
        self.cursor.x = scratch.cursor.x
        self.cursor.attrs = scratch.cursor.attrs
        self._wide_seen |= scratch._wide_seen
        self.last_char = _last_drawn(block) or self.last_char
        self.dirty.update(range(self.lines))

    def _finish_line(self, scratch: VTScreen, segment: str, pushed: list[Row | str],
                     fresh: bool) -> bool:
        """The rest of a line an earlier feed began (a flood read in pieces
        cuts lines anywhere): appended to the row's text when the row is
        text and the cursor stands at its end, else played on the scratch
        row.  True: the line ended on a fresh row."""
        lead = _raw(scratch.buffer, 0)
        if lead.__class__ is TextRow and not lead.tail and len(lead.text) == scratch.cursor.x:
            rows, x = self._styled_rows(segment, scratch.cursor, lead)
            if rows:
                pushed.extend(rows)
                scratch.buffer[:] = [None]
                scratch.cursor.x = x
                return True
        return self._play_block(scratch, [segment, ""], pushed, fresh)

    def _coloured_head(self, block: str, cursor: Any, pushed: list[Row | str],
                       joins: list[Joined] | None = None) -> list[str] | None:
        """A flood of coloured log lines, in bulk: the lines that leave the
        screen within this block are only ever read again as text (history,
        transcript), so their rows go to ``pushed`` as text and their colour
        sequences are only followed for the style the rest starts in
        (``cursor.attrs``).  Returned: the segments of the last lines, enough
        to fill the screen (and what follows them), to be played with their
        colours.  None, ``pushed`` untouched, when the block is no longer
        than that or its head is not ASCII lines ended by CR LF with nothing
        but SGRs and erases to the end of the line between.  ``joins``: see
        :func:`_push_lines` (every row of the head leaves the screen)."""
        cut = self._head_end(block)
        if cut is None:
            return None
        head = block[:cut]
        if not _crlf_lines(head):
            return None
        # An erase to the end of the line only blanks cells the line has not
        # drawn yet: the rows' text, all the history keeps, is the same.
        cursor.attrs = self._after_sgrs(cursor.attrs, head)
        _push_lines(_SEQUENCE.sub("", head[:-1]).split("\r\n"), self.columns, pushed, joins)
        return block[cut + 1:].split("\n")

    def _head_end(self, block: str) -> int | None:
        """The LF after which the lines start that may stay on the screen: the
        last ones, counted back until they fill every row but the one the
        block ends on; None when that takes the whole block.  Each line makes
        at least one row, so as many lines as rows will do, found in C; only
        a block with fewer lines than that counts the rows each line makes
        (a narrow pane, where log lines wrap)."""
        cut = len(block)
        for _ in range(self.lines):
            cut = block.rfind("\n", 0, cut)
            if cut < 0:
                break
        else:
            return cut
        need = self.lines - 1
        cols = self.columns
        if block.count("\n") + len(block) // cols <= need:
            return None  # even every line wrapping as much as it could would not do
        cut = block.rfind("\n")
        while need > 0 and cut >= 0:
            start = block.rfind("\n", 0, cut)
            need -= _rows_made(block[start + 1:cut], cols)
            cut = start
        return cut if cut >= 0 else None

    def _after_sgrs(self, attrs: Char, text: str) -> Char:
        """``attrs`` after the SGRs in ``text`` (which holds no other escape
        but erases), applied from the last full reset on: what came before
        it cannot matter, and a flood of log lines resets on every line."""
        long_reset, short_reset = text.rfind("\x1b[0m"), text.rfind("\x1b[m")
        if long_reset > short_reset:
            attrs, text = BLANK, text[long_reset + 4:]
        elif short_reset >= 0:
            attrs, text = BLANK, text[short_reset + 3:]
        sgr_of = self.sgr_of
        for raw in _SGR_PARAMS.findall(text):
            attrs = sgr_of(attrs, raw)
        return attrs

    def _scratch_for_block(self) -> VTScreen:
        scratch = self._scratch
        if scratch is None or scratch.columns != self.columns:
            scratch = self._scratch = VTScreen(self.columns, 1)
        scratch.buffer[:] = [_raw(self.buffer, self.lines - 1)]
        scratch.mode = self.mode
        scratch.tabstops = self.tabstops
        scratch.cursor.x, scratch.cursor.y = self.cursor.x, 0
        scratch.cursor.attrs = self.cursor.attrs
        scratch._wide_seen = self._wide_seen
        return scratch

    def _play_block(self, scratch: VTScreen, segments: list[str], pushed: list[Row],
                    fresh: bool) -> bool:
        """Run the segments on the scratch row; True when it ends on a fresh row.

        The last segment is a line the block leaves unfinished (a flood read
        in pieces cuts lines anywhere); it is kept as text too, so the next
        piece can append to it (see :meth:`_finish_line`)."""
        last = len(segments) - 1
        cols = self.columns
        cursor = scratch.cursor
        for i, segment in enumerate(segments):
            if fresh and cursor.x == 0 and (i < last or segment):
                if cursor.attrs == BLANK and "\x1b" not in segment:
                    rows, x = _text_rows(segment, cols)
                else:
                    rows, x = self._styled_rows(segment, cursor)
                if rows:
                    cursor.x = x
                    if i < last:
                        pushed.extend(rows)
                        continue
                    # The unfinished line: its last row stays on the scratch row.
                    pushed.extend(rows[:-1])
                    scratch.buffer[:] = [rows[-1]]
                    return False
            if segment:
                scratch._plain_segment(segment)
                fresh = False
            if i < last:
                scratch.index()
                fresh = True
        return fresh

    def _styled_rows(self, segment: str, cursor: Any,
                     lead: TextRow | None = None) -> tuple[list[Row], int]:
        """Like :func:`_text_rows` for an ASCII line with colour escapes (and
        erases to the end of the line, which leave nothing on a row drawn left
        to right in default background): its rows as style spans; the style it
        ends with goes to ``cursor``.  ``lead``: the row the line continues,
        the cursor at its end.  ([], 0) when it is not that simple."""
        cr = segment.endswith("\r")
        line = segment[:-1] if cr else segment
        if "\r" in line or "\t" in line or not one_cell_each(line):
            return [], 0
        parts = _STYLED_SPLIT.split(line)
        attrs = cursor.attrs
        sgr_of = self.sgr_of
        spans, text = _lead_spans(lead)
        width = len(text)
        if parts[0] and (not spans or spans[-1][1] != attrs):
            spans.append((width, attrs))
        width += len(parts[0])
        for i in range(1, len(parts), 2):
            sequence, piece = parts[i], parts[i + 1]
            if sequence[-1] == "m":
                attrs = sgr_of(attrs, sequence[:-1])
            elif attrs.bg != "default":
                return [], 0  # a coloured erase leaves cells behind: the scratch row does it
            if piece:
                if not spans or spans[-1][1] != attrs:
                    spans.append((width, attrs))
                width += len(piece)
        cursor.attrs = attrs
        if not width:
            return [None], 0
        text += "".join(parts[::2])
        cols = self.columns
        if width <= cols:  # the usual line: one row
            styles = () if len(spans) == 1 and spans[0][1] == BLANK else tuple(spans)
            return [text_row(text, styles)], 0 if cr else width
        rows: list[Row] = [text_row(text[i:i + cols], styles)
                           for i, styles in zip(range(0, width, cols),
                                                _wrapped_styles(spans, width, cols), strict=True)]
        return rows, 0 if cr else width - (len(rows) - 1) * cols

    def _plain_segment(self, segment: str) -> None:
        for match in _PLAIN_PIECES.finditer(segment):
            kind = match.lastindex
            if kind == 1:
                self.draw(match.group())
            elif kind == 2:
                self.tab()
            elif kind == 3:
                self.carriage_return()
            elif kind == 4:
                self.sgr(match.group(4))
            else:
                self.erase_in_line(0)


_PLAIN_PIECES = re.compile(r"([^\t\r\x1b]+)|(\t)|(\r)|\x1b\[([0-9;:]*)m|(\x1b\[0?K)")
_SEQUENCE = re.compile(r"\x1b\[[0-9;:]*[mK]")
_CRS_BEFORE_LF = re.compile(r"\r+\n")
_SGR_PARAMS = re.compile(r"\x1b\[([0-9;:]*)m")
# Splits a coloured line into text, sequence, text, ...: a sequence is its
# SGR parameters followed by ``m``, or ``K``/``0K`` for an erase.
_STYLED_SPLIT = re.compile(r"\x1b\[([0-9;:]*m|0?K)")


def _wrapped_styles(spans: list[tuple[int, Char]], width: int,
                    cols: int) -> list[tuple[tuple[int, Char], ...]]:
    """The style spans of each row a line of ``width`` columns wraps onto,
    relative to the row's start; () for a row all in default colours.  One
    walk over the spans (their starts rise strictly, the first is 0): a
    coloured log line in a narrow pane wraps onto several rows, and slicing
    the spans again for each row was a good part of taking it."""
    out: list[tuple[tuple[int, Char], ...]] = []
    last = len(spans) - 1
    j = 0  # the span the row starts in
    for start in range(0, width, cols):
        end = start + cols
        while j < last and spans[j + 1][0] <= start:
            j += 1
        attrs = spans[j][1]
        k = j + 1
        if k > last or spans[k][0] >= end:  # one style across the row
            out.append(() if attrs == BLANK else ((0, attrs),))
            continue
        row = [(0, attrs)]
        while k <= last and spans[k][0] < end:
            row.append((spans[k][0] - start, spans[k][1]))
            k += 1
        out.append(tuple(row))
    return out


def _plain_lines(block: str, cols: int, pushed: list[Row | str],
                 joins: list[Joined] | None = None, stay: int = 0) -> list[str] | None:
    """The usual log block through a PTY -- ASCII lines in default colours, each
    ended by CR LF -- taken in bulk: its rows go to ``pushed`` as their text
    (a line wider than the screen as one piece per row) and what follows the
    last LF is returned as the one segment left to play; None (``pushed``
    untouched) when the block is not that simple.  ``joins``: see
    :func:`_push_lines`, for the lines before the last ones, which make
    ``stay`` rows (the rows that stay on the screen)."""
    cut = block.rfind("\n")
    if cut < 0:
        return None
    body = block[:cut]
    if "\x1b" in body or not _crlf_lines(body):
        return None
    texts = body[:-1].split("\r\n")
    if joins is None:
        _push_lines(texts, cols, pushed)
        return [block[cut + 1:]]
    leave = len(texts)  # the lines whose rows all leave the screen
    rows = 0
    while leave and rows < stay:
        leave -= 1
        rows += max(1, -(-len(texts[leave]) // cols))
    if leave:
        _push_lines(texts[:leave], cols, pushed, joins)
    if leave < len(texts):
        _push_lines(texts[leave:], cols, pushed)
    return [block[cut + 1:]]


def _crlf_lines(body: str) -> bool:
    """Whether ``body`` (up to its last LF, left out) is ASCII lines without
    tabs, each ended by CR LF and holding no other CR."""
    lines = body.count("\n") + 1
    return (body.endswith("\r") and body.count("\r") == lines
            and body.count("\r\n") == lines - 1 and "\t" not in body and one_cell_each(body))


def _lead_spans(lead: TextRow | None) -> tuple[list[tuple[int, Char]], str]:
    """The style spans and text a line continuing ``lead`` starts with (a
    row's spans start at column 0; none means default colours throughout)."""
    if lead is None or not lead.text:
        return [], ""
    return list(lead.styles) or [(0, BLANK)], lead.text


def _rows_made(segment: str, cols: int) -> int:
    """How many rows one line of a block makes at least: exactly, for ASCII
    without tabs or CRs inside; else 1 (a line makes at least its own)."""
    text = segment[:-1] if segment.endswith("\r") else segment
    if "\x1b" in text:
        text = _SEQUENCE.sub("", text)
    if "\r" in text or "\t" in text or not one_cell_each(text):
        return 1
    return max(1, -(-len(text) // cols))


def _push_lines(texts: list[str], cols: int, pushed: list[Row | str],
                joins: list[Joined] | None = None) -> None:
    """Plain lines as the text of the rows they fill, a line wider than the
    screen as one piece per row.  With ``joins`` (the lines are printable
    ASCII), the :data:`Joined` of those rows is added to it: what a
    transcript joins them back into is known here, where they are cut from
    the lines (joined again from the rows, it cost a flood's batch a fifth
    of its drawing)."""
    start = len(pushed)
    longest = max(map(len, texts))
    if longest < cols or (longest == cols and joins is None):
        pushed.extend(texts)  # a row each, none filling the width
        if joins is not None:
            joins.append((start, len(texts), None, ""))
    elif joins is None:  # an empty line still makes its row
        pushed.extend([text[i:i + cols] for text in texts for i in range(0, len(text) or 1, cols)])
    else:
        lines, tail = _cut_lines(texts, cols, pushed)
        joins.append((start, len(pushed) - start, lines, tail))


def _cut_lines(texts: list[str], cols: int, pushed: list[Row | str]) -> tuple[list[str], str]:
    """``_push_lines`` for printable ASCII lines: the rows go to ``pushed``,
    and returned are the lines they join back into and the text left
    waiting (``ascii_lines`` of the rows, trailing blanks cut).  A line cut
    into rows that each fill the width and continue on the next is that
    line; only one that ends exactly at the edge, or has a row ending in a
    blank or a rule before its last, is joined from its rows."""
    lines: list[str] = []
    carry = ""
    row = pushed.append
    line = lines.append
    for text in texts:
        size = len(text)
        if size < cols:
            row(text)
        elif (size < 2 * cols and size != cols and text[cols - 1] != " "
              and text.count(text[0], 0, cols) != cols):  # two rows, the usual wrap
            row(text[:cols])
            row(text[cols:])
        elif (2 * cols < size < 3 * cols and text[cols - 1] != " "
              and text[2 * cols - 1] != " " and text.count(text[0], 0, cols) != cols
              and text.count(text[cols], cols, 2 * cols) != cols):  # three, in a narrow pane
            row(text[:cols])
            row(text[cols:2 * cols])
            row(text[2 * cols:])
        else:
            rows = list(map(text.__getitem__, map(slice, range(0, size, cols),
                                                  range(cols, size + cols, cols))))
            pushed += rows
            ends = rows[:-1]
            if (not size % cols or " " in text[cols - 1::cols]
                    or not all(map(str.strip, ends, map(itemgetter(0), ends)))):
                done, carry = ascii_lines(list(map(str.rstrip, rows)), cols, carry)
                lines += done
                continue
        line(carry + text.rstrip())
        carry = ""
    return lines, carry


def _leaving(joins: list[Joined], bottom: int, cut: int) -> Joined | None:
    """The block's :data:`Joined` as an index into the rows leaving the
    screen (the ``bottom`` rows it held, then the first ``cut`` the block
    pushed); None when there is none, or its rows do not all leave."""
    if not joins:
        return None
    start, count, lines, tail = joins[0]
    start += bottom
    return (start, count, lines, tail) if start + count <= cut else None


def _last_drawn(block: str) -> str:
    """The last character a block draws ('' if none): what REP repeats.
    Read from the end, a line at a time; a flood ends with its last line."""
    end = len(block)
    while end > 0:
        start = block.rfind("\n", 0, end) + 1
        line = block[start:end]
        if "\x1b" in line:
            line = _SEQUENCE.sub("", line)
        line = line.rstrip("\t\r")
        if line:
            return line[-1]
        end = start - 1
    return ""


def _text_rows(segment: str, cols: int) -> tuple[list[Row], int]:
    """The rows one LF-terminated ASCII line makes from column 0 of a fresh row,
    and the column it leaves the cursor at; ([], 0) when it is not that simple."""
    cr = segment.endswith("\r")
    text = segment[:-1] if cr else segment
    if "\r" in text or "\t" in text or "\x1b" in text or not one_cell_each(text):
        return [], 0
    if not text:
        return [None], 0
    rows: list[Row] = [TextRow(text[i:i + cols]) for i in range(0, len(text), cols)]
    return rows, 0 if cr else len(text) - (len(rows) - 1) * cols


def _drop_hidden(line: Line) -> None:
    """Erasing to the end of a row erases what a narrowing cut off, too."""
    if getattr(line, "tail", ""):
        line.tail = ""


def _truncate(rows: _Rows, columns: int, keep: bool) -> None:
    """Cut every row to ``columns``; with ``keep``, the cut text joins the row's tail."""
    for y, row in enumerate(list(rows)):
        if row is None:
            continue
        if row.__class__ is TextRow:
            if len(row.text) > columns:
                rows[y] = row._replace(
                    text=row.text[:columns],
                    tail=row.text[columns:] + row.tail if keep else "",
                    styles=tuple(s for s in row.styles if s[0] < columns))
            continue
        beyond = [x for x in row if x >= columns]
        if keep:
            _cut(row, columns, beyond)
        for x in beyond:
            del row[x]


def _cut(row: Line, columns: int, beyond: list[int]) -> None:
    """Move the text from ``columns`` on into the row's tail (``tail_at`` is
    the column the tail starts at), ahead of a tail an earlier cut left."""
    old, old_at = getattr(row, "tail", ""), getattr(row, "tail_at", 0)
    end = old_at if old else max(beyond, default=columns - 1) + 1
    if end <= columns:
        return
    cut = "".join(row.get(x, BLANK).data for x in range(columns, end))
    tail = cut + old
    row.tail, row.tail_at = (tail, columns) if tail.strip() else ("", 0)


_KNOWN_PRIVATE = frozenset({1, 5, 9, 12, 66, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 2004})
