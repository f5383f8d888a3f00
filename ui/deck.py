"""The deck: the urwid application that shows the team and takes the keyboard.

It runs on a thread of its own inside the session server, drawing into a
private PTY (:class:`~ui.ptyscreen.PtyScreen`) that the attach server relays
to whoever is attached.  Other threads reach it only through :meth:`Deck.post`
and friends, which queue the work and wake the urwid loop through one
``watch_pipe`` (a burst of news costs one wake-up).  While nobody is
attached nothing is drawn; the state keeps up, so an attach shows the deck
exactly as it is.

The deck is the view of the UI actor (``ui/uiactor.py``): the actor owns it
and its state, and a crash of the loop is a crash of that supervised actor,
which its supervisor restarts like any other.  News from the core is
reduced to a new state and effects by ``ui/reducer.py``.

Every command the deck gives the session goes through the same ``Dispatch``
registry as the control socket (``gate``, ``restart``, ``pause``, ``resume``,
``reload``, ``board``, ``status``, ``rollback``), run on a worker thread so
a busy core never freezes the screen.  Keys typed at an agent are written
to its PTY on the deck's thread (``port.type_keys``: no hop through the role
actor); a pane's size follows its tile with ``Resize``.

The parts live in modules named for what they hold: the state
(``deckstate``) and its reducer (``reducer``), the loop and mailbox
(``deckloop``), the echo lane (``deckecho``), news and commands
(``decknews``), drawing (``deckdraw``) and
the status line (``statusline``), input (``deckinput``), dialogs
(``deckoverlays``), the task board (``deckboard``), the bound actions
(``deckactions``), the editor (``editor``) and what they share
(``deckbase``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import urwid

from choragos.news import News
from choragos.terminal import Terminal
from choragos.ui import keys as k
from choragos.ui.deckactions import DeckActions
from choragos.ui.deckbase import COMMAND_TIMEOUT, FRAME, ClientInfo, SessionPort, colors_for
from choragos.ui.deckboard import DeckBoard
from choragos.ui.deckdraw import DeckDraw
from choragos.ui.deckecho import DeckEcho
from choragos.ui.deckinput import DeckInput
from choragos.ui.deckloop import DeckLoop, DeckView, _Loop
from choragos.ui.deckmodel import DeckModel
from choragos.ui.decknews import DeckNews
from choragos.ui.deckoverlays import DeckOverlays
from choragos.ui.deckstate import DeckState, RoleInfo, initial_state
from choragos.ui.editor import DeckEditor, EditorPopup
from choragos.ui.pane import text_line
from choragos.ui.ptyscreen import PtyScreen

# How long a thread running Python code keeps the interpreter while another
# waits for it (CPython's default: 5 ms).  A keystroke's echo crosses the
# attach pump, the deck and the pane's reader thread; with flooding panes
# parsing on their readers, each hand-over waited up to the full interval.
SWITCH_INTERVAL = 0.0005

__all__ = ["COMMAND_TIMEOUT", "FRAME", "ClientInfo", "Deck", "DeckState", "EditorPopup",
           "RoleInfo", "SessionPort", "_Loop", "colors_for", "initial_state"]


class Deck(DeckLoop, DeckEcho, DeckNews, DeckDraw, DeckInput, DeckOverlays, DeckBoard,
           DeckActions, DeckEditor):
    """The deck application.  Thread-safe entry points: post, feed_input,
    client_attached, client_detached, resize, start, stop."""

    def __init__(self, port: SessionPort, cols: int = 160, rows: int = 48,
                 crash_log: Path | None = None) -> None:
        self.port = port
        self.config = port.config
        self.ui = self.config.ui
        self.keymap = k.Keymap.from_config(self.config.keys)
        self.screen = PtyScreen(cols, rows)
        saved = getattr(port, "saved_layout", lambda: None)()
        self.model = DeckModel(initial_state(self.config, self.ui.sidebar), saved)
        self.crash_log = crash_log or port.workdir / ".choragos" / "logs" / "crash.log"
        self.view = DeckView(self)
        self.attached = False
        self.dirty = True
        self.client = ClientInfo(cols=cols, rows=rows)
        self.on_detach: Callable[[str], None] = lambda reason: None
        self.on_crash: Callable[[str], None] = lambda reason: None  # for the event log
        # The UI actor crashes with the loop, so its supervisor sees the crash.
        self.on_loop_crash: Callable[[str], None] = lambda error: None
        self.mode = "normal"        # normal | prefix | resize
        self.message: tuple[str, str, float] | None = None
        self.overlay: urwid.Widget | None = None
        self.overlay_kind = ""
        self.editor: EditorPopup | None = None
        self.tokenizer = k.Tokenizer()
        self.loop: _Loop | None = None
        self._inbox: deque = deque()
        self._guard = threading.Lock()
        self._wake_fd: int | None = None
        self._wake_pending = False
        self._thread: threading.Thread | None = None
        self._ended = False  # the loop of the current thread is over (crashed)
        self._stopping = threading.Event()
        self._workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="deck-cmd")
        self._flush_alarm: Any = None
        self._frame_alarm: Any = None
        self._frame_due = False        # the frame budget is up: changed panes are drawn
        self._last_frame = 0.0
        self._changed: set[str] = set()  # shown panes with output not drawn yet
        self._watched: dict[str, Terminal] = {}  # terminals whose on_change wakes us
        self._typed: dict[str, float] = {}  # role -> until when it is drawn at once
        # The same, read by the echo lane on reader threads (written, never iterated).
        self._echo_until: dict[str, float] = {}
        self._echo_owed: set[str] = set()  # typed panes whose echo the loop's next frame draws
        self.drawing = threading.Lock()  # held by the loop's work and the echo lane
        self.lane_open = False  # a frame was drawn for the attached client
        self._echo_role: str | None = None  # the pane the echo lane draws
        self._placed: dict[str, tuple] = {}  # role -> (tile, focused, its rows) as last drawn
        self.echo_frames = 0           # frames the echo lane drew
        self.lane_rows = 0             # ... of them by joining only the typed pane's rows
        self.lane_missed = 0           # echoes left to the loop because it held the lock
        self._overlay_alarm: Any = None  # the open dialog's clock
        self._told_tmux = False
        self._bar_line = text_line(1, [("│", "bar")])
        # Per body row: (its pieces, the row joined, where each piece went in it).
        self._rows_memo: list[tuple | None] = []
        self._side_memo: tuple | None = None  # (what the cards showed, their rows)
        self._status_memo: tuple | None = None  # (what the status line showed, the row)
        self._title_memo: dict[str, tuple] = {}  # role -> (what its title showed, the row)
        self.wakeups = 0               # times the loop woke up for us (tests count them)
        self.frames = 0                # frames drawn
        self._user_active_until = 0.0
        self._inputs_waiting = 0  # client bytes posted to the loop, not acted on yet
        # Bytes sent to the client it has not read yet (set by the attach server).
        self.client_backlog: Callable[[], int] = lambda: 0
        self._board_selected: str | None = None
        self._card_spans: list[tuple[str, int, int]] = []  # sidebar rows per role, as drawn

    @property
    def state(self) -> DeckState:
        """What the deck shows (the model's; changed through ``model.apply``)."""
        return self.model.state

    # -- thread-safe entry points -------------------------------------------------

    def post(self, work: Callable[[], bool | None], wake: bool = True) -> None:
        """Run ``work`` on the loop's thread (it returns False when it needs no
        frame); a burst of posts costs one wake-up.  ``wake=False``: run it
        before whatever wakes the loop next, without waking it for this."""
        with self._guard:
            self._inbox.append(work)
            if not wake or self._wake_pending or self._wake_fd is None:
                return
            self._wake_pending = True
            fd = self._wake_fd
        with contextlib.suppress(OSError):
            os.write(fd, b"!")

    def news(self, item: News) -> None:
        """A state change published by the session core."""
        self.post(lambda: self._news(item))

    def feed_input(self, data: bytes) -> None:
        """The client's bytes (on the attach pump's thread).  Plain typing for
        the focused agent goes into its PTY from here; the rest is the deck's."""
        if self._keys_direct(data):
            return
        with self._guard:
            self._inputs_waiting += 1
        self.post(lambda: self._posted_input(data))

    def client_attached(self, info: ClientInfo) -> None:
        self.post(lambda: self._attach(info))

    def client_detached(self) -> None:
        self.post(self._detach)

    def resize(self, cols: int, rows: int) -> None:
        self.post(lambda: self._resized(cols, rows))

    @property
    def running(self) -> bool:
        """The loop runs (a crashed loop's thread may still be winding down)."""
        return self._thread is not None and self._thread.is_alive() and not self._ended

    def start(self) -> None:
        """Run the loop on a thread of its own (again, after a crash)."""
        if self._stopping.is_set() or self.running:
            return
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)  # the crashed loop has only its report left to do
        self._ended = False
        sys.setswitchinterval(SWITCH_INTERVAL)
        self._thread = threading.Thread(target=self._run, name="deck-ui", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self.post(self._exit)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._workers.shutdown(wait=False, cancel_futures=True)
        if self.editor is not None:
            self.editor.kill()

