"""The deck: the urwid application that shows the team and takes the keyboard.

It runs on a thread of its own inside the session server, drawing into a
private PTY (:class:`~ui.ptyscreen.PtyScreen`) that the attach server relays
to whoever is attached.  Other threads reach it only through :meth:`Deck.post`
and friends, which queue the work and wake the urwid loop through one
``watch_pipe`` (a burst of news costs one wake-up).  While nobody is
attached nothing is drawn; the state keeps up, so an attach shows the deck
exactly as it is.

Every command the deck gives the session goes through the same ``Dispatch``
registry as the control socket (``gate``, ``restart``, ``pause``, ``resume``,
``reload``, ``board``, ``status``), run on a worker thread so a busy core
never freezes the screen.  Keys typed at an agent go straight to its role
actor as ``WriteInput``; a pane's size follows its tile with ``Resize``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import threading
import time
import traceback
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import urwid

from choragos import statedir
from choragos.actors import messages as m
from choragos.config import Config
from choragos.terminal import Terminal
from choragos.ui import keys as k
from choragos.ui import sidebar
from choragos.ui.layout import COLUMN, ROW, Layout, LayoutError
from choragos.ui.overlays import (
    BoardOverlay,
    ConfirmOverlay,
    GateOverlay,
    HelpOverlay,
    PagerOverlay,
    PromptOverlay,
    inert,
)
from choragos.ui.pane import Line, PaneView, RowBuilder, blank_line, text_line
from choragos.ui.ptyscreen import PtyScreen
from choragos.ui.sidebar import RoleInfo
from choragos.ui.theme import STATE_DOT, STATE_STYLE, TRUECOLOR, build_palette

log = logging.getLogger("choragos.deck")

FRAME = 0.03            # new output of shown panes is drawn at most this often ...
BUSY_FRAME = 0.1        # ... and of panes not typed into while the user types (keys first)
FAST_WINDOW = 0.25      # a pane typed into is drawn at once for this long (echo latency)
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
    def terminal(self, role: str) -> Terminal | None: ...


@dataclass
class ClientInfo:
    pid: int = 0
    cols: int = 160
    rows: int = 48
    term: str = "xterm-256color"
    colors: int = 256
    editor: str = ""
    in_tmux: bool = False  # the client's terminal is a tmux pane


@dataclass
class DeckState:
    """Everything the deck shows, kept apart from the widgets so that a crash
    of the urwid loop (which restarts it) loses nothing."""

    layout: Layout
    sidebar: bool = True
    roles: dict[str, RoleInfo] = field(default_factory=dict)
    tasks: dict[str, dict] = field(default_factory=dict)
    gates: OrderedDict = field(default_factory=OrderedDict)
    panes: dict[str, PaneView] = field(default_factory=dict)
    broadcast: bool = False
    dismissed: set[str] = field(default_factory=set)  # gates hidden with Esc
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    gateway: str | None = None  # "on" | "down" | "off"; None: never configured

    def pane(self, role: str) -> PaneView:
        view = self.panes.get(role)
        if view is None:
            view = self.panes[role] = PaneView(role)
        return view


def initial_state(config: Config, sidebar_on: bool) -> DeckState:
    names = [role.name for role in config.roles]
    main = config.start_role.name if any(r.start for r in config.roles) else None
    state = DeckState(layout=Layout.main_vertical(names, main), sidebar=sidebar_on)
    for role in config.roles:
        state.roles[role.name] = RoleInfo(role.name, model=role.model, command=role.command,
                                          approve=role.approve, start=role.start)
    return state


class _Loop(urwid.MainLoop):
    """A main loop that draws only for an attached client, and only on change."""

    deck: Deck

    def draw_screen(self) -> None:
        deck = self.deck
        if not deck.attached or not deck.dirty:
            return
        deck.dirty = False
        size = self.screen.get_cols_rows()
        plain = self.widget is deck.view and self.screen_size == size
        if plain:
            # No dialog over the panes: only the rows that changed are written.
            frame = deck.render_base(*size, True)
            if self.screen.paint(*frame, size):
                deck.drawn()
                return
            deck.view.prepared = frame
        deck.view._invalidate()
        super().draw_screen()
        # urwid draws nothing while a resize is pending: then no row is known.
        whole = self.widget is deck.view and not self.screen._resized
        drawn = deck.view.last if whole else None
        self.screen.drawn_whole(drawn[0] if drawn else None, drawn[1] if drawn else None,
                                self.screen_size or size)
        deck.drawn()


class DeckView(urwid.Widget):
    """Tiles, sidebar and status line, drawn as one canvas."""

    _sizing = frozenset([urwid.Sizing.BOX])
    _selectable = True

    def __init__(self, deck: Deck) -> None:
        super().__init__()
        self.deck = deck
        self.prepared: tuple | None = None  # a frame render_base just made for this size
        self.last: tuple | None = None  # the frame rendered last

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        cols, rows = size
        prepared, self.prepared = self.prepared, None
        if prepared is not None and len(prepared[0]) == rows and focus:
            lines, cursor = prepared
        else:
            lines, cursor = self.deck.render_base(cols, rows, focus)
        self.last = (lines, cursor)
        return urwid.TextCanvas([line[0] for line in lines], [line[1] for line in lines],
                                cursor=cursor, maxcol=cols, check_width=False)

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        return key


class Deck:
    """The deck application.  Thread-safe entry points: post, feed_input,
    client_attached, client_detached, resize, start, stop."""

    def __init__(self, port: SessionPort, cols: int = 160, rows: int = 48,
                 crash_log: Path | None = None) -> None:
        self.port = port
        self.config = port.config
        self.ui = self.config.ui
        self.keymap = k.Keymap.from_config(self.config.keys)
        self.screen = PtyScreen(cols, rows)
        self.state = initial_state(self.config, self.ui.sidebar)
        self._restore_layout()
        self.crash_log = crash_log or port.workdir / ".choragos" / "logs" / "crash.log"
        self.view = DeckView(self)
        self.attached = False
        self.dirty = True
        self.client = ClientInfo(cols=cols, rows=rows)
        self.on_detach: Callable[[str], None] = lambda reason: None
        self.on_crash: Callable[[str], None] = lambda reason: None
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
        self._stopping = threading.Event()
        self._workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="deck-cmd")
        self._flush_alarm: Any = None
        self._frame_alarm: Any = None
        self._frame_due = False        # the frame budget is up: changed panes are drawn
        self._last_frame = 0.0
        self._changed: set[str] = set()  # shown panes with output not drawn yet
        self._watched: dict[str, Terminal] = {}  # terminals whose on_change wakes us
        self._typed: dict[str, float] = {}  # role -> until when it is drawn at once
        self._overlay_alarm: Any = None  # the open dialog's clock
        self._told_tmux = False
        self._bar_line = text_line(1, [("│", "bar")])
        self._rows_memo: list[tuple | None] = []  # per body row: (its pieces, joined)
        self._side_memo: tuple | None = None  # (what the cards showed, their rows)
        self._title_memo: dict[str, tuple] = {}  # role -> (what its title showed, the row)
        self.wakeups = 0               # times the loop woke up for us (tests count them)
        self.frames = 0                # frames drawn
        self._user_active_until = 0.0
        self._board_selected: str | None = None
        self._card_spans: list[tuple[str, int, int]] = []  # sidebar rows per role, as drawn
        self.crashes: list[float] = []

    # -- thread-safe entry points -------------------------------------------------

    def post(self, kind: str, payload: Any = None) -> None:
        with self._guard:
            self._inbox.append((kind, payload))
            if self._wake_pending or self._wake_fd is None:
                return
            self._wake_pending = True
            fd = self._wake_fd
        with contextlib.suppress(OSError):
            os.write(fd, b"!")

    def news(self, item: Any) -> None:
        """A state change published by the session core."""
        self.post("news", item)

    def feed_input(self, data: bytes) -> None:
        self.post("input", data)

    def client_attached(self, info: ClientInfo) -> None:
        self.post("attach", info)

    def client_detached(self) -> None:
        self.post("detach")

    def resize(self, cols: int, rows: int) -> None:
        self.post("resize", (cols, rows))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="deck-ui", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self.post("stop")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._workers.shutdown(wait=False, cancel_futures=True)
        if self.editor is not None:
            self.editor.kill()

    # -- the loop -------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._run_once()
                return
            except Exception:
                trace = traceback.format_exc()
                log.error("the deck crashed:\n%s", trace)
                self._write_crash(trace)
                now = time.monotonic()
                self.crashes = [t for t in self.crashes if now - t < 60] + [now]
                self.on_crash(f"the deck crashed; traceback in {self.crash_log}")
                self.overlay, self.mode = None, "normal"
                self.say(f"the deck crashed and restarted; traceback in {self.crash_log}",
                         "failed")
                if len(self.crashes) > MAX_CRASHES:
                    log.error("the deck crashed %d times in a minute; giving up",
                              len(self.crashes))
                    self.attached = False
                    self.on_detach(f"the deck crashed {len(self.crashes)} times in a minute "
                                   f"and stays down; see {self.crash_log}")
                    return

    def _run_once(self) -> None:
        self.loop = _Loop(self.view, build_palette(self.ui.theme), screen=self.screen,
                          handle_mouse=self.ui.mouse)
        self.loop.deck = self
        with self._guard:
            self._wake_fd = self.loop.watch_pipe(self._wake)
            self._wake_pending = bool(self._inbox)
            if self._inbox:
                os.write(self._wake_fd, b"!")
        self._sync()
        self.relayout()
        if self.attached:  # restarted after a crash: the client is still there
            self.post("attach", self.client)
        try:
            self.loop.run()
        finally:
            with self._guard:
                fd, self._wake_fd = self._wake_fd, None
            if fd is not None:
                self.loop.remove_watch_pipe(fd)

    def _write_crash(self, trace: str) -> None:
        try:
            with statedir.open_append(self.crash_log) as out:
                out.write(f"--- deck crash {time.strftime('%Y-%m-%d %H:%M:%S')} "
                          f"(server pid {os.getpid()})\n{trace}\n")
        except OSError:
            log.exception("cannot write %s", self.crash_log)

    def _wake(self, _data: bytes) -> bool:
        self.wakeups += 1
        with self._guard:
            self._wake_pending = False
            items = list(self._inbox)
            self._inbox.clear()
        redraw = False
        for kind, payload in items:
            redraw = self._handle(kind, payload) is not False or redraw
        if redraw:
            self.dirty = True
        return True

    def _handle(self, kind: str, payload: Any) -> bool | None:
        """Act on one posted item; False when it needs no frame right now."""
        if kind == "stop":
            raise urwid.ExitMainLoop()
        if kind == "pane":
            return self._pane_changed(payload)
        if kind == "news":
            self._news(payload)
        elif kind == "input":
            return self._input(payload)
        elif kind == "attach":
            self._attach(payload)
        elif kind == "detach":
            self._detach()
        elif kind == "resize":
            self.screen.set_size(*payload)
            self.client.cols, self.client.rows = payload
        elif kind == "call":
            payload()
        elif kind == "refresh":
            pass

    def _later(self, seconds: float, callback: Callable[[], None]) -> Any:
        def fire(_loop: Any, _data: Any) -> None:
            self.wakeups += 1
            callback()
            self.dirty = True
        return self.loop.set_alarm_in(seconds, fire)

    # -- attach / detach ------------------------------------------------------------

    def _attach(self, info: ClientInfo) -> None:
        self.client = info
        self.screen.configure(info.term, info.colors)
        self.screen.set_size(info.cols, info.rows)
        # Start the screen afresh: the new terminal gets the alternate screen,
        # mouse and paste modes, then a full frame.
        self.screen.stop()
        self.screen.start()
        self.screen.redraw_all()
        if self.loop is not None:
            self.loop.screen_size = None
        self.attached = True
        self.dirty = True
        self._changed.clear()
        self.relayout()
        self._maybe_show_gate()
        self._schedule_overlay_refresh()
        self._tmux_prefix_hint(info)

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
        self.mode = "normal"
        for alarm in (self._frame_alarm, self._overlay_alarm):
            if alarm is not None and self.loop is not None:
                self.loop.remove_alarm(alarm)
        self._frame_alarm = self._overlay_alarm = None

    def detach(self, reason: str = "detached") -> None:
        self._detach()
        self.on_detach(reason)

    # -- redraw on change: new output in shown panes -------------------------------

    def _watch(self, role: str, terminal: Terminal) -> None:
        """Have ``terminal`` wake the loop when it changes (once per frame drawn)."""
        if self._watched.get(role) is not terminal:
            self._watched[role] = terminal
            terminal.on_change = lambda: self.post("pane", role)

    def _pane_changed(self, role: str) -> bool:
        """A shown pane has new output: a pane typed into is drawn at once
        (its echo is what the user waits for); the others wait for the frame
        budget, a longer one while the user types, so a flood is coalesced
        into few frames and never queues ahead of an echo."""
        if not self.attached or role not in self.state.layout.visible():
            return False  # not drawn: its terminal stays quiet until it is
        now = time.monotonic()
        if self._typed.get(role, 0) > now:
            self._changed.discard(role)
            return True
        self._changed.add(role)
        # While the user types, the budget runs from the last key too: keys
        # draw no frame of their own, and the echo must not share its frame.
        last_key = max(self._typed.values(), default=0.0) - FAST_WINDOW
        typing = last_key + FAST_WINDOW > now
        self._schedule_frame(now, BUSY_FRAME if typing else FRAME,
                             max(self._last_frame, last_key))
        return False

    def _schedule_frame(self, now: float, budget: float, since: float) -> None:
        if self._frame_alarm is not None or self.loop is None:
            return
        self._frame_alarm = self.loop.set_alarm_in(max(since + budget - now, 0.0),
                                                   self._frame_up)

    def _frame_up(self, _loop: Any = None, _data: Any = None) -> None:
        self.wakeups += 1
        self._frame_alarm = None
        self._frame_due = True
        self.dirty = True

    def drawn(self) -> None:
        """A frame went out (called by the loop)."""
        self.frames += 1
        self._last_frame = time.monotonic()
        self._frame_due = False
        self._typed = {r: until for r, until in self._typed.items() if until > self._last_frame}

    def _schedule_overlay_refresh(self) -> None:
        """While a dialog with clocks is open (and drawn), tick it once a second;
        with no such dialog nothing ticks."""
        if self._overlay_alarm is not None or self.loop is None:
            return
        if not self.attached or self.overlay_kind not in ("gate", "board"):
            return
        self._overlay_alarm = self.loop.set_alarm_in(OVERLAY_REFRESH, self._overlay_tick)

    def _overlay_tick(self, _loop: Any = None, _data: Any = None) -> None:
        self.wakeups += 1
        self._overlay_alarm = None
        if self.attached and self._refresh_overlay():
            self.dirty = True
        self._schedule_overlay_refresh()

    def _refresh_overlay(self) -> bool:
        """Keep an open dialog's clocks running: the gate's waiting time, the board's ages."""
        if self.overlay_kind == "gate":
            self.overlay.refresh()
            return True
        if self.overlay_kind == "board":
            self._update_board()
            return True
        return False

    def _update_board(self) -> None:
        """Show the board's news in the open board, or rebuild it when it must."""
        if self.overlay_kind != "board":
            return
        if not self.overlay.update(self._sorted_tasks()):
            chosen = self.overlay.current()
            if chosen is not None:
                self._board_selected = chosen["id"]
            self._show_board()
        self.dirty = True

    # -- news from the core ------------------------------------------------------------

    def _news(self, item: Any) -> None:
        kind, value = item[0], item[1]
        if kind == "bell":
            # The core rings when a human is needed (gate, input, timeout) and
            # [ui] bell is on; the hooks are its business too.
            if self.attached:
                self.screen.bell()
        elif kind == "role":
            self._role_view(value)
        elif kind == "task":
            self._task(value.as_dict() if hasattr(value, "as_dict") else value)
        elif kind == "gate":
            self._gate_arrived(value.as_dict() if hasattr(value, "as_dict") else value)
        elif kind == "gate closed":
            self._gate_closed(value)
        elif kind == "event":
            self._event(value)
        elif kind == "gateway":
            self.state.gateway = value
        elif kind == "tokens":
            self._usage(value)
        elif kind == "marks":
            for name, info in self.state.roles.items():
                info.extra["marks"] = tuple(value.get(name, ()))

    def _usage(self, usages: dict[str, dict]) -> None:
        for role, usage in usages.items():
            info = self.state.roles.get(role)
            if info is not None and any(usage["tokens"].values()):
                info.usage = usage

    def _role_view(self, view: m.RoleView) -> None:
        info = self.state.roles.get(view.name)
        if info is None:
            info = self.state.roles[view.name] = RoleInfo(view.name)
            self._follow_roster(list(self.state.roles))
        before = info.status
        info.news += 1
        info.status, info.pid, info.restarts = view.status, view.pid, view.restarts
        info.detail, info.preview = view.detail, tuple(view.preview)
        info.profile = view.profile or info.profile
        if view.status == "waiting" and before != "waiting":
            self._auto_focus(view.name)

    def _task(self, task: dict) -> None:
        self.state.tasks[task["id"]] = task
        self._update_board()
        gate = self.state.gates.get(task["id"])
        if gate is not None and task.get("state") != "gated" and gate.get("kind") != "merge":
            self._gate_closed(task["id"])
        if task.get("state") == "delivered":
            self._auto_focus(task["role"])

    def _gate_closed(self, task_id: str) -> None:
        """Decided (here, from the CLI or the board): the dialog goes."""
        self.state.gates.pop(task_id, None)
        self.state.dismissed.discard(task_id)
        if self.overlay_kind == "gate" and getattr(self.overlay, "gate", {}).get(
                "id") == task_id:
            self._close_overlay()

    def _gate_arrived(self, task: dict) -> None:
        if task.get("kind") != "merge":
            self.state.tasks[task["id"]] = task
        self.state.gates[task["id"]] = task
        self._update_board()
        self._maybe_show_gate()

    def _event(self, record: dict) -> None:
        event = record.get("event")
        if event == "reload":
            self._sync()
        elif event == "work-done":
            start = next((i.name for i in self.state.roles.values() if i.start), None)
            if start:
                self._auto_focus(start)

    def _auto_focus(self, role: str) -> None:
        if not self.ui.auto_focus or time.monotonic() < self._user_active_until:
            return
        if role in self.state.layout.shown() and self.overlay is None and self.mode == "normal":
            self.state.layout.focus = role

    def _follow_roster(self, names: list[str]) -> None:
        self.state.layout.set_roster(names)
        for gone in [n for n in self.state.roles if n not in names]:
            self.state.roles.pop(gone, None)

    def _sync(self) -> None:
        """Ask the core for the whole picture (at start and after a reload)."""
        asked = {name: info.news for name, info in self.state.roles.items()}

        def roles(ack: dict) -> None:
            if ack.get("status") != "ok":
                return
            names = []
            for row in ack.get("roles", []):
                name = row["name"]
                names.append(name)
                info = self.state.roles.setdefault(name, RoleInfo(name))
                info.model, info.command = row.get("model", ""), row.get("command", "")
                if info.news != asked.get(name, 0):
                    continue  # a view published after we asked is fresher than this row
                info.status, info.pid = row.get("state", info.status), row.get("pid")
                info.restarts = row.get("restarts", 0)
                info.preview = tuple(row.get("preview", ()))
                info.profile = row.get("profile", info.profile)
                info.detail = row.get("detail", "")
            if names:
                self._follow_roster(names)
                self.relayout()

        def board(ack: dict) -> None:
            for task in ack.get("tasks", []) if ack.get("status") == "ok" else []:
                self.state.tasks[task["id"]] = task

        def gates(ack: dict) -> None:
            for gate in ack.get("gates", []) if ack.get("status") == "ok" else []:
                task = self.state.tasks.get(gate["id"], {})
                self.state.gates[gate["id"]] = {**task, **gate}
            self._maybe_show_gate()

        self.command({"cmd": "status"}, roles, quiet=True)
        self.command({"cmd": "board"}, board, quiet=True)
        self.command({"cmd": "gate", "action": "list"}, gates, quiet=True)

    # -- commands to the session -----------------------------------------------------------

    def command(self, request: dict, then: Callable[[dict], None] | None = None,
                quiet: bool = False) -> None:
        """Run a control command (the socket's registry) off the UI thread."""
        def work() -> None:
            try:
                ack = self.port.dispatch(request)
            except Exception as exc:  # reported on screen, never fatal
                ack = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
            self.post("call", lambda: self._answered(request, ack, then, quiet))

        with contextlib.suppress(RuntimeError):  # shutting down
            self._workers.submit(work)

    def _answered(self, request: dict, ack: dict, then: Callable[[dict], None] | None,
                  quiet: bool) -> None:
        if ack.get("status") != "ok" and not quiet:
            self.say(f"{request['cmd']}: {ack.get('error', 'failed')}", "failed")
        if then is not None:
            then(ack)

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

    # -- geometry --------------------------------------------------------------------

    def _areas(self, cols: int, rows: int) -> tuple[int, int, int]:
        """(body width, body height, sidebar width)."""
        side = sidebar.WIDTH if self.state.sidebar and cols >= 2 * sidebar.WIDTH else 0
        return cols - side, max(rows - 1, 0), side

    def _restore_layout(self) -> None:
        """A resumed session shows the layout it had (ports without one: the default)."""
        saved = getattr(self.port, "saved_layout", lambda: None)()
        if saved:
            try:
                self.state.layout = Layout.from_dict(saved, self.state.layout.roster)
            except LayoutError as exc:
                log.warning("starting with the default layout: %s", exc)
        self._saved_layout = self.state.layout.to_dict()

    def _save_layout(self) -> None:
        now = self.state.layout.to_dict()
        save = getattr(self.port, "save_layout", None)
        if now != self._saved_layout and save is not None:
            self._saved_layout = now
            save(now)

    def relayout(self) -> None:
        """Send every shown pane's size to its role, as the next frame will draw it."""
        self._save_layout()
        cols, rows = self.screen.get_cols_rows()
        body_w, body_h, _ = self._areas(cols, rows)
        geometry = self.state.layout.geometry(body_w, body_h)
        for role, rect in geometry.tiles.items():
            self._pane_size(role, rect.w, rect.h - 1)
        if self.editor is not None:
            self.editor.resize(cols, max(rows - 1, 1))

    def _pane_size(self, role: str, width: int, height: int) -> None:
        size = (max(width, 1), max(height, 1))
        if self.state.sizes.get(role) != size:
            self.state.sizes[role] = size
            self.port.tell_role(role, m.Resize(*size))

    # -- drawing ------------------------------------------------------------------------

    def render_base(self, cols: int, rows: int, focus: bool) -> tuple[list[Line],
                                                                    tuple[int, int] | None]:
        if self.editor is not None:
            return self.editor.render(cols, rows, self)
        body_w, body_h, side = self._areas(cols, rows)
        layout = self.state.layout
        geometry = layout.geometry(body_w, body_h)
        grid: list[list[tuple[int, Line]]] = [[] for _ in range(body_h)]
        cursor = None
        colors = self.screen.colors
        numbers = {name: i for i, name in enumerate(layout.roster, 1)}
        tasks = self._current_tasks()
        if self.message is not None and self.message[2] < time.monotonic():
            self.message = None
        for role, rect in geometry.tiles.items():
            self._pane_size(role, rect.w, rect.h - 1)
            focused = role == layout.focus
            grid[rect.y].append((rect.x, self._title(role, rect.w, focused,
                                                     numbers.get(role, 0), tasks)))
            if rect.h <= 1:
                continue
            lines, pane_cursor = self._pane_lines(role, rect.w, rect.h - 1, focused and focus,
                                                  colors)
            for dy, line in enumerate(lines):
                grid[rect.y + 1 + dy].append((rect.x, line))
            if focused and pane_cursor is not None and self.mode == "normal":
                cursor = (rect.x + pane_cursor[0], rect.y + 1 + pane_cursor[1])
        bar_line = self._bar_line
        for bar in geometry.bars:
            for y in range(bar.y, bar.bottom):
                grid[y].append((bar.x, bar_line))
        out: list[Line] = []
        side_lines = self._sidebar(side, body_h) if side else []
        memo = self._rows_memo if len(self._rows_memo) == body_h else [None] * body_h
        for y in range(body_h):
            # Tiles are placed in the same order every frame: the pieces need
            # sorting only when the row is joined again.
            key = (grid[y], side_lines[y] if side else None, body_w)
            held = memo[y]
            if held is not None and held[0] == key:  # the same pieces: joined already
                out.append(held[1])
                continue
            row = _join(sorted(key[0], key=lambda seg: seg[0]), body_w)
            if side:
                row = (row[0] + side_lines[y][0], row[1] + side_lines[y][1])
            memo[y] = (key, row)
            out.append(row)
        self._rows_memo = memo
        if rows:
            out.append(self._status_line(cols))
        return out, cursor

    def _pane_lines(self, role: str, width: int, height: int, focused: bool,
                    colors: int) -> tuple[list[Line], tuple[int, int] | None]:
        """A pane's rows: as last drawn while its new output waits for the frame
        budget (keys first), else from its terminal, re-arming its wake-up."""
        pane = self.state.pane(role)
        terminal = self.port.terminal(role)
        if role in self._changed and not self._frame_due:
            held = pane.cached(width, height, focused, colors, terminal)
            if held is not None:
                return held
        self._changed.discard(role)
        if terminal is not None:
            self._watch(role, terminal)
            terminal.take_dirty()
        return pane.content(terminal, width, height, focused=focused, colors=colors)

    def _sidebar(self, width: int, height: int) -> list[Line]:
        """The cards, built again only when something they show changed."""
        layout = self.state.layout
        infos = [self.state.roles[n] for n in layout.roster if n in self.state.roles]
        tasks = self._current_tasks()
        # Copies: RoleInfo objects change in place.
        key = (width, height, layout.focus, tuple(layout.shown()),
               [(dict(vars(info)), repr(info.extra), repr(info.usage)) for info in infos],
               repr(sorted(tasks.items())))
        if self._side_memo is not None and self._side_memo[0] == key:
            return self._side_memo[1]
        lines = sidebar.render(infos, width, height, focus=layout.focus,
                               shown=set(layout.shown()), tasks=tasks, spans=self._card_spans)
        self._side_memo = (key, lines)
        return lines

    def _title(self, role: str, width: int, focused: bool, number: int,
               tasks: dict[str, dict]) -> Line:
        """A tile's title row, built again only when what it shows changed
        (every frame draws every title; an echo frame must stay cheap)."""
        info = self.state.roles.get(role) or RoleInfo(role)
        task = tasks.get(role)
        pane = self.state.panes.get(role)
        scroll = pane.scroll if pane is not None else None
        key = (width, focused, number, info.status, task and (task["id"], task.get("label")),
               scroll and (scroll.offset, scroll.query, scroll.current, len(scroll.matches)),
               self.state.layout.zoomed)
        held = self._title_memo.get(role)
        if held is not None and held[0] == key:
            return held[1]
        line = self._build_title(role, width, focused, number, info, task)
        self._title_memo[role] = (key, line)
        return line

    def _build_title(self, role: str, width: int, focused: bool, number: int,
                     info: RoleInfo, task: dict | None) -> Line:
        base = "title focus" if focused else "title"
        style = base if focused else STATE_STYLE.get(info.status, "idle")
        pieces = [(f" {number} " if number else " ", base), (inert(role), base),
                  (f" {STATE_DOT.get(info.status, '●')} {info.status}", style)]
        if task:
            pieces.append((f"  {task['id']} {inert(task.get('label', ''))}", base))
        pane = self.state.panes.get(role)
        right = []
        if pane is not None and pane.scroll is not None:
            scroll = pane.scroll
            found = (f" {scroll.current + 1}/{len(scroll.matches)} “{inert(scroll.query)}”"
                     if scroll.query else "")
            right.append((f" ⇡{scroll.offset}{found} ", "status scroll"))
        if self.state.layout.zoomed and focused:
            right.append((" ZOOM ", "status accent"))
        fill = base if focused else None
        right_width = sum(len(text) for text, _ in right)
        row = RowBuilder(max(width - right_width, 0))
        for text, attr in pieces:
            row.add(text, attr)
        left = row.line(fill)
        if not right or right_width >= width:
            return _join([(0, left)], width)
        tail = RowBuilder(right_width)
        for text, attr in right:
            tail.add(text, attr)
        return _join([(0, left), (width - right_width, tail.line())], width)

    def _current_tasks(self) -> dict[str, dict]:
        """Each role's current task: the newest open one."""
        current: dict[str, dict] = {}
        for task in self.state.tasks.values():
            if task.get("state") in ("queued", "delivered", "timed-out", "gated"):
                current[task["role"]] = task
        return current

    def _status_line(self, cols: int) -> Line:
        row = RowBuilder(cols)
        tags = []
        if self.mode == "prefix":
            tags.append((" PREFIX ", "status accent"))
        elif self.mode == "resize":
            tags.append((" RESIZE  arrows/hjkl, Esc ends ", "status waiting"))
        focus = self.state.layout.focus
        pane = self.state.panes.get(focus) if focus else None
        if pane is not None and pane.scroll is not None:
            tags.append((" SCROLL  PgUp/PgDn / n N q ", "status scroll"))
        if self.state.layout.zoomed:
            tags.append((" ZOOM ", "status accent"))
        if self.state.broadcast:
            tags.append((" BROADCAST ", "status waiting"))
        if self.editor is not None:
            tags.append((" EDITOR ", "status accent"))
        for text, attr in tags:
            row.add(text, attr)
        row.add(" choragos ", "status dim")
        if focus:
            info = self.state.roles.get(focus)
            state = info.status if info else "?"
            row.add(f"▸ {inert(focus)} ", "status")
            row.add(f"({state}) ", "status dim")
        if self.state.gateway is not None:
            attr = "status waiting" if self.state.gateway == "down" else "status dim"
            row.add(f" gateway {self.state.gateway} ", attr)
        gates = len(self.state.gates)
        if gates:
            row.add(f" ⚑ {gates} gate{'s' if gates != 1 else ''} waiting ", "status waiting")
        if self.message is not None:
            row.add(" " + self.message[0] + " ", "status message")
        hint = f" {k.display_name(self.keymap.prefix_spelling)} ? help "
        if row.col + len(hint) < cols:
            row.add(" " * (cols - row.col - len(hint)), "status")
            row.add(hint, "status dim")
        return row.line("status")

    # -- input ---------------------------------------------------------------------------

    def _input(self, data: bytes) -> bool | None:
        """Act on the client's keys; False when they only went to agents: the
        deck shows nothing new then, and the echo brings its own frame (drawing
        one here would hold the interpreter while the echo is on its way)."""
        typed_only = True
        for token in self.tokenizer.feed(data):
            typed_only = self._token(token) is True and typed_only
        self._arm_flush()
        return False if typed_only and not self.tokenizer.pending else None

    def _arm_flush(self) -> None:
        if self._flush_alarm is not None:
            self.loop.remove_alarm(self._flush_alarm)
            self._flush_alarm = None
        if self.tokenizer.pending:
            def flush(_loop: Any, _data: Any) -> None:
                self._flush_alarm = None
                for token in self.tokenizer.flush():
                    self._token(token)
                self.dirty = True
            self._flush_alarm = self.loop.set_alarm_in(ESC_WAIT, flush)

    def _token(self, token: k.Token) -> bool | None:
        """Act on one key; True when it was only typed at the agents."""
        key = token.key
        if self.editor is not None:
            self.editor.send(token)
            return
        if isinstance(key, tuple):
            self._mouse(key)
            return
        if not isinstance(key, str) or key in ("focus in", "focus out"):
            return  # a terminal report, not a key
        if self.overlay is not None:
            self._overlay_token(token)
            return
        if self.tokenizer.in_paste or key in (k.PASTE_TEXT, "end paste", "begin paste"):
            self._to_agents(token)
            return True
        if self.mode == "prefix":
            self.mode = "normal"
            self._after_prefix(token)
            return
        if key == self.keymap.prefix:
            self.mode = "prefix"
            return
        if self.mode == "resize":
            self._resize_key(key)
            return
        focus = self.state.layout.focus
        pane = self.state.panes.get(focus) if focus else None
        if pane is not None and pane.scroll is not None:
            self._scroll_key(pane, key)
            return None
        self._to_agents(token)
        return True

    def _to_agents(self, token: k.Token) -> None:
        layout = self.state.layout
        targets = layout.shown() if self.state.broadcast else [layout.focus]
        for role in targets:
            if role is None:
                continue
            terminal = self.port.terminal(role)
            if terminal is None:
                continue
            data = k.to_agent(token, application_cursor=terminal.application_cursor,
                              bracketed_paste=terminal.bracketed_paste)
            if data:
                self.port.tell_role(role, m.WriteInput(data))
        self._user_active_until = time.monotonic() + AUTO_FOCUS_PAUSE
        until = time.monotonic() + FAST_WINDOW
        for role in targets:
            if role is not None:
                self._typed[role] = until

    def _after_prefix(self, token: k.Token) -> None:
        key = token.key
        if key == self.keymap.prefix:
            self._to_agents(token)  # prefix twice: the agent gets the key itself
            return
        if key == "esc":
            return
        if isinstance(key, str) and len(key) == 1 and key in "123456789":
            self._user_focus(lambda: self.state.layout.focus_index(int(key)))
            return
        if key in ("page up", "["):
            self._enter_scroll(page=key == "page up")
            return
        action = self.keymap.action(key)
        if action is None:
            shown = key if isinstance(key, str) else "that key"
            self.say(f"{k.display_name(self.keymap.prefix_spelling)} {inert(shown)}: "
                     "not bound (? lists the keys)")
            return
        getattr(self, "act_" + action)()

    def _user_focus(self, change: Callable[[], Any]) -> None:
        try:
            change()
        except LayoutError as exc:
            self.say(str(exc))
        self._user_active_until = time.monotonic() + AUTO_FOCUS_PAUSE
        self.relayout()

    # -- mouse -----------------------------------------------------------------------------

    def _mouse(self, event: tuple) -> None:
        if self.overlay is not None:
            self.loop.process_input([event])
            return
        name, button, x, y = event
        cols, rows = self.screen.get_cols_rows()
        body_w, body_h, side = self._areas(cols, rows)
        if side and x >= body_w and "press" in name and button == 1:
            self._sidebar_click(y)
            return
        geometry = self.state.layout.geometry(body_w, body_h)
        role = next((r for r, rect in geometry.tiles.items() if rect.contains(x, y)), None)
        if role is None:
            return
        rect = geometry.tiles[role]
        terminal = self.port.terminal(role)
        inside = y > rect.y
        if terminal is not None and inside and terminal.mouse_tracking:
            data = k.mouse_to_agent(name, button, x - rect.x, y - rect.y - 1,
                                    mode=terminal.mouse_tracking, sgr=terminal.mouse_sgr)
            if data:
                self.port.tell_role(role, m.WriteInput(data))
            if "press" in name and button in (1, 2, 3):
                self.state.layout.focus = role
            return
        if "press" in name and button in (4, 5) and terminal is not None:
            pane = self.state.pane(role)
            pane.scroll_by(terminal, 3 if button == 4 else -3, rect.h - 1)
            return
        if "press" in name and button == 1:
            self._user_focus(lambda: setattr(self.state.layout, "focus", role))

    def _sidebar_click(self, y: int) -> None:
        for name, start, end in self._card_spans:
            if start <= y < end:
                self._user_focus(lambda n=name: self.state.layout.show(n))
                return

    # -- scrollback and search ---------------------------------------------------------------

    def _focused_pane(self) -> tuple[str, PaneView, Terminal, int] | None:
        role = self.state.layout.focus
        terminal = self.port.terminal(role) if role else None
        if role is None or terminal is None:
            return None
        height = self.state.sizes.get(role, (0, terminal.rows))[1]
        return role, self.state.pane(role), terminal, height

    def _enter_scroll(self, page: bool) -> None:
        found = self._focused_pane()
        if found is None:
            return
        _, pane, terminal, height = found
        if not terminal.history():
            self.say("nothing has scrolled off this pane yet")
            return
        pane.scroll_to(terminal, (pane.scroll.offset if pane.scroll else 0)
                       + (max(height - 1, 1) if page else 0))

    def _scroll_key(self, pane: PaneView, key: str) -> None:
        found = self._focused_pane()
        if found is None:
            return
        _, _, terminal, height = found
        page = max(height - 1, 1)
        moves = {"page up": page, "page down": -page, "up": 1, "k": 1, "down": -1, "j": -1,
                 "ctrl u": page // 2, "ctrl d": -page // 2}
        if key in moves:
            pane.scroll_by(terminal, moves[key], height)
            if pane.scroll is None:
                self.say("back to the live screen")
        elif key in ("home", "g"):
            pane.scroll_to(terminal, len(terminal.history()))
        elif key in ("end", "G", "q", "esc"):
            pane.end_scroll()
        elif key == "n":
            pane.next_match(terminal, -1, height)
        elif key == "N":
            pane.next_match(terminal, +1, height)
        elif key == "/":
            self.act_search()

    def _resize_key(self, key: str) -> None:
        direction = {"left": "left", "h": "left", "right": "right", "l": "right", "up": "up",
                     "k": "up", "down": "down", "j": "down"}.get(key)
        if direction is not None:
            if not self.state.layout.resize(direction):
                self.say(f"no border to move {direction}")
            self.relayout()
        elif key in ("esc", "enter", "q", self.keymap.spellings["resize_mode"]):
            self.mode = "normal"

    # -- overlays --------------------------------------------------------------------------

    def _open_overlay(self, widget: urwid.Widget, kind: str, width: Any = ("relative", 80),
                      height: Any = ("relative", 70)) -> None:
        self.overlay, self.overlay_kind = widget, kind
        self.loop.widget = urwid.Overlay(widget, self.view, "center", width, "middle", height,
                                         min_width=40, min_height=8)
        self._schedule_overlay_refresh()

    def _close_overlay(self) -> None:
        self.overlay, self.overlay_kind = None, ""
        if self.loop is not None:
            self.loop.widget = self.view
        self._maybe_show_gate()

    def _overlay_token(self, token: k.Token) -> None:
        if isinstance(self.overlay, PromptOverlay) and token.key in (k.PASTE_TEXT,):
            self.overlay.insert(k.text_of(token))
            return
        if token.key in ("begin paste", "end paste", k.PASTE_TEXT):
            return
        self.loop.process_input([token.key])

    def _maybe_show_gate(self) -> None:
        if self.overlay is not None or self.loop is None or self.editor is not None:
            return
        waiting = [g for g in self.state.gates.values() if g["id"] not in self.state.dismissed]
        if not waiting:
            return
        gate = waiting[0]
        position = list(self.state.gates).index(gate["id"]) + 1
        widget = GateOverlay(gate, position, len(self.state.gates), self._task_text(gate),
                             lambda key: self._gate_key(gate, key))
        self._open_overlay(widget, "gate", ("relative", 80), ("relative", 60))

    def _gate_key(self, gate: dict, key: str) -> None:
        task_id = gate["id"]
        if key == "esc":
            self.state.dismissed.add(task_id)
            self._close_overlay()
            self.say(f"{task_id} still waits; decide it from the task board "
                     f"({k.display_name(self.keymap.prefix_spelling)} "
                     f"{self.keymap.spellings['task_board']})")
        elif key in ("y", "n"):
            self._decide(task_id, key == "y")
            self.state.gates.pop(task_id, None)
            self._close_overlay()
        elif key == "v" and gate.get("kind") == "merge":
            self._page(f"{task_id}: merge {gate.get('branch', '')}", _read(gate["diff"]))
        elif key == "v":
            self._page_task(gate)
        elif key == "e" and gate.get("kind") != "merge":
            self._edit(gate.get("brief") or self._task_file(task_id))

    def _decide(self, task_id: str, approve: bool) -> None:
        request = {"cmd": "gate", "action": "approve" if approve else "reject", "id": task_id}
        if not approve:
            request["reason"] = "the operator said no in the deck."

        def done(ack: dict) -> None:
            if ack.get("status") == "ok":
                self.say(f"{'approved' if approve else 'rejected'} {task_id}",
                         "working" if approve else "waiting")
        self.command(request, done)

    def _task_file(self, task_id: str) -> str:
        return str(self.port.workdir / ".choragos" / "tasks" / f"{task_id}.md")

    def _task_text(self, task: dict) -> str:
        if task.get("kind") == "merge":
            return _read(task["diff"])
        return _read(self._task_file(task["id"]))

    def _page_task(self, task: dict) -> None:
        text = self._task_text(task)
        if task.get("brief"):
            text += f"\n\n──── brief: {task['brief']} ────\n\n" + _read(task["brief"])
        self._page(f"{task['id']} for {task['role']}", text)

    def _page(self, title: str, text: str) -> None:
        back = (self.overlay, self.overlay_kind)

        def close() -> None:
            if back[0] is not None and back[1] != "gate":
                self._open_overlay(back[0], back[1], ("relative", 90), ("relative", 80))
            else:
                self._close_overlay()
        self._open_overlay(PagerOverlay(title, text, close), "pager", ("relative", 90),
                           ("relative", 85))

    # -- the editor --------------------------------------------------------------------------

    def _edit(self, path: str | None) -> None:
        if not path:
            self.say("nothing to edit")
            return
        command = (self.client.editor or os.environ.get("VISUAL") or os.environ.get("EDITOR")
                   or "vi")
        try:
            argv = [*shlex.split(command), path]
        except ValueError:
            self.say(f"cannot parse the editor command {command!r}")
            return
        cols, rows = self.screen.get_cols_rows()
        back = (self.overlay, self.overlay_kind)
        self.overlay, self.overlay_kind = None, ""
        self.loop.widget = self.view
        try:
            self.editor = EditorPopup(argv, path, self.port.workdir, cols, max(rows - 1, 1),
                                      lambda: self.post("call", lambda: self._edit_done(back)),
                                      lambda: self.post("refresh"))
        except Exception as exc:  # the deck goes on without it
            self.editor = None
            self.say(f"cannot start {argv[0]}: {exc}")
            self._restore(back)

    def _edit_done(self, back: tuple) -> None:
        if self.editor is not None:
            self.editor.kill()
        self.editor = None
        self._restore(back)
        self.say("editor closed")

    def _restore(self, back: tuple) -> None:
        if back[0] is not None and back[1] not in ("gate", "pager"):
            self._open_overlay(back[0], back[1], ("relative", 90), ("relative", 80))
        else:
            self._maybe_show_gate()

    # -- actions (one per [keys] action; names match config.KEY_ACTIONS) ------------------------

    def act_split_vertical(self) -> None:
        self._user_focus(lambda: self.state.layout.split(ROW))

    def act_split_horizontal(self) -> None:
        self._user_focus(lambda: self.state.layout.split(COLUMN))

    def act_close_pane(self) -> None:
        def close() -> None:
            role = self.state.layout.close()
            self.say(f"{role} is hidden and keeps running "
                     f"({k.display_name(self.keymap.prefix_spelling)} "
                     f"{self.state.layout.roster.index(role) + 1} shows it)")
        self._user_focus(close)

    def _move(self, direction: str) -> None:
        cols, rows = self.screen.get_cols_rows()
        body_w, body_h, _ = self._areas(cols, rows)
        self._user_focus(lambda: self.state.layout.move_focus(direction, body_w, body_h))

    def act_focus_pane_left(self) -> None:
        self._move("left")

    def act_focus_pane_right(self) -> None:
        self._move("right")

    def act_focus_pane_up(self) -> None:
        self._move("up")

    def act_focus_pane_down(self) -> None:
        self._move("down")

    def act_cycle_pane_next(self) -> None:
        self._user_focus(lambda: self.state.layout.cycle(1))

    def act_cycle_pane_previous(self) -> None:
        self._user_focus(lambda: self.state.layout.cycle(-1))

    def act_zoom(self) -> None:
        if not self.state.layout.toggle_zoom() and len(self.state.layout.shown()) <= 1:
            self.say("only one pane is shown; nothing to zoom")
        self.relayout()

    def act_resize_mode(self) -> None:
        self.mode = "resize"

    def act_toggle_sidebar(self) -> None:
        self.state.sidebar = not self.state.sidebar
        self.relayout()

    def act_restart_role(self) -> None:
        role = self.state.layout.focus
        if role is None:
            return

        def answer(yes: bool) -> None:
            self._close_overlay()
            if yes:
                self.command({"cmd": "restart", "role": role},
                             lambda ack: ack.get("status") == "ok"
                             and self.say(f"restarting {role}"))
        self._open_overlay(ConfirmOverlay(
            f"Restart {role}?",
            [f"{role}'s process is stopped (SIGTERM, then SIGKILL) and started again.",
             "Whatever it was doing is lost; its restart budget is reset.",
             "Open tasks of this role are marked failed and the orchestrator is told."],
            answer, "y restart"), "confirm", ("relative", 70), 10)

    def act_pause_role(self) -> None:
        role = self.state.layout.focus
        if role is None:
            return
        info = self.state.roles.get(role)
        action = "resume" if info is not None and info.status == "paused" else "pause"
        self.command({"cmd": action, "role": role},
                     lambda ack: ack.get("status") == "ok"
                     and self.say(f"{'resumed' if action == 'resume' else 'paused'} {role}"))

    def act_reload(self) -> None:
        def done(ack: dict) -> None:
            if ack.get("status") == "ok":
                self.say(ack.get("message") or "reloaded", "working")
                self._sync()
        self.say("reloading the config…")
        self.command({"cmd": "reload"}, done)

    def act_detach(self) -> None:
        self.detach("detached")

    def act_broadcast(self) -> None:
        self.state.broadcast = not self.state.broadcast
        self.say("broadcast on: keys go to every shown pane" if self.state.broadcast
                 else "broadcast off")

    def act_task_board(self) -> None:
        def opened(ack: dict) -> None:
            for task in ack.get("tasks", []) if ack.get("status") == "ok" else []:
                self.state.tasks[task["id"]] = task
            if self.overlay_kind == "board":
                self._show_board()
        self._show_board()
        self.command({"cmd": "board"}, opened)

    def _sorted_tasks(self) -> list[dict]:
        return sorted(self.state.tasks.values(), key=lambda t: int(t["id"][1:])
                      if t["id"][1:].isdigit() else 0)

    def _show_board(self) -> None:
        self._open_overlay(BoardOverlay(self._sorted_tasks(), self._board_action,
                                        self._board_selected),
                           "board", ("relative", 90), ("relative", 80))

    def _board_action(self, action: str, task: dict | None) -> None:
        if task is not None:
            self._board_selected = task["id"]
        if action == "close":
            self._close_overlay()
            return
        if action == "page":
            self._write_page()
            return
        if task is None:
            return
        if action == "view":
            self._page_task(task)
        elif action == "report":
            report = task.get("report")
            if report:
                self._page(f"report of {task['id']}", _read(report))
            else:
                self.say(f"{task['id']} has no report yet")
        elif action == "edit":
            self._edit(task.get("brief") or self._task_file(task["id"]))
        elif action in ("approve", "reject"):
            if task.get("state") != "gated" and task["id"] not in self.state.gates:
                self.say(f"{task['id']} is {task.get('state')}, not waiting at a gate")
                return
            self._decide(task["id"], action == "approve")
        elif action == "rollback":
            self._plan_rollback(task)
        elif action == "diff":
            self._show_diff(task)

    def _show_diff(self, task: dict) -> None:
        """The task's changes against its checkpoint, paged (worked out off the UI thread)."""
        from choragos import worktrees
        workdir = self.port.workdir
        branched = (worktrees.path_of(workdir, task["role"]) / ".git").exists()
        if not branched and not task.get("checkpoint"):
            self.say(f"{task['id']} has no checkpoint to compare with")
            return

        def work() -> None:
            from choragos.changes import ChangesError, branch_diff, since_checkpoint
            from choragos.checkpoints import CheckpointError, NotARepository
            if branched:
                title = f"diff of {worktrees.branch_of(task['role'])} (unmerged work)"
            else:
                title = f"diff of {task['id']} since its checkpoint"
            try:
                text = (branch_diff(workdir, worktrees.branch_of(task["role"])) if branched
                        else since_checkpoint(workdir, task["checkpoint"]))
            except (ChangesError, CheckpointError, NotARepository, OSError,
                    worktrees.WorktreeError) as exc:
                why = f"cannot show the diff: {exc}"
                self.post("call", lambda: self.say(why, "failed"))
                return
            self.post("call", lambda: self._page(
                title, text or "No file differs."))
        with contextlib.suppress(RuntimeError):  # shutting down
            self._workers.submit(work)

    def _write_page(self) -> None:
        """``choragos report --html`` for this session, into .choragos/report.html."""
        workdir = self.port.workdir
        config = getattr(self.port, "config", None)
        price_for = config.price_for if config is not None else (lambda model: None)
        target = workdir / ".choragos" / "report.html"

        def work() -> None:
            from choragos.cli.report import session_page
            try:
                session_page(workdir, target, price_for)
                said = (f"wrote {target}: open it in a browser", "status message")
            except Exception as exc:  # reported on screen, never fatal
                said = (f"cannot write the report page: {exc}", "failed")
            self.post("call", lambda: self.say(*said))

        with contextlib.suppress(RuntimeError):  # shutting down
            self._workers.submit(work)

    def act_search(self) -> None:
        found = self._focused_pane()
        if found is None:
            return
        role, pane, terminal, height = found
        previous = pane.scroll.query if pane.scroll else ""

        def done(query: str | None) -> None:
            self._close_overlay()
            if not query:
                return
            if pane.search(terminal, query, height):
                count = len(pane.scroll.matches)
                self.say(f"{count} line{'s' if count != 1 else ''} match; n older, N newer, "
                         "q back", "scroll")
            else:
                self.say(f"no line of {role} matches {query!r}")
                if pane.scroll is not None and not pane.scroll.offset:
                    pane.end_scroll()
        self._open_overlay(PromptOverlay(f"Search {role}", "/", done, previous), "search",
                           ("relative", 60), 5)

    def act_help(self) -> None:
        self._open_overlay(HelpOverlay(self.keymap, self._close_overlay), "help",
                           ("relative", 80), ("relative", 85))

    # -- rollback (D4, issue 6 item 3) ---------------------------------------------------------

    def _plan_rollback(self, task: dict) -> None:
        if not task.get("checkpoint"):
            self.say(f"{task['id']} has no checkpoint (not taken yet, or checkpoints are off)")
            return
        target = task["checkpoint"]
        self.say(f"planning the rollback to before {task['id']}…")

        def work() -> None:
            from choragos.checkpoints import CheckpointError, CheckpointStore, NotARepository
            try:
                with CheckpointStore(self.port.workdir) as store:
                    plan = store.plan_rollback(target)
                result: Any = plan
            except (CheckpointError, NotARepository, OSError) as exc:
                result = exc
            self.post("call", lambda: self._confirm_rollback(task, result))
        self._workers.submit(work)

    def _confirm_rollback(self, task: dict, plan: Any) -> None:
        if isinstance(plan, Exception):
            self.say(f"cannot roll back: {plan}", "failed")
            return
        lines: list[Any] = [f"checkpoint {plan.checkpoint.name} (before {task['id']} went to "
                            f"{task['role']})", ""]
        if plan.empty and not plan.conflicts:
            lines.append("The files already match this checkpoint: nothing to roll back.")
            self._open_overlay(ConfirmOverlay(f"Roll back to before {task['id']}", lines,
                lambda yes: self._close_overlay(), allow_yes=False), "confirm",
                ("relative", 80), ("relative", 60))
            return
        lines.append(f"{len(plan.restore)} file(s) to restore, {len(plan.delete)} to delete:")
        lines += [f"  restore  {inert(p)}" for p in plan.restore[:200]]
        lines += [f"  delete   {inert(p)}" for p in plan.delete[:200]]
        if plan.head_moved:
            lines += ["", ("waiting", f"HEAD moved since ({plan.head_then[:12]} -> "
                                      f"{plan.head_now[:12]}); commits stay, only files change")]
        lines += ["", ("waiting", "Agents of this session may be writing files right now."),
                  f"The current state is saved first: undo with "
                  f"`choragos rollback pre-rollback-{task['id']}`."]
        if plan.conflicts:
            lines += ["", ("failed", "In the way (rollback refuses until they are moved):")]
            lines += [f"  {inert(p)}" for p in plan.conflicts[:50]]

        def answer(yes: bool) -> None:
            self._close_overlay()
            if yes:
                self._rollback(task, plan)
        self._open_overlay(ConfirmOverlay(f"Roll back to before {task['id']}?", lines, answer,
                                          "y roll back", allow_yes=not plan.conflicts),
                           "confirm", ("relative", 85), ("relative", 75))

    def _rollback(self, task: dict, plan: Any) -> None:
        def work() -> None:
            from choragos.checkpoints import CheckpointError, CheckpointStore
            try:
                with CheckpointStore(self.port.workdir) as store:
                    result = store.rollback(plan.checkpoint)
                if result.saved is None:
                    text = "the files already matched; nothing changed"
                else:
                    text = (f"rolled back to before {task['id']}: restored "
                            f"{len(result.restored)}, deleted {len(result.deleted)}; undo: "
                            f"choragos rollback {result.saved.task_id}")
                style = "working"
            except (CheckpointError, OSError) as exc:
                text, style = f"rollback failed, nothing changed: {exc}", "failed"
            self.post("call", lambda: self.say(text, style))
        self._workers.submit(work)


def _join(segments: list[tuple[int, Line]], width: int) -> Line:
    data: list[bytes] = []
    attrs: list[tuple[Any, int]] = []
    col = 0
    for x, (raw, runs) in segments:
        if x > col:
            gap = blank_line(x - col)
            data.append(gap[0])
            attrs += gap[1]
            col = x
        data.append(raw)
        attrs += runs
        col += _line_width(raw, runs)
    if col < width:
        gap = blank_line(width - col)
        data.append(gap[0])
        attrs += gap[1]
    return b"".join(data), attrs


def _line_width(raw: bytes, runs: list) -> int:
    if raw.isascii():
        return len(raw)
    text = raw.decode("utf-8", "replace")
    return urwid.str_util.calc_width(text, 0, len(text))


def _read(path: str, limit: int = 512 * 1024) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(limit + 1)
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror or exc})"
    if len(text) > limit:
        text = text[:limit] + "\n… (cut at 512 KiB)"
    return text


