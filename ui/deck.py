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

:class:`Deck` is the loop that owns the deck's parts and passes each only
what it needs: the model (``deckmodel``: the state, changed by the
``reducer``), the input router (``deckinput``: bytes -> intents) and the
actions that carry the intents out (``deckactions``), the renderer
(``deckdraw`` with the ``statusline``) and its echo lane (``deckecho``),
the frame pacer (``deckpace``), the overlay stack (``deckoverlays``, with
the ``editor``) and the dialogs on it: about tasks (``deckboard``) and the
start's notices (``deckoverlays`` too), and the
command runner (``deckcommands``).  It keeps the mailbox, the urwid loop
(``deckloop``), attach and detach, and carries out the reducer's effects.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import urwid

from choragos import statedir
from choragos.session.news import News
from choragos.ui import keys as k
from choragos.ui import reducer
from choragos.ui.deckactions import Actions
from choragos.ui.deckbase import (
    COMMAND_TIMEOUT,
    FRAME,
    MESSAGE_TIME,
    OVERLAY_REFRESH,
    TMUX_HINT,
    ClientInfo,
    SessionPort,
    colors_for,
)
from choragos.ui.deckboard import TaskDialogs
from choragos.ui.deckcommands import CommandRunner, answered
from choragos.ui.deckdraw import Frame, Renderer
from choragos.ui.deckecho import EchoLane
from choragos.ui.deckinput import InputRouter
from choragos.ui.deckkeys import KeyPath
from choragos.ui.deckloop import DeckView, Mailbox, _Loop
from choragos.ui.deckmodel import DeckModel
from choragos.ui.deckoverlays import OverlayStack, StartNotices
from choragos.ui.deckpace import FramePacer
from choragos.ui.deckstate import DeckState, RoleInfo, initial_state
from choragos.ui.pane import inert
from choragos.ui.ptyscreen import PtyScreen
from choragos.ui.statusline import Chrome
from choragos.ui.theme import build_palette

log = logging.getLogger("choragos.deck")

# How long a thread running Python code keeps the interpreter while another
# waits for it (CPython's default: 5 ms).  A keystroke's echo crosses the
# attach pump, the deck and the pane's reader thread; with flooding panes
# parsing on their readers, each hand-over waited up to the full interval.
SWITCH_INTERVAL = 0.0005

__all__ = ["COMMAND_TIMEOUT", "FRAME", "ClientInfo", "Deck", "DeckState", "RoleInfo",
           "SessionPort", "_Loop", "colors_for", "initial_state"]


