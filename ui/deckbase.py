"""What the parts of the deck share: its timings, its port into the
session, the attached client's description, and small helpers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from choragos import namedfile
from choragos.config.model import Config
from choragos.terminal.emulator import Terminal
from choragos.ui.theme import TRUECOLOR

log = logging.getLogger("choragos.deck")

FRAME = 0.03            # new output of shown panes is drawn at most this often ...
BUSY_FRAME = 0.1        # ... and of panes not typed into while the user types (keys first)
FAST_WINDOW = 0.25      # a pane typed into is drawn at once for this long (echo latency)
PACE_BACKLOG = 16 * 1024  # client bytes in flight past which neighbours' frames wait
OVERLAY_REFRESH = 1.0   # an open dialog's clocks (waiting time, ages) tick this often
TMUX_HINT = ("inside tmux: C-b is tmux's prefix too; press it twice, or set [keys] "
             'prefix = "ctrl+a"')
ESC_WAIT = 0.03         # a lone ESC is the Escape key after this long
MESSAGE_TIME = 6.0
AUTO_FOCUS_PAUSE = 20.0  # after the user touched a pane, auto-focus waits this long
COMMAND_TIMEOUT = 4.0
MAX_CRASHES = 5


class SessionPort(Protocol):
    """What the deck needs from the session (see ui.uiactor.SessionAccess)."""

    config: Config
    workdir: Path

    def dispatch(self, request: dict) -> dict: ...
    def tell_role(self, role: str, message: Any) -> None: ...
    def type_keys(self, role: str, data: bytes) -> None: ...
    def expect_echo(self, role: str, size: int) -> None: ...
    def type_echoed(self, role: str, data: bytes) -> bool: ...
    def echo_drawn(self, role: str) -> None: ...
    def terminal(self, role: str) -> Terminal | None: ...


class DeckHost(Protocol):
    """What the parts of the deck ask of the deck's loop, which owns them."""

    def say(self, text: str, style: str = "status message",
            seconds: float = MESSAGE_TIME) -> None:
        """Show ``text`` on the status line for ``seconds``."""

    def post(self, work: Callable[[], bool | None], wake: bool = True) -> None:
        """Run ``work`` on the loop's thread."""

    def relayout(self) -> None:
        """The tiling changed: tell the panes their sizes."""

    def redraw(self) -> None:
        """What is shown changed: draw a frame."""

    def sync(self) -> None:
        """Ask the core for the whole picture again."""

    def detach(self, reason: str = "detached") -> None:
        """Send the client away; the team keeps working."""


@dataclass
class ClientInfo:
    """The attached client and its terminal: pid, size, TERM, colours, editor, inside tmux."""

    pid: int = 0
    cols: int = 160
    rows: int = 48
    term: str = "xterm-256color"
    colors: int = 256
    editor: str = ""
    in_tmux: bool = False  # the client's terminal is a tmux pane



def read_text(path: str, limit: int = 512 * 1024) -> str:
    try:  # a path from the wire: a FIFO there must not hold the deck
        text = namedfile.read_regular(path, 4 * limit + 4).decode("utf-8", errors="replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror or exc})"
    if len(text) > limit:
        text = text[:limit] + "\n… (cut at 512 KiB)"
    return text


def colors_for(term: str, colorterm: str, no_color: bool = False) -> int:
    """The colour depth to draw with for a client terminal; 1 (bold and
    reverse video only) when its user set ``NO_COLOR``."""
    if no_color:
        return 1
    if colorterm.lower() in ("truecolor", "24bit"):
        return TRUECOLOR
    return 256