class EditorPopup:
    """``$EDITOR`` in a terminal of its own, drawn over the whole deck until it exits.

    The editor runs inside the server like every pane, so it survives a
    detach and is still there on the next attach.
    """

    def __init__(self, argv: list[str], path: str, cwd: Path, cols: int, rows: int,
                 on_exit: Callable[[], None], on_output: Callable[[], None]) -> None:
        from choragos.ptyproc import PtyChild, Reader

        self.path = path
        env = {**os.environ, "TERM": "xterm-256color"}
        self.terminal = Terminal(cols, rows)
        self.child = PtyChild.spawn(argv, cwd, env, cols, rows)
        self.terminal.reply = self.child.write

        def data(chunk: bytes) -> None:
            self.terminal.feed(chunk)
            on_output()

        self.reader = Reader(self.child, data, lambda status: on_exit(), name="deck-editor")
        self.reader.start()
        self.view = PaneView("editor")

    def send(self, token: k.Token) -> None:
        data = k.to_agent(token, application_cursor=self.terminal.application_cursor,
                          bracketed_paste=self.terminal.bracketed_paste)
        if data:
            self.child.write(data)

    def resize(self, cols: int, rows: int) -> None:
        if (cols, rows) != (self.terminal.cols, self.terminal.rows):
            self.terminal.resize(cols, rows)
            self.child.resize(cols, rows)

    def render(self, cols: int, rows: int, deck: Deck) -> tuple[list[Line],
                                                              tuple[int, int] | None]:
        height = max(rows - 1, 1)
        self.resize(cols, height)
        self.view.generation += 1
        lines, cursor = self.view.content(self.terminal, cols, height, focused=True,
                                          colors=deck.screen.colors)
        status = text_line(cols, [(" EDITOR ", "status accent"),
                                  (f" {inert(self.path)}: the deck comes back when the editor "
                                   "exits ", "status")], "status")
        return [*lines, status][:rows], cursor

    def kill(self) -> None:
        self.reader.halt()
        self.child.terminate(1.0)
        self.child.close()


def colors_for(term: str, colorterm: str, no_color: bool = False) -> int:
    """The colour depth to draw with for a client terminal; 1 (bold and
    reverse video only) when its user set ``NO_COLOR``."""
    if no_color:
        return 1
    if colorterm.lower() in ("truecolor", "24bit"):
        return TRUECOLOR
    return 256