class Deck:
    """The deck application.  Thread-safe entry points: post, news, feed_input,
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
        # Told on the deck's thread once an attached client's first frame has
        # gone out (after the drawing lock is let go): the attach server's.
        self.on_client_frame: Callable[[], None] = lambda: None
        self._frame_owed = False  # a client attached and its first frame is not drawn yet
        self._frame_told = True  # that frame went out: on_client_frame is due
        # Bytes sent to the client it has not read yet (set by the attach server).
        self.client_backlog: Callable[[], int] = lambda: 0
        self.message: tuple[str, str, float] | None = None
        self._wakeups = 0
        self._parts(port)
        self.loop = None
        self._thread: threading.Thread | None = None
        self._ended = False  # the loop of the current thread is over (crashed)
        self._stopping = threading.Event()
        self._overlay_alarm: Any = None  # the open dialog's clock
        self._told_tmux = False

    def _parts(self, port: SessionPort) -> None:
        """The deck's parts, each given what it needs."""
        self.mailbox = Mailbox(self.redraw)
        self.router = InputRouter(self.keymap)
        self.pacer = FramePacer(self._pane_output, port.echo_drawn,
                                lambda: self.client_backlog(), self.redraw)
        self.renderer = Renderer(self.model, port, self.screen, self.pacer)
        self.lane = EchoLane(self, self.renderer, self.screen, self.pacer, port.echo_drawn)
        # The lane itself, no method of the deck's between: an echo's way.
        self.pacer.on_echo = self.lane.send_ahead
        self.commands = CommandRunner(port, self)
        self.overlays = OverlayStack(self, self.view, self.screen, port.workdir,
                                     lambda: self.client.editor)
        self.dialogs = TaskDialogs(self.model, self.overlays, self.commands, self, self.keymap,
                                   port.workdir, lambda model: port.config.price_for(model))
        self.notices = StartNotices(self.overlays)
        self.overlays.when_free = self._show_waiting
        self.overlays.on_open = self._schedule_overlay_refresh
        self.actions = Actions(self.model, port, self.keymap, self, self.overlays,
                               self.dialogs, self.commands, self.renderer, self.pacer)
        self.keypath = KeyPath(self.model, port, self.router, self.actions, self.overlays,
                               self.pacer, self, lambda: self.attached)
        # The client's bytes go to the key path with no call of the deck's
        # own between (every keystroke takes this way): see feed_input.
        self.feed_input = self.keypath.feed  # type: ignore[method-assign]

    @property
    def loop(self) -> _Loop | None:
        """The urwid loop while it runs (the parts that set alarms or widgets share it)."""
        return self._loop

    @loop.setter
    def loop(self, loop: _Loop | None) -> None:
        self._loop = self.pacer.loop = self.overlays.loop = self.keypath.loop = loop

    @property
    def state(self) -> DeckState:
        """What the deck shows (the model's; changed through ``model.apply``)."""
        return self.model.state

    @property
    def frames(self) -> int:
        """Frames drawn: by the loop and by the echo lane."""
        return self.pacer.frames + self.lane.frames

    @property
    def wakeups(self) -> int:
        """Times the loop woke up for the deck (tests count them)."""
        return self.mailbox.wakeups + self._wakeups + self.pacer.wakeups

    # -- thread-safe entry points -------------------------------------------------

    def post(self, work: Callable[[], bool | None], wake: bool = True) -> None:
        """Run ``work`` on the loop's thread (it returns False when it needs no
        frame); a burst of posts costs one wake-up.  ``wake=False``: run it
        before whatever wakes the loop next, without waking it for this."""
        self.mailbox.post(work, wake)

    def news(self, item: News) -> None:
        """A state change published by the session core."""
        self.post(lambda: self._news(item))

    def feed_input(self, data: bytes) -> None:
        """The client's bytes (on the attach pump's thread).  Plain typing for
        the focused agent goes into its PTY from here; the rest is the deck's."""
        self.keypath.feed(data)

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
        self.commands.shutdown()
        self.overlays.stop()

    # -- the loop -------------------------------------------------------------------

    def _run(self) -> None:
        """One run of the loop.  A crash is written to the crash log, shown on
        the next frame, and reported through ``on_loop_crash``: the UI actor
        crashes with it, and its supervisor starts the loop again (or gives
        up) as for any other actor."""
        try:
            self._run_once()
        except Exception as exc:
            trace = traceback.format_exc()
            log.error("the deck crashed:\n%s", trace)
            self._write_crash(trace)
            self.on_crash(f"the deck crashed; traceback in {self.crash_log}")
            self.overlays.drop()
            self.router.reset()
            self.say(f"the deck crashed and restarted; traceback in {self.crash_log}",
                     "failed")
            self._ended = True
            self.on_loop_crash(f"{type(exc).__name__}: {exc}")

    def _run_once(self) -> None:
        self.loop = _Loop(self.view, build_palette(self.ui.theme), screen=self.screen,
                          handle_mouse=self.ui.mouse)
        self.loop.deck = self
        self.mailbox.open(self.loop)
        self.sync()
        self.relayout()
        if self.attached:  # restarted after a crash: the client is still there
            self.client_attached(self.client)
        try:
            self.loop.run()
        finally:
            with self.lane.drawing:
                self.lane.close()
            self.mailbox.close(self.loop)

    def _write_crash(self, trace: str) -> None:
        try:
            with statedir.open_append(self.crash_log) as out:
                out.write(f"--- deck crash {time.strftime('%Y-%m-%d %H:%M:%S')} "
                          f"(server pid {os.getpid()})\n{trace}\n")
        except OSError:
            log.exception("cannot write %s", self.crash_log)

    def _exit(self) -> None:
        raise urwid.ExitMainLoop()

    def _resized(self, cols: int, rows: int) -> None:
        self.screen.set_size(cols, rows)
        self.client.cols, self.client.rows = cols, rows

    def _later(self, seconds: float, callback: Callable[[], None]) -> Any:
        def fire(_loop: Any, _data: Any) -> None:
            self._wakeups += 1
            callback()
            self.dirty = True
        return self.loop.set_alarm_in(seconds, fire)

    def redraw(self) -> None:
        self.dirty = True

    # -- attach / detach ------------------------------------------------------------

    def _attach(self, info: ClientInfo) -> None:
        self.client = info
        self.screen.configure(info.term, info.colors)
        self.screen.set_size(info.cols, info.rows)
        # Start the screen afresh: the new terminal gets the alternate screen,
        # mouse and paste modes, then a full frame.
        self.screen.restart()
        self.screen.redraw_all()
        if self.loop is not None:
            self.loop.screen_size = None
        self.attached = True
        self.dirty = True
        self._frame_owed = True
        self.pacer.forget()
        self.relayout()
        self._show_waiting()
        self._schedule_overlay_refresh()
        self._tmux_prefix_hint(info)

    def _show_waiting(self) -> None:
        """What waits for the operator, when nothing covers the panes: the
        start's notices first (read once), then the gates in arrival order."""
        if not self.notices.show():
            self.dialogs.show_next_gate()

    def _tmux_prefix_hint(self, info: ClientInfo) -> None:
        """Once a session: inside tmux, our default prefix is tmux's own (and a
        Claude Code key), so say how to reach us and how to change it."""
        if (not info.in_tmux or self._told_tmux
                or k.display_name(self.keymap.prefix_spelling) != "C-b"):
            return
        self._told_tmux = True
        self.say(TMUX_HINT, seconds=2 * MESSAGE_TIME)

    def _detach(self) -> None:
        self.attached = False
        self._frame_owed = False
        self.lane.close()
        self.router.reset()
        self.pacer.stop()
        if self._overlay_alarm is not None and self.loop is not None:
            self.loop.remove_alarm(self._overlay_alarm)
        self._overlay_alarm = None

    def detach(self, reason: str = "detached") -> None:
        self._detach()
        self.on_detach(reason)

    # -- drawing --------------------------------------------------------------------

    def render_base(self, cols: int, rows: int, focus: bool) -> Frame:
        """The deck as the client sees it: the editor, or panes, sidebar and status."""
        editor = self.overlays.editor
        if editor is not None:
            return editor.render(cols, rows, self.screen.colors)
        return self.renderer.render(cols, rows, focus, self.chrome())

    def chrome(self) -> Chrome:
        """What the status line shows besides the state (an old message dropped)."""
        if self.message is not None and self.message[2] < time.monotonic():
            self.message = None
        return Chrome(self.router.mode, self.message[0] if self.message else None,
                      self.overlays.editor is not None, self.keymap.prefix_spelling)

    def shows_panes(self, size: tuple[int, int]) -> bool:
        """For the echo lane: the attached client sees the panes alone, at ``size``."""
        loop = self._loop
        return (self.attached and loop is not None and loop.widget is self.view
                and self.overlays.editor is None and loop.screen_size == size)

    def drawn(self, shown: bool = True) -> None:
        """A frame went out (called by the loop); ``shown=False``: urwid drew
        nothing in it, as it does while a resize is pending."""
        self.pacer.drawn()
        if self._frame_owed and shown:
            self._frame_owed, self._frame_told = False, False

    def after_draw(self) -> None:
        """The loop's drawing is over (its lock let go): an attached client's
        first frame, if that was it, is said to be out."""
        if not self._frame_told:
            self._frame_told = True
            self.on_client_frame()

    def relayout(self) -> None:
        """Send every shown pane's size to its role, as the next frame will draw it."""
        save = getattr(self.port, "save_layout", None)
        layout = self.model.layout_to_save() if save is not None else None
        if layout is not None:
            save(layout)
        self.renderer.relayout()
        if self.overlays.editor is not None:
            cols, rows = self.screen.get_cols_rows()
            self.overlays.editor.resize(cols, max(rows - 1, 1))

    def _pane_output(self, role: str) -> None:
        """A watched terminal changed, on whichever thread fed it: the echo of
        a key is drawn right there when it can be; anything else is the loop's."""
        if self.pacer.echoing(role) and self.lane.draw(role):
            return
        self.post(lambda: self.pacer.pane_changed(
            role, self.attached and role in self.state.layout.visible()))

    def _schedule_overlay_refresh(self) -> None:
        """While a dialog with clocks is open (and drawn), tick it once a second;
        with no such dialog nothing ticks."""
        if self._overlay_alarm is not None or self.loop is None:
            return
        if not self.attached or self.overlays.kind not in ("gate", "board"):
            return
        self._overlay_alarm = self.loop.set_alarm_in(OVERLAY_REFRESH, self._overlay_tick)

    def _overlay_tick(self, _loop: Any = None, _data: Any = None) -> None:
        self._wakeups += 1
        self._overlay_alarm = None
        if self.attached and self.dialogs.tick():
            self.dirty = True
        self._schedule_overlay_refresh()

    # -- news and what the deck says -------------------------------------------------

    def _news(self, item: News) -> None:
        """The news applied; what it changed is drawn (even with no effect)."""
        self.apply(item)

    def apply(self, item: reducer.Item) -> bool:
        """Reduce ``item`` into the model and carry out its effects; True when there were any."""
        effects = self.model.apply(item)
        for effect in effects:
            self._effect(effect)
        return bool(effects)

    def _effect(self, effect: reducer.Effect) -> None:
        """Carry out what the reducer asked for."""
        if isinstance(effect, reducer.Ring):
            if self.attached:
                self.screen.bell()
        elif isinstance(effect, reducer.AutoFocus):
            self._auto_focus(effect.role)
        elif isinstance(effect, reducer.FollowRoster):
            self.state.layout.set_roster(list(effect.names))
        elif isinstance(effect, reducer.ShowGate):
            self._show_waiting()  # the start's notices, if unread, come first
        elif isinstance(effect, reducer.CloseGate):
            self.dialogs.close_gate(effect.task_id)
        elif isinstance(effect, reducer.RefreshBoard):
            self.dialogs.update_board()
        elif isinstance(effect, reducer.Resync):
            self.sync()

    def _auto_focus(self, role: str) -> None:
        if not self.ui.auto_focus or time.monotonic() < self.actions.user_active_until:
            return
        if (role in self.state.layout.shown() and self.overlays.widget is None
                and self.router.mode == "normal"):
            self.state.layout.focus = role

    def sync(self) -> None:
        """Ask the core for the whole picture (at start and after a reload)."""
        asked = {name: info.news for name, info in self.state.roles.items()}

        def roles(ack: dict) -> None:
            if ack.get("status") != "ok":
                return
            if self.apply(reducer.StatusRead(tuple(ack.get("roles", [])), asked)):
                self.relayout()

        def board(ack: dict) -> None:
            self.apply(reducer.BoardRead(tuple(answered(ack, "tasks"))))

        def gates(ack: dict) -> None:
            self.apply(reducer.GatesRead(tuple(answered(ack, "gates"))))

        self.commands.command({"cmd": "status"}, roles, quiet=True)
        self.commands.command({"cmd": "board"}, board, quiet=True)
        self.commands.command({"cmd": "gate", "action": "list"}, gates, quiet=True)

    def say(self, text: str, style: str = "status message",
            seconds: float = MESSAGE_TIME) -> None:
        message = self.message = (inert(text), style, time.monotonic() + seconds)
        self.dirty = True
        if self.loop is not None:
            def expire() -> None:
                if self.message is message:
                    self.message = None
            with contextlib.suppress(Exception):  # a loop that is gone: drawn away later
                self._later(seconds, expire)
