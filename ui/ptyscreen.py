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
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import struct
import termios
from typing import Any

from urwid.display import raw


class _NoInput:
    """An input with no file descriptor: urwid then reads and probes nothing."""


class PtyScreen(raw.Screen):
    def __init__(self, cols: int = 160, rows: int = 48, colors: int = 256) -> None:
        self.master, slave = pty.openpty()
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

    # -- size ------------------------------------------------------------------

    def _set_winsize(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

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
        for close in (self._slave.close, lambda: os.close(self.master)):
            with contextlib.suppress(OSError):
                close()

