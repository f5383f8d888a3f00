"""A role's pane: its emulated screen as rows for the deck, live or scrolled back.

Rows are built as ``(bytes, attribute runs)`` of an exact width, the form
urwid's text canvases take, so the deck can lay tiles side by side without
a widget per pane.  Reading a terminal is thread-safe (``snapshot``,
``history``); nothing here touches the role actor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from urwid import str_util

from choragos.inert import inert as core_inert
from choragos.terminal.emulator import Terminal
from choragos.terminal.vtcells import NARROW
from choragos.ui.theme import attr_of

Attr = Any  # a palette name, an AttrSpec, or None
Line = tuple[bytes, list[tuple[Attr, int]]]
TAB = "    "  # a tab in agents' text: the deck lays it out as spaces


def inert(text: object) -> str:
    """``text`` with control, escape and bidi characters shown, not obeyed
    (the core's rule, tabs as spaces)."""
    return core_inert(text, tab=TAB)


def text_width(text: str) -> int:
    if text.isascii() and text.isprintable():
        return len(text)
    return str_util.calc_width(text, 0, len(text))


def fitted(pieces: list[str], room: int, sep: str) -> list[str]:
    """``pieces`` joined by ``sep`` into rows of ``room`` columns, each piece
    whole on one row (one wider than a row is left for the row to cut)."""
    rows: list[str] = []
    for piece in pieces:
        joined = f"{rows[-1]}{sep}{piece}" if rows else piece
        if rows and text_width(joined) <= room:
            rows[-1] = joined
        else:
            rows.append(piece)
    return rows


def bytes_width(raw: bytes) -> int:
    """The columns UTF-8 text of a drawn row takes."""
    return len(raw) if raw.isascii() else text_width(raw.decode("utf-8", "replace"))


class RowBuilder:
    """Text in attribute runs, clipped and padded to exactly ``width`` columns."""

    __slots__ = ("attrs", "col", "parts", "width")

    def __init__(self, width: int) -> None:
        self.width = width
        self.col = 0
        self.parts: list[bytes] = []
        self.attrs: list[tuple[Attr, int]] = []

    def add(self, text: str, attr: Attr = None) -> None:
        room = self.width - self.col
        if room <= 0 or not text:
            return
        if text.isprintable() and (text.isascii() or NARROW.fullmatch(text)):
            # One cell a character (ASCII, an agent's box drawing and marks),
            # checked in C: no width looked up character by character.
            text = text[:room]
            used = len(text)
        else:
            text = "".join(c if c.isprintable() else " " for c in text)
            pos, used = str_util.calc_text_pos(text, 0, len(text), room)
            text = text[:pos]
        if not text:
            return
        data = text.encode("utf-8")
        self.parts.append(data)
        self.col += used
        if self.attrs and self.attrs[-1][0] == attr:
            self.attrs[-1] = (attr, self.attrs[-1][1] + len(data))
        else:
            self.attrs.append((attr, len(data)))

    def fill(self, attr: Attr = None, char: str = " ") -> None:
        if self.col < self.width:
            self.add(char * (self.width - self.col), attr)
        # A wide character that did not fit leaves a gap of one column.
        if self.col < self.width:
            self.add(" " * (self.width - self.col), attr)

    def line(self, attr: Attr = None) -> Line:
        self.fill(attr)
        return b"".join(self.parts), self.attrs


def blank_line(width: int, attr: Attr = None) -> Line:
    return (b" " * width, [(attr, width)] if width else [])


def text_line(width: int, pieces: Iterable[tuple[str, Attr]], fill: Attr = None) -> Line:
    row = RowBuilder(width)
    for text, attr in pieces:
        row.add(text, attr)
    return row.line(fill)


CUT = "…"  # the last column of deck text that did not fit


def clipped_line(width: int, pieces: Iterable[tuple[str, Attr]], fill: Attr = None) -> Line:
    """:func:`text_line`, ending in ``…`` when the pieces are wider than
    ``width``: the deck's own text (titles, cards, the status line) is never
    cut without a sign.  Not for an agent's screen, which is drawn as it is."""
    pieces = list(pieces)
    if width < 2 or sum(text_width(text) for text, _ in pieces) <= width:
        return text_line(width, pieces, fill)
    row = RowBuilder(width - 1)
    for text, attr in pieces:
        row.add(text, attr)
    row.width = width  # room for the mark, in the style of the text it ends
    row.add(CUT, row.attrs[-1][0] if row.attrs else fill)
    return row.line(fill)


def clipped(text: str, room: int) -> str:
    """``text`` cut to ``room`` columns, ending in ``…`` when it was cut."""
    if text_width(text) <= room:
        return text
    if room <= 0:
        return ""
    pos, _ = str_util.calc_text_pos(text, 0, len(text), room - 1)
    return text[:pos] + CUT


@dataclass
class Scroll:
    """A pane looking back into its history instead of at the live screen."""

    offset: int = 0                       # lines above the bottom
    query: str = ""
    matches: list[int] = field(default_factory=list)   # line indexes, oldest first
    current: int = -1                     # index into matches


class PaneView:
    """What the deck remembers about one role's pane between frames."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.scroll: Scroll | None = None
        self.generation = 0             # bumped whenever what the pane shows changed
        self.rendered_rows = 0          # rows built afresh, ever (tests count these)
        self._cache_key: tuple | None = None
        self._cache: tuple[list[Line], tuple[int, int] | None] = ([], None)
        # The live screen as last built: for which (width, colours, terminal,
        # height), the generation of each terminal row in it, its lines.
        self._rows_for: tuple[int, int, int, int] | None = None
        self._held: tuple[int, ...] = ()
        self._lines: list[Line] = []
        self.origin = (0, 0)  # the live screen's cell at the tile's top left

    def cached(self, width: int, height: int, focused: bool, colors: int,
               terminal: Terminal | None) -> tuple[list[Line], tuple[int, int] | None] | None:
        """What the pane showed last at this size, whatever its terminal did
        since (None: not drawn like that)."""
        key = self._cache_key
        if key is None or key[:4] != (width, height, focused, colors):
            return None
        if key[4] != self.generation or key[5] != id(terminal):
            return None
        return self._cache

    # -- scrollback -----------------------------------------------------------

    def scroll_by(self, terminal: Terminal, lines: int, height: int) -> None:
        """Scroll ``lines`` up (negative: down) in a pane ``height`` rows high;
        leaving the bottom ends scroll mode."""
        scroll = self.scroll or Scroll()
        scroll.offset = max(0, min(deepest(terminal, height), scroll.offset + lines))
        self.scroll = scroll if (scroll.offset > 0 or scroll.query) else None
        self.generation += 1

    def scroll_to(self, terminal: Terminal, offset: int, height: int) -> None:
        """Show the page ``offset`` lines above the bottom (at most the top)."""
        scroll = self.scroll or Scroll()
        scroll.offset = max(0, min(deepest(terminal, height), offset))
        self.scroll = scroll
        self.generation += 1

    def end_scroll(self) -> None:
        self.scroll = None
        self.generation += 1

    def search(self, terminal: Terminal, query: str, rows: int) -> bool:
        """Find ``query`` (case-insensitive); jump to the newest match."""
        matches = terminal.search(query, ignore_case=True) if query else []
        scroll = self.scroll or Scroll()
        scroll.query, scroll.matches = query, matches
        scroll.current = len(matches) - 1 if matches else -1
        self.scroll = scroll
        if matches:
            self._show_match(terminal, rows)
        self.generation += 1
        return bool(matches)

    def next_match(self, terminal: Terminal, step: int, rows: int) -> bool:
        """``step`` -1 is older (n), +1 is newer (N), as in less after ``?``."""
        scroll = self.scroll
        if scroll is None or not scroll.matches:
            return False
        scroll.current = max(0, min(len(scroll.matches) - 1, scroll.current + step))
        self._show_match(terminal, rows)
        self.generation += 1
        return True

    def _show_match(self, terminal: Terminal, rows: int) -> None:
        scroll = self.scroll
        total = terminal.history_size() + terminal.rows
        line = scroll.matches[scroll.current]
        # Put the match in the middle of the pane where possible.
        bottom = min(total, line + max(1, rows // 2))
        scroll.offset = max(0, min(deepest(terminal, rows), total - bottom))

    # -- rendering ------------------------------------------------------------

    def content(self, terminal: Terminal | None, width: int, height: int, *,
                focused: bool, colors: int) -> tuple[list[Line], tuple[int, int] | None]:
        """``height`` rows of ``width`` columns and the cursor (None: not shown)."""
        key = (width, height, focused, colors, self.generation, id(terminal),
               terminal.generation if terminal is not None else 0)
        if key == self._cache_key:
            return self._cache
        if terminal is None:
            result = ([text_line(width, [("(no screen yet)", "dim")])]
                      + [blank_line(width)] * (height - 1), None)
        elif self.scroll is not None:
            result = (self._scrolled(terminal, width, height), None)
        else:
            result = self._live(terminal, width, height, focused, colors)
        self._cache_key, self._cache = key, result
        return result

    def _live(self, terminal: Terminal, width: int, height: int, focused: bool,
              colors: int) -> tuple[list[Line], tuple[int, int] | None]:
        """The live screen, rebuilding only the rows whose generation moved.

        A terminal bigger than the tile (a role's terminal has a floor, see
        ``min_terminal``) is shown through a viewport that keeps the cursor in
        view (see ``_follow``).
        A changed screen is a new list (a renderer holding the last one
        compares row objects with it); an unchanged one is the same list."""
        built_for = (width, colors, id(terminal), height)
        if self._rows_for != built_for:
            self._rows_for, self._held, self._lines = built_for, (), []
        # As last drawn: held lines of a flood are drawn by the pane's reader
        # within its hold, and that wakes the deck again.
        live = terminal.live_rows(self._held, catch_up=False)
        origin = self._follow(live.cursor, terminal.cols, len(live.row_gens), width, height,
                              focused)
        if origin != self.origin:
            # The viewport moved: every row it shows is another one.
            self.origin, self._held, self._lines = origin, (), []
            live = terminal.live_rows((), catch_up=False)
        ox, oy = origin
        shown = {y - oy: runs for y, runs in live.runs.items() if oy <= y < oy + height}
        if shown or len(self._lines) != height:
            self._lines = self._rebuilt(shown, len(live.row_gens) - oy, width, height,
                                        colors, ox)
            self._held = live.row_gens[:oy + height]
        cursor = None
        x, y = live.cursor[0] - ox, live.cursor[1] - oy
        if focused and live.cursor_visible and 0 <= x < width and 0 <= y < height:
            cursor = (x, y)
        return self._lines, cursor

    @staticmethod
    def _follow(cursor: tuple[int, int], cols: int, rows: int, width: int, height: int,
                focused: bool) -> tuple[int, int]:
        """The viewport's top-left cell: the terminal's, or as near it as
        keeps the cursor's row in view, and its column too in the focused
        pane (where it is typed at; elsewhere the start of lines reads better
        than the end of a spinner's)."""
        x = _follow_axis(cursor[0], cols, width) if focused else 0
        return x, _follow_axis(cursor[1], rows, height)

    def _rebuilt(self, shown: dict[int, tuple], rows: int, width: int, height: int,
                 colors: int, skip: int) -> list[Line]:
        lines = self._lines.copy() if len(self._lines) == height else [None] * height
        if rows < height and len(self._held) != rows:
            # Rows below a terminal shorter than the tile: one blank row
            # object, kept while the size is, so a renderer sees them unchanged.
            lines[rows:] = [blank_line(width)] * (height - rows)
        for y, runs in shown.items():
            lines[y] = _live_row(runs, width, colors, skip)
            self.rendered_rows += 1
        return lines

    def _scrolled(self, terminal: Terminal, width: int, height: int) -> list[Line]:
        scroll = self.scroll
        # The page shown, not the whole history: packed blocks are read only
        # where the page is.
        kept, shown = terminal.history_size(), terminal.display()
        top = max(0, kept + len(shown) - height - scroll.offset)
        stop = top + height
        window = (terminal.history_lines(top, min(stop, kept))
                  + shown[max(top - kept, 0):max(stop - kept, 0)])
        current = scroll.matches[scroll.current] if scroll.matches else -1
        lines = []
        for index, text in enumerate(window, start=top):
            lines.append(_highlighted(text, scroll.query, width, index == current))
        while len(lines) < height:
            lines.append(blank_line(width))
        return lines


def deepest(terminal: Terminal, height: int) -> int:
    """The offset that shows the history's first line at the top of a pane
    ``height`` rows high: the history, and the screen's rows the pane cannot
    show at once (a role's terminal may be taller than its tile)."""
    return terminal.history_size() + max(0, terminal.rows - height)


def _follow_axis(at: int, total: int, room: int) -> int:
    """Where a viewport ``room`` cells long onto ``total`` starts so that
    ``at`` (the cursor) is in it: at 0 whenever it can be (text starts at the
    left, a screen at its top), else just far enough to show it at the edge."""
    if total <= room:
        return 0
    return max(0, min(at - room + 1, total - room))


def _skip_columns(runs: tuple, skip: int) -> list:
    """``runs`` without their first ``skip`` columns (a wide character cut
    in half leaves a blank)."""
    kept = []
    for run in runs:
        if skip <= 0:
            kept.append(run)
            continue
        used = text_width(run.text)
        if used <= skip:
            skip -= used
            continue
        pos, cut = str_util.calc_text_pos(run.text, 0, len(run.text), skip)
        pad = ""
        if cut < skip:  # a wide character straddles the edge: its visible half blank
            pad = " " * (cut + text_width(run.text[pos]) - skip)
            pos += 1
        kept.append(run._replace(text=pad + run.text[pos:]))
        skip = 0
    return kept


def _live_row(runs: tuple, width: int, colors: int, skip: int = 0) -> Line:
    if skip:
        runs = tuple(_skip_columns(runs, skip))
    if not runs:
        return blank_line(width)
    if len(runs) == 1:
        # A prompt and what is typed at it: one run of plain text, padded as
        # RowBuilder would pad it, without building a row.
        text = runs[0].text
        pad = width - len(text)
        if text and pad >= 0 and text.isascii() and text.isprintable():
            attr = attr_of(runs[0], colors)
            padded = text.encode() + b" " * pad
            if attr is None:
                return padded, [(None, width)]
            if not pad:
                return padded, [(attr, width)]
            return padded, [(attr, len(text)), (None, pad)]
    row = RowBuilder(width)
    for run in runs:
        row.add(run.text, attr_of(run, colors))
    return row.line()


def _highlighted(text: str, query: str, width: int, current: bool) -> Line:
    row = RowBuilder(width)
    if not query:
        row.add(text)
        return row.line()
    folded, needle = text.casefold(), query.casefold()
    at = 0
    # casefold can change lengths (ß -> ss); only highlight when it did not.
    if len(folded) != len(text):
        row.add(text, "match" if current else None)
        return row.line()
    while True:
        found = folded.find(needle, at)
        if found < 0:
            row.add(text[at:])
            break
        row.add(text[at:found])
        row.add(text[found:found + len(needle)], "match" if current else "scroll")
        at = found + len(needle)
    return row.line()
