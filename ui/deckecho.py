"""The echo lane: a key's echo drawn on the thread that read it.

A keystroke typed at an agent comes back as the agent's output, read by the
pane's PTY reader thread.  Handing that to the deck's loop costs a wake-up
of another thread, and on a machine busy with flooding panes every hand-over
waits its turn for the interpreter.  So while a pane is being typed into,
the reader that fed its echo draws the frame itself: it takes the deck's
drawing lock (without waiting: if the loop holds it, the echo goes the usual
way), renders the plain deck with every other pane as it was last drawn,
and writes only the rows that changed.  The loop holds the same lock for
everything it runs (posted work, alarms, frames), so the lane sees the deck
whole or not at all.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("choragos.deck")


class DeckEcho:
    """Mixed into Deck: the drawing lock and the echo lane."""

    def locked(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """``callback`` run under the drawing lock; a crash closes the lane
        first (the loop is going down, and its screen with it)."""
        @functools.wraps(callback)
        def run(*args: Any) -> Any:
            with self.drawing:
                try:
                    return callback(*args)
                except BaseException:
                    self.lane_open = False
                    raise
        return run

    def echo_lane(self, role: str) -> bool:
        """Draw ``role``'s new output now, on this thread; False (nothing
        done) when the loop must: it is busy, or the deck shows more than
        its panes (a dialog, the editor, a resize on its way)."""
        if not self.drawing.acquire(blocking=False):
            # The loop is busy and will draw it, in turn; the next feed of
            # this pane's echo tries the lane again rather than wait for it.
            terminal = self._watched.get(role)  # the terminal whose change called us
            if terminal is not None:
                terminal.rearm()
            self.lane_missed += 1
            return False
        try:
            return self._echo_frame(role)
        except Exception:
            # Never the reader's failure, never a pane left undrawn: the
            # loop draws it (and crashes, supervised, if it fails there too);
            # its next frame opens the lane again.
            log.exception("the echo lane failed; the deck's loop draws instead")
            self.lane_open = False
            return False
        finally:
            self.drawing.release()

    def _echo_frame(self, role: str) -> bool:
        loop = self.loop
        if (not self.lane_open or not self.attached or loop is None
                or loop.widget is not self.view or self.editor is not None
                or not self._on_screen(role)):
            return False
        size = self.screen.get_cols_rows()
        if loop.screen_size != size:
            return False
        # With nothing else waiting to be drawn, only the pane's changed rows
        # are joined again; else the whole deck is rendered, neighbours as
        # last drawn.
        frame = None if self.dirty else self._echo_rows(role, size[1])
        if frame is None:
            self._echo_role = role
            try:
                frame = (*self.render_base(*size, True), None)
            finally:
                self._echo_role = None
        lines, cursor, only = frame
        if not self.screen.paint(lines, cursor, size, only):
            return False
        # Not a frame of the loop's: neighbours' output waiting for its budget
        # keeps waiting, and the budget is not reset.
        self.frames += 1
        self.echo_frames += 1
        self.port.echo_drawn(role)
        return True

    def _on_screen(self, role: str) -> bool:
        """``role``'s pane is drawn: in the last frame, when nothing changed
        since (the common case, without walking the layout), else in the
        layout as it is now."""
        if not self.dirty:
            return role in self._placed
        return role in self.state.layout.visible()

    def _echo_rows(self, role: str, rows: int
                   ) -> tuple[list, tuple[int, int] | None, list[int]] | None:
        """The last frame with ``role``'s changed rows put in, the cursor and
        the screen rows changed; None when that frame is not known row by row
        (the caller renders it whole)."""
        placed = self._placed.get(role)
        painted = self.screen._painted
        terminal = self.port.terminal(role)
        if (placed is None or painted is None or len(painted) != rows or terminal is None
                or self.mode != "normal"):
            return None
        rect, focused, old = placed
        if not focused:
            return None
        self._changed.discard(role)
        terminal.take_dirty()
        lines, pane_cursor = self.state.pane(role).content(
            terminal, rect.w, rect.h - 1, focused=True, colors=self.screen.colors)
        if len(lines) != len(old):
            return None
        frame = list(painted)
        top = rect.y + 1
        # The pane's rows that are new objects: an echo makes one.
        changed = [top + dy for dy, line in enumerate(lines) if line is not old[dy]]
        for y in changed:
            if not self._swap_row(frame, y, rect.x, old[y - top], lines[y - top]):
                return None
        self._placed[role] = (rect, focused, lines)
        self.lane_rows += 1
        cursor = None
        if pane_cursor is not None:
            cursor = (rect.x + pane_cursor[0], rect.y + 1 + pane_cursor[1])
        return frame, cursor, changed

    def _swap_row(self, frame: list, y: int, x: int, was: Any, line: Any) -> bool:
        """Put ``line`` where the tile at column ``x`` showed ``was`` in screen
        row ``y``: the rest of that row stays as the last frame had it.  The
        two are as wide, so the new piece's bytes and runs replace the old
        ones in place, and the pieces after it only move in the byte count."""
        memo = self._rows_memo
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
