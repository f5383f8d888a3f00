"""An urwid screen that draws into a pseudo-terminal of its own.

The deck runs inside the session server, which has no terminal.  urwid's
raw screen writes its escape sequences to the slave side of a private PTY;
whoever holds :attr:`PtyScreen.master` (the attach server) relays them to
the client's real terminal.  The size is whatever the attached client says:
:meth:`set_size` sets it on the PTY and wakes urwid as a SIGWINCH would.

Input does not come through here: the deck takes the client's bytes itself
(see :mod:`ui.keys`), so the screen watches no input and sends the terminal
no queries (their answers would arrive mixed with the user's typing).
Signals are left alone too: this runs on a thread that is not the main one.

:meth:`PtyScreen.set_sink` hands every frame straight to a consumer (the
attach server, which sends it to the client from the drawing thread)
instead of through the PTY: a keystroke's echo then crosses no PTY and
waits for no relay thread.  The PTY stays the default, and it still carries
the window size urwid reads.

:meth:`PtyScreen.paint` is the deck's fast path for frames without a dialog:
it writes only the rows that differ from the last frame -- of a row only the
columns that changed, when bytes are columns -- without building an urwid
canvas, so a keystroke's echo costs a few bytes, not a screen.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import termios
from collections.abc import Callable
from typing import Any

from urwid.display import escape, raw

from choragos.ui.pane import bytes_width
from choragos.ui.rowdiff import changed_span, runs_between

Line = tuple[bytes, list[tuple[Any, int]]]
_UNKNOWN = object()  # the pen of a terminal something else wrote to last
_UNSURE: Line = (b"", [])  # a row whose cells are not known: differs from any


class _NoInput:
    """An input with no file descriptor: urwid then reads and probes nothing."""


class PtyScreen(raw.Screen):
    def __init__(self, cols: int = 160, rows: int = 48, colors: int = 256) -> None:
        self._sink: Callable[[bytes], None] | None = None
        self._held: list[str] = []  # written for the sink, not flushed yet
        self._cols_rows = (cols, rows)
        # os.openpty, not pty.openpty (the same call where there is one): the
        # pty module and its tty would stay loaded in the server for this alone.
        self.master, slave = os.openpty()
        os.set_blocking(self.master, False)
        # Output exactly as urwid writes it, with the usual tty post-processing.
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~(termios.ECHO | termios.ICANON)
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        self._slave = os.fdopen(slave, "w", encoding="utf-8", errors="replace",
                                buffering=1 << 16)
        super().__init__(input=_NoInput(), output=self._slave, bracketed_paste_mode=True,
                         focus_reporting=False)
        self.term = "xterm-256color"
        self.set_terminal_properties(colors=colors)
        self._set_winsize(cols, rows)
        # What the client's terminal shows after our last frame, when we know
        # it row by row (None: the next frame must be a full urwid draw).
        self._painted: list[Line] | None = None
        self._painted_size: tuple[int, int] | None = None
        self._painted_cursor: tuple[int, int] | None = None
        # The attribute in force on the client's terminal after our last frame,
        # when that frame was paint's and nothing was written since (see write).
        self._pen: Any = _UNKNOWN
        self._ahead = {}  # rows written to outside a frame (see _ahead)
        self.rows_written = 0  # rows sent by paint, ever (tests count them)

    # -- where frames go ---------------------------------------------------------

    def set_sink(self, sink: Callable[[bytes], None] | None) -> None:
        """Give every flushed frame to ``sink`` (bytes, called on the drawing
        thread) instead of the PTY; None goes back to the PTY."""
        self.flush()
        self._sink = sink

    def restart(self) -> None:
        """Start afresh for a newly attached terminal: alternate screen, modes,
        then frames.  What stopping writes is for the terminal that left and
        is dropped: leaving the alternate screen on a terminal that is not in
        it restores a cursor saved by some earlier program, the switch that
        follows would save that one, and the shell would come back there."""
        self.flush()
        sink, self._sink = self._sink, lambda data: None
        try:
            self.stop()
            self.flush()
        finally:
            self._sink = sink
        self.start()

    def write(self, data: str) -> None:
        self._pen = _UNKNOWN  # urwid draws: its pen and cursor are its own
        if self._sink is None:
            super().write(data)
        else:
            self._held.append(data)

    def flush(self) -> None:
        if self._sink is None or not self._held:
            super().flush()
            return
        data, self._held = "".join(self._held), []
        # As the PTY's output processing would (ONLCR): a newline moves to column 0.
        self._sink(data.encode("utf-8", "replace").replace(b"\n", b"\r\n"))

    # -- size ------------------------------------------------------------------

    def _set_winsize(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self._cols_rows = (cols, rows)

    def get_cols_rows(self) -> tuple[int, int]:
        """The size last set: only :meth:`set_size` changes it, so no frame
        needs to ask the PTY."""
        return self._cols_rows

    def set_size(self, cols: int, rows: int) -> None:
        """The client's window changed: take its size and redraw."""
        if (cols, rows) == self.get_cols_rows():
            return
        self._set_winsize(cols, rows)
        self._sigwinch_handler()

    def configure(self, term: str, colors: int) -> None:
        """Draw for the client's terminal type and colour depth."""
        self.term = term or "xterm-256color"
        if colors != self.colors:
            self.set_terminal_properties(colors=colors)

    def redraw_all(self) -> None:
        """Forget what the terminal shows, so the next draw paints everything."""
        self.screen_buf = None
        self._screen_buf_canvas = None
        self._drawn_rows = []
        self._painted = None
        self._ahead = {}

    # -- the fast path -------------------------------------------------------------

    @property
    def _ahead(self) -> dict[int, Line]:
        """Rows written to outside a frame (an echo sent ahead of it): what the
        client shows there now, which the next paint diffs against (_UNSURE:
        not known, written whole).  The echoes noted since the last look are
        worked in here, in the order they were written."""
        ahead = self._ahead_rows
        if self._echoed:
            old = self._painted
            for text, x, y in self._echoed:
                ahead[y] = _with_text(ahead.get(y, old[y]), x, text.encode())
            self._echoed.clear()
        return ahead

    @_ahead.setter
    def _ahead(self, rows: dict[int, Line]) -> None:
        self._ahead_rows = rows
        self._echoed: list[tuple[str, int, int]] = []

    def drawn_whole(self, lines: list[Line] | None, cursor: tuple[int, int] | None,
                    size: tuple[int, int]) -> None:
        """urwid just drew a frame; ``lines`` is what it shows, when known
        (None when a dialog was drawn over them)."""
        self._painted = list(lines) if lines is not None else None
        self._painted_size, self._painted_cursor = size, cursor
        self._ahead = {}

    def echo_at(self, text: str, x: int, y: int) -> bool:
        """Write ``text`` (printable ASCII, in the default colours) at cell
        ``(x, y)`` now, ahead of the frame that draws it: a key's echo on
        the client's screen before the deck has built its row.  Written as
        paint would write it (only the text, where the cursor already stands
        in the default pen), and noted, so the next paint writes only what
        still differs; False (nothing written) before the first frame."""
        old = self._painted
        if old is None or not 0 <= y < len(old):
            return False
        known = self._pen is not _UNKNOWN
        out = []
        if not known or self._painted_cursor != (x, y):
            out.append(escape.set_cursor_position(x, y))
        if not known or self._pen is not None:
            out.append(self._attr_to_escape(None))
        out.append(text)
        if self._sink is not None and not self._held:
            # As write and flush would send it, without their steps: escapes
            # and printable ASCII, no newline to translate.
            self._sink("".join(out).encode())
        else:
            self.write("".join(out))
            self.flush()
        # Noted as written, worked into the rows (see _ahead) once a frame
        # or a look needs them: not on the reader's thread after the write,
        # where the client's kworker waits behind whatever runs on.
        self._echoed.append((text, x, y))
        self._painted_cursor = (x + len(text), y)
        self._pen = None
        return True

    def paint(self, lines: list[Line], cursor: tuple[int, int] | None,
              size: tuple[int, int], only: list[int] | None = None) -> bool:
        """Write the rows of ``lines`` that differ from the last frame and place
        the cursor; False (nothing written) when a full draw is needed.
        ``only``: the rows that may differ, when the caller knows (an echo
        changes one), in top-to-bottom order."""
        old = self._painted
        if (old is None or not self._started or self._resized or size != self._painted_size
                or len(lines) != len(old)):
            return False
        out: list[str] = []
        # Where the client's cursor is and which attribute is in force, as
        # our last frame left them; unknown after anything else was written.
        known = self._pen is not _UNKNOWN
        at = self._painted_cursor if known else None
        attr = self._pen if known else _UNKNOWN
        moved = False
        rows = range(len(lines)) if only is None else only
        ahead = self._ahead
        if ahead:
            rows = sorted({*rows, *(y for y in ahead if y < len(lines))})
        for y in rows:
            line = lines[y]
            was = ahead.get(y)
            if was is None:
                was = old[y]
                if line is was or line == was:
                    continue
            raw_bytes, runs = line
            start, end, column = changed_span(was, line)
            if start >= end:
                continue  # the same text in the same attributes, split otherwise
            runs = runs_between(runs, start, end)
            if at != (column, y):
                out.append(escape.set_cursor_position(column, y))
                moved = True
            attr, at = self._row_out(out, raw_bytes[start:end], runs, attr,
                                     to_the_end=end == len(raw_bytes), at=(column, y))
            self.rows_written += 1
        self._painted = list(lines)
        self._ahead = {}
        if not out and cursor == self._painted_cursor:
            return True
        if cursor is not None and at != cursor:
            out.append(escape.set_cursor_position(*cursor))
            moved = True
        self.write(self._frame(out, cursor, hide=moved or not known
                               or self._painted_cursor is None))
        self.flush()
        self._painted_cursor = cursor
        self._pen = attr
        if cursor is not None:
            self._cy = cursor[1]
        # urwid's own record of the screen is stale now: its next draw is whole.
        self.screen_buf = None
        return True

    def _frame(self, out: list[str], cursor: tuple[int, int] | None, hide: bool) -> str:
        """The frame's escapes: a cursor that moves around is hidden while it
        does (a keystroke's echo written where the cursor stands needs neither)."""
        frame = "".join(out)
        if hide or cursor is None:
            frame = escape.HIDE_CURSOR + frame
            if cursor is not None:
                frame += escape.SHOW_CURSOR
        if self.modes.synchronized_output:
            enable = escape.PrivateMode.SYNCHRONIZED_OUTPUT
            frame = f"{enable.enable_seq}{frame}{enable.disable_seq}"
        return frame

    def _row_out(self, out: list[str], raw_bytes: bytes, runs: list[tuple[Any, int]],
                 attr: Any, to_the_end: bool,
                 at: tuple[int, int]) -> tuple[Any, tuple[int, int]]:
        """Escapes writing ``raw_bytes`` in ``runs`` from ``at``, the cursor;
        returns the attribute in force after them and the column and row the
        cursor is at then.  (At the right margin that column is one past the
        last: a terminal keeps its cursor on the last column, wrap pending,
        and no frame's cursor is ever taken to be there, so it is moved.)"""
        pos, last = 0, len(runs) - 1
        shown = raw_bytes  # what moves the cursor
        for i, (a, size_of_run) in enumerate(runs):
            if a != attr:  # always, the first time, after something else wrote
                out.append(self._attr_to_escape(a))
                attr = a
            text = raw_bytes[pos:pos + size_of_run].decode("utf-8", "replace")
            if to_the_end and i == last and a is None and text.endswith(" "):
                # Blanks in default colours to the end: erase them instead.
                text = text.rstrip(" ")
                shown = raw_bytes[:pos] + text.encode("utf-8", "replace")
                text += escape.ERASE_IN_LINE_RIGHT
            pos += size_of_run
            out.append(text)
        return attr, (at[0] + bytes_width(shown), at[1])

    def bell(self) -> None:
        if self.started:
            self.write("\a")
            self.flush()

    # -- what a screen in a thread must not do -------------------------------------

    def signal_init(self) -> None:
        """Resizes come from :meth:`set_size`, never from SIGWINCH."""

    def signal_restore(self) -> None:
        pass

    def tty_signal_keys(self, *args: Any, **kwargs: Any) -> None:
        return None

    def close(self) -> None:
        # The master first: a drawing thread blocked writing a frame nobody
        # reads (the buffer full) holds the slave file's lock, so closing the
        # slave first would wait for it forever.  A closed master hangs the
        # PTY up, and that write fails at once.
        for close in (lambda: os.close(self.master), self._slave.close):
            with contextlib.suppress(OSError, ValueError):
                close()



def _with_text(line: Line, x: int, text: bytes) -> Line:
    """``line`` with ``text`` (ASCII) written over its cells from column ``x``
    in the default attribute; _UNSURE when its bytes up to there are not one
    a column."""
    raw, runs = line
    end = x + len(text)
    if line is _UNSURE or end > len(raw) or not raw[:end].isascii():
        return _UNSURE
    return (raw[:x] + text + raw[end:],
            [*runs_between(runs, 0, x), (None, len(text)), *runs_between(runs, end, len(raw))])
