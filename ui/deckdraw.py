"""The deck's renderer: tiles, titles, the sidebar and the status line,
row by row (rows whose pieces did not change are reused), and the rows the
echo lane swaps into the last frame.

:class:`Renderer` reads the model's state, the panes' terminals and what
the loop says around them (:class:`~ui.statusline.Chrome`); the one thing
it tells anyone is a tile's size, to its role (``Resize``).
"""

from __future__ import annotations

import logging
from typing import Any

from choragos.actors import messages as m
from choragos.ui import sidebar, statusline
from choragos.ui.deckbase import SessionPort
from choragos.ui.deckmodel import DeckModel
from choragos.ui.deckpace import FramePacer
from choragos.ui.deckstate import RoleInfo
from choragos.ui.pane import (
    Line,
    RowBuilder,
    blank_line,
    bytes_width,
    clipped_line,
    inert,
    text_line,
)
from choragos.ui.ptyscreen import PtyScreen
from choragos.ui.statusline import Chrome
from choragos.ui.theme import STATE_DOT, STATE_STYLE

log = logging.getLogger("choragos.deck")

Frame = tuple[list[Line], tuple[int, int] | None]


class Renderer:
    """Frames of the deck: geometry, the rows of each frame, and the echo
    lane's rows (see ``ui/deckecho.py``)."""

    def __init__(self, model: DeckModel, port: SessionPort, screen: PtyScreen,
                 pacer: FramePacer) -> None:
        self.model = model
        self.port = port
        self.screen = screen
        self.pacer = pacer
        self.echo_role: str | None = None  # the pane the echo lane draws
        self.placed: dict[str, tuple] = {}  # role -> (tile, focused, its rows) as last drawn
        self.lane_rows = 0  # echo frames made by joining only the typed pane's rows
        self.card_spans: list[tuple[str, int, int]] = []  # sidebar rows per role, as drawn
        self._bar_line = text_line(1, [("│", "bar")])
        # Per body row: (its pieces, the row joined, where each piece went in it).
        self.rows_memo: list[tuple | None] = []
        self._side_memo: tuple | None = None  # (what the cards showed, their rows)
        self._status_memo: tuple | None = None  # (what the status line showed, the row)
        self._title_memo: dict[str, tuple] = {}  # role -> (what its title showed, the row)

    # -- geometry --------------------------------------------------------------------

    def areas(self, cols: int, rows: int) -> tuple[int, int, int]:
        """(body width, body height, sidebar width)."""
        side = sidebar.WIDTH if self.model.state.sidebar and cols >= 2 * sidebar.WIDTH else 0
        if side and self._zoom_needs_room(cols - side):
            side = 0
        return cols - side, max(rows - 1, 0), side

    def screen_areas(self) -> tuple[int, int, int]:
        """:meth:`areas` at the screen's size now."""
        return self.areas(*self.screen.get_cols_rows())

    def _zoom_needs_room(self, body_w: int) -> bool:
        """A zoomed pane shows its terminal whole where the screen allows:
        the sidebar makes way when the terminal is wider than the body."""
        layout = self.model.state.layout
        if not layout.zoomed or layout.focus is None:
            return False
        terminal = self.port.terminal(layout.focus)
        return terminal is not None and terminal.cols > body_w

    def relayout(self) -> None:
        """Send every shown pane's size to its role, as the next frame will draw it."""
        body_w, body_h, _ = self.screen_areas()
        geometry = self.model.state.layout.geometry(body_w, body_h)
        for role, rect in geometry.tiles.items():
            self._pane_size(role, rect.w, rect.h - 1)

    def _pane_size(self, role: str, width: int, height: int) -> None:
        size = (max(width, 1), max(height, 1))
        sizes = self.model.state.sizes
        if sizes.get(role) != size:
            sizes[role] = size
            self.port.tell_role(role, m.Resize(*size))

    # -- drawing ------------------------------------------------------------------------

    def render(self, cols: int, rows: int, focus: bool, chrome: Chrome) -> Frame:
        """The deck's rows and cursor, ``cols`` x ``rows``."""
        body_w, body_h, side = self.areas(cols, rows)
        grid, cursor = self._place_tiles(self.model.state.layout.geometry(body_w, body_h),
                                         body_h, focus, chrome.mode)
        out = self._join_rows(grid, body_w, side)
        if rows:
            out.append(self._status_line(cols, chrome))
        return out, cursor

    def _place_tiles(self, geometry: Any, body_h: int, focus: bool, mode: str) -> tuple[
            list[list[tuple[int, Line]]], tuple[int, int] | None]:
        """Each body row's pieces (x, line): titles, pane rows, bars; and the cursor."""
        layout = self.model.state.layout
        grid: list[list[tuple[int, Line]]] = [[] for _ in range(body_h)]
        cursor = None
        colors = self.screen.colors
        numbers = {name: i for i, name in enumerate(layout.roster, 1)}
        tasks = self._current_tasks()
        placed: dict[str, tuple] = {}
        for role, rect in geometry.tiles.items():
            self._pane_size(role, rect.w, rect.h - 1)
            focused = role == layout.focus
            grid[rect.y].append((rect.x, self._title(role, rect.w, focused,
                                                     numbers.get(role, 0), tasks)))
            if rect.h <= 1:
                continue
            lines, pane_cursor = self._pane_lines(role, rect.w, rect.h - 1, focused and focus,
                                                  colors)
            placed[role] = (rect, focused and focus, lines)
            for dy, line in enumerate(lines):
                grid[rect.y + 1 + dy].append((rect.x, line))
            if focused and pane_cursor is not None and mode == "normal":
                cursor = (rect.x + pane_cursor[0], rect.y + 1 + pane_cursor[1])
        self.placed = placed  # what the echo lane changes in this frame
        bar_line = self._bar_line
        for bar in geometry.bars:
            for y in range(bar.y, bar.bottom):
                grid[y].append((bar.x, bar_line))
        return grid, cursor

    def _join_rows(self, grid: list[list[tuple[int, Line]]], body_w: int,
                   side: int) -> list[Line]:
        """The body rows, with the sidebar; a row whose pieces did not change is reused."""
        body_h = len(grid)
        out: list[Line] = []
        side_lines = self._sidebar(side, body_h) if side else []
        memo = self.rows_memo if len(self.rows_memo) == body_h else [None] * body_h
        for y in range(body_h):
            # Tiles are placed in the same order every frame: the pieces need
            # sorting only when the row is joined again.
            key = (grid[y], side_lines[y] if side else None, body_w)
            held = memo[y]
            if held is not None and held[0] == key:  # the same pieces: joined already
                out.append(held[1])
                continue
            row, where = placed_pieces(sorted(key[0], key=lambda seg: seg[0]), body_w)
            if side:
                row = (row[0] + side_lines[y][0], row[1] + side_lines[y][1])
            memo[y] = (key, row, where)
            out.append(row)
        self.rows_memo = memo
        return out

    def _pane_lines(self, role: str, width: int, height: int, focused: bool,
                    colors: int) -> tuple[list[Line], tuple[int, int] | None]:
        """A pane's rows: as last drawn while its new output waits for the frame
        budget (keys first) or an echo is drawn elsewhere, else from its
        terminal, re-arming its wake-up."""
        pane = self.model.state.pane(role)
        terminal = self.port.terminal(role)
        lane = self.echo_role
        if self.pacer.waiting(role) or (lane is not None and role != lane):
            # Waiting for the frame budget, or a neighbour of an echo drawn
            # by the echo lane: as last drawn.
            held = pane.cached(width, height, focused, colors, terminal)
            if held is not None:
                return held
        self.pacer.taken(role)
        if terminal is not None:
            self.pacer.watch(role, terminal)
            terminal.take_dirty()
        return pane.content(terminal, width, height, focused=focused, colors=colors)

    def _sidebar(self, width: int, height: int) -> list[Line]:
        """The cards, built again only when something they show changed."""
        state = self.model.state
        layout = state.layout
        infos = [state.roles[n] for n in layout.roster if n in state.roles]
        tasks = self._current_tasks()
        # Copies: RoleInfo objects change in place.
        key = (width, height, layout.focus, tuple(layout.shown()),
               [(dict(vars(info)), repr(info.extra), repr(info.usage)) for info in infos],
               repr(sorted(tasks.items())))
        if self._side_memo is not None and self._side_memo[0] == key:
            return self._side_memo[1]
        lines = sidebar.render(infos, width, height, focus=layout.focus,
                               shown=set(layout.shown()), tasks=tasks, spans=self.card_spans)
        self._side_memo = (key, lines)
        return lines

    def _title(self, role: str, width: int, focused: bool, number: int,
               tasks: dict[str, dict]) -> Line:
        """A tile's title row, built again only when what it shows changed
        (every frame draws every title; an echo frame must stay cheap)."""
        state = self.model.state
        info = state.roles.get(role) or RoleInfo(role)
        task = tasks.get(role)
        pane = state.panes.get(role)
        scroll = pane.scroll if pane is not None else None
        key = (width, focused, number, info.status, info.detail,
               task and (task["id"], task.get("label")),
               scroll and (scroll.offset, scroll.query, scroll.current, len(scroll.matches)),
               state.layout.zoomed)
        held = self._title_memo.get(role)
        if held is not None and held[0] == key:
            return held[1]
        line = self._build_title(role, width, focused, number, info, task)
        self._title_memo[role] = (key, line)
        return line

    def _build_title(self, role: str, width: int, focused: bool, number: int,
                     info: RoleInfo, task: dict | None) -> Line:
        state = self.model.state
        base = "title focus" if focused else "title"
        style = base if focused else STATE_STYLE.get(info.status, "idle")
        pieces = [(f" {number} " if number else " ", base), (inert(role), base),
                  (f" {STATE_DOT.get(info.status, '●')} {sidebar.state_text(info)}", style)]
        if task:
            pieces.append((f"  {task['id']} {inert(task.get('label', ''))}", base))
        pane = state.panes.get(role)
        right = []
        if pane is not None and pane.scroll is not None:
            scroll = pane.scroll
            found = (f" {scroll.current + 1}/{len(scroll.matches)} “{inert(scroll.query)}”"
                     if scroll.query else "")
            right.append((f" ⇡{scroll.offset}{found} ", "status scroll"))
        if state.layout.zoomed and focused:
            right.append((" ZOOM ", "status accent"))
        fill = base if focused else None
        right_width = sum(len(text) for text, _ in right)
        left = clipped_line(max(width - right_width, 0), pieces, fill)
        if not right or right_width >= width:
            return join_pieces([(0, left)], width)
        tail = RowBuilder(right_width)
        for text, attr in right:
            tail.add(text, attr)
        return join_pieces([(0, left), (width - right_width, tail.line())], width)

    def _current_tasks(self) -> dict[str, dict]:
        """Each role's current task: the newest open one."""
        current: dict[str, dict] = {}
        for task in self.model.state.tasks.values():
            if task.get("state") in ("queued", "delivered", "timed-out", "gated"):
                current[task["role"]] = task
        return current

    def _status_line(self, cols: int, chrome: Chrome) -> Line:
        state = self.model.state
        key = statusline.shown(state, chrome, cols)
        held = self._status_memo
        if held is not None and held[0] == key:
            return held[1]
        line = statusline.render(state, chrome, cols)
        self._status_memo = (key, line)
        return line

    # -- the echo lane's rows -----------------------------------------------------------

    def on_screen(self, role: str, dirty: bool) -> bool:
        """``role``'s pane is drawn: in the last frame, when nothing changed
        since (``dirty`` false: the common case, without walking the layout),
        else in the layout as it is now."""
        if not dirty:
            return role in self.placed
        return role in self.model.state.layout.visible()

    def echo_rows(self, role: str, rows: int, mode: str
                  ) -> tuple[list, tuple[int, int] | None, list[int]] | None:
        """The last frame with ``role``'s changed rows put in, the cursor and
        the screen rows changed; None when that frame is not known row by row
        (the caller renders it whole)."""
        placed = self.placed.get(role)
        painted = self.screen._painted
        terminal = self.port.terminal(role)
        if (placed is None or painted is None or len(painted) != rows or terminal is None
                or mode != "normal"):
            return None
        rect, focused, old = placed
        if not focused:
            return None
        self.pacer.taken(role)
        terminal.take_dirty()
        lines, pane_cursor = self.model.state.pane(role).content(
            terminal, rect.w, rect.h - 1, focused=True, colors=self.screen.colors)
        if len(lines) != len(old):
            return None
        frame = list(painted)
        top = rect.y + 1
        # The pane's rows that are new objects: an echo makes one.
        changed = [top + dy for dy, line in enumerate(lines) if line is not old[dy]]
        for y in changed:
            if not self.swap_row(frame, y, rect.x, old[y - top], lines[y - top]):
                return None
        self.placed[role] = (rect, focused, lines)
        self.lane_rows += 1
        cursor = None
        if pane_cursor is not None:
            cursor = (rect.x + pane_cursor[0], rect.y + 1 + pane_cursor[1])
        return frame, cursor, changed

    def echo_spot(self, role: str, x: int, y: int, width: int) -> tuple[int, int] | None:
        """The screen cell showing ``role``'s terminal cell ``(x, y)`` in the
        last frame, when that is the focused pane's live screen, ``width``
        columns from there and the cursor after them stay in its tile and
        keys go to that pane alone; else None."""
        placed = self.placed.get(role)
        state = self.model.state
        if placed is None or not placed[1] or state.broadcast:
            return None  # broadcast: the other panes' echoes, drawn whole, show this one as cached
        pane = state.panes.get(role)
        if pane is None or pane.scroll is not None:
            return None
        rect = placed[0]
        col, row = x - pane.origin[0], y - pane.origin[1]
        if col < 0 or col + width >= rect.w or not 0 <= row < rect.h - 1:
            return None
        return rect.x + col, rect.y + 1 + row

    def echo_whole(self, role: str, cols: int, rows: int, chrome: Chrome) -> Frame:
        """The whole deck with ``role`` drawn from its terminal and every other
        pane as last drawn."""
        self.echo_role = role
        try:
            return self.render(cols, rows, True, chrome)
        finally:
            self.echo_role = None

    def swap_row(self, frame: list, y: int, x: int, was: Any, line: Any) -> bool:
        """Put ``line`` where the tile at column ``x`` showed ``was`` in screen
        row ``y``: the rest of that row stays as the last frame had it.  The
        two are as wide, so the new piece's bytes and runs replace the old
        ones in place, and the pieces after it only move in the byte count."""
        memo = self.rows_memo
        held = memo[y] if y < len(memo) else None
        if held is None or frame[y] is not held[1]:
            return False
        (pieces, side, body_w), (raw, runs), where = held
        at = where.get(x)
        if at is None or (x, was) not in pieces:
            return False
        swapped = [(px, line if px == x else piece) for px, piece in pieces]
        byte, run = at
        new_raw, new_runs = line
        row = (raw[:byte] + new_raw + raw[byte + len(was[0]):],
               runs[:run] + new_runs + runs[run + len(was[1]):])
        grown, more = len(new_raw) - len(was[0]), len(new_runs) - len(was[1])
        if grown or more:
            where = {px: (spot[0] + grown, spot[1] + more) if spot and px > x else spot
                     for px, spot in where.items()}
        memo[y] = ((swapped, side, body_w), row, where)
        frame[y] = row
        return True



def join_pieces(segments: list[tuple[int, Line]], width: int) -> Line:
    """Pieces placed at their columns, in column order, as one row ``width``
    wide (blanks between and after them)."""
    return placed_pieces(segments, width)[0]


def placed_pieces(segments: list[tuple[int, Line]], width: int
                  ) -> tuple[Line, dict[int, tuple[int, int] | None]]:
    """The joined row, and where each piece went in it: its column mapped to
    the offset of its first byte and of its first attribute run (runs are
    never merged across pieces, so a piece can be replaced in place); None
    for a column two pieces start at (neither is found by it)."""
    data: list[bytes] = []
    attrs: list[tuple[Any, int]] = []
    where: dict[int, tuple[int, int] | None] = {}
    col = size = 0
    for x, (raw, runs) in segments:
        if x > col:
            gap = blank_line(x - col)
            data.append(gap[0])
            attrs += gap[1]
            size += len(gap[0])
            col = x
        where[x] = (size, len(attrs)) if x not in where else None
        data.append(raw)
        attrs += runs
        size += len(raw)
        col += bytes_width(raw)
    if col < width:
        gap = blank_line(width - col)
        data.append(gap[0])
        attrs += gap[1]
    return (b"".join(data), attrs), where
