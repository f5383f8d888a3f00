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
import threading
from collections.abc import Callable
from typing import Any, Protocol

from choragos.session import hopstamps
from choragos.ui.deckdraw import Renderer
from choragos.ui.deckpace import FramePacer
from choragos.ui.ptyscreen import PtyScreen
from choragos.ui.statusline import Chrome

log = logging.getLogger("choragos.deck")


class LaneHost(Protocol):
    """What the lane asks the deck, under the drawing lock."""

    dirty: bool  # something besides the echo waits to be drawn

    def shows_panes(self, size: tuple[int, int]) -> bool:
        """A client is attached and sees the panes alone (no dialog, no
        editor), drawn at ``size`` (no resize on its way)."""

    def chrome(self) -> Chrome: ...


class EchoLane:
    """The drawing lock, and the echo frames drawn on the feeding thread."""

    def __init__(self, host: LaneHost, renderer: Renderer, screen: PtyScreen,
                 pacer: FramePacer, echo_drawn: Callable[[str], None]) -> None:
        self.host = host
        self.renderer = renderer
        self.screen = screen
        self.pacer = pacer
        self.echo_drawn = echo_drawn
        self.drawing = threading.Lock()  # held by the loop's work and the echo lane
        self.open = False  # a frame was drawn for the attached client
        self.frames = 0  # frames the echo lane drew
        self.missed = 0  # echoes left to the loop because it held the lock
        self.sent_ahead = 0  # echoes whose characters went out before their frame

    def close(self) -> None:
        """No echo frame until the loop drew one for an attached client."""
        self.open = False

    def locked(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """``callback`` run under the drawing lock; a crash closes the lane
        first (the loop is going down, and its screen with it)."""
        @functools.wraps(callback)
        def run(*args: Any) -> Any:
            with self.drawing:
                try:
                    return callback(*args)
                except BaseException:
                    self.open = False
                    raise
        return run

    def draw(self, role: str) -> bool:
        """Draw ``role``'s new output now, on this thread; False (nothing
        done) when the loop must: it is busy, or the deck shows more than
        its panes (a dialog, the editor, a resize on its way)."""
        if not self.drawing.acquire(blocking=False):
            # The loop is busy and will draw it, in turn; the next feed of
            # this pane's echo tries the lane again rather than wait for it.
            terminal = self.pacer.watched.get(role)  # the terminal whose change called us
            if terminal is not None:
                terminal.rearm()
            self.missed += 1
            if hopstamps.ON:
                hopstamps.mark("lane-missed", role)
            return False
        try:
            return self._frame(role)
        except Exception:
            # Never the reader's failure, never a pane left undrawn: the
            # loop draws it (and crashes, supervised, if it fails there too);
            # its next frame opens the lane again.
            return self._closed()
        finally:
            self.drawing.release()

    def _closed(self) -> bool:
        """The lane failed: said in the log and shut until the next frame; False."""
        log.exception("the echo lane failed; the deck's loop draws instead")
        self.open = False
        return False

    def send_ahead(self, role: str, text: str, x: int, y: int) -> bool:
        """``role``'s terminal just wrote ``text`` plainly at its cell ``(x, y)``
        (``Terminal.on_echo``, on the feeding thread): while ``role`` is
        typed into, that is the key's echo; send those characters to the client now,
        where the pane shows that cell, before the frame that draws the
        echo is built (which then writes only what still differs).  True
        when sent: that frame waits until the output pauses (the reader's
        lull), for the rest of an echo that came in pieces, and so that the
        reader goes back to its PTY at once instead of building, while the
        client is waking to read the echo, a frame that writes nothing
        (about 130 Python calls).  False when nothing was sent: the loop
        holds the lock, the deck shows more than its panes or something
        else waits to be drawn, or the cell is not on the screen with room
        after it, or ``role`` is not being typed into."""
        if not self.pacer.echoing(role) or not self.drawing.acquire(blocking=False):
            return False
        try:
            size = self.screen.get_cols_rows()
            if not self.open or self.host.dirty or not self.host.shows_panes(size):
                return False
            spot = self.renderer.echo_spot(role, x, y, len(text))
            if spot is None:
                return False
            if not self.screen.echo_at(text, *spot):
                return False
            self.sent_ahead += 1
        except Exception:
            return self._closed()
        finally:
            self.drawing.release()
        # On the screen: the other panes' output need not wait for its frame.
        self.echo_drawn(role)
        return True

    def _frame(self, role: str) -> bool:
        size = self.screen.get_cols_rows()
        dirty = self.host.dirty
        if (not self.open or not self.host.shows_panes(size)
                or not self.renderer.on_screen(role, dirty)):
            return False
        chrome = self.host.chrome()
        # With nothing else waiting to be drawn, only the pane's changed rows
        # are joined again; else the whole deck is rendered, neighbours as
        # last drawn.
        frame = None if dirty else self.renderer.echo_rows(role, size[1], chrome.mode)
        if frame is None:
            frame = (*self.renderer.echo_whole(role, *size, chrome), None)
        lines, cursor, only = frame
        if not self.screen.paint(lines, cursor, size, only):
            return False
        # Not a frame of the loop's: neighbours' output waiting for its budget
        # keeps waiting, and the budget is not reset.
        self.frames += 1
        self.echo_drawn(role)
        return True
