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
from collections.abc import Callable
from typing import Any


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
            return False
        try:
            return self._echo_frame(role)
        finally:
            self.drawing.release()

    def _echo_frame(self, role: str) -> bool:
        loop = self.loop
        if (not self.lane_open or not self.attached or loop is None
                or loop.widget is not self.view or self.editor is not None
                or role not in self.state.layout.visible()):
            return False
        size = self.screen.get_cols_rows()
        if loop.screen_size != size:
            return False
        self._echo_role = role
        try:
            lines, cursor = self.render_base(*size, True)
        finally:
            self._echo_role = None
        if not self.screen.paint(lines, cursor, size):
            return False
        # Not a frame of the loop's: neighbours' output waiting for its budget
        # keeps waiting, and the budget is not reset.
        self.frames += 1
        self.echo_frames += 1
        return True
