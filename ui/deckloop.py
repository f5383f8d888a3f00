"""The deck's loop: one urwid main loop on a thread of its own, woken
through one pipe by the mailbox of posted work, drawing only for an attached
client and only when something changed (new output of shown panes is
coalesced into frames; a pane typed into is drawn at once).
"""

from __future__ import annotations

import functools
import logging
import os
import time
import traceback
from collections.abc import Callable
from typing import Any

import urwid

from choragos import statedir
from choragos.terminal import Terminal
from choragos.ui import keys as k
from choragos.ui.deckbase import (
    BUSY_FRAME,
    FAST_WINDOW,
    FRAME,
    MESSAGE_TIME,
    OVERLAY_REFRESH,
    PACE_BACKLOG,
    TMUX_HINT,
    ClientInfo,
)
from choragos.ui.theme import build_palette

log = logging.getLogger("choragos.deck")


class _Loop(urwid.MainLoop):
    """A main loop that draws only for an attached client, and only on change."""

    deck: Any  # the Deck this loop draws

    # Everything the loop runs for the deck holds the deck's drawing lock, so
    # the echo lane (drawing from a pane's reader thread) never sees a state
    # half changed.

    def set_alarm_in(self, sec: float, callback: Callable[..., Any],
                     user_data: Any = None) -> Any:
        return super().set_alarm_in(sec, self.deck.locked(callback), user_data)

    def watch_pipe(self, callback: Callable[[bytes], bool | None]) -> int:
        return super().watch_pipe(self.deck.locked(callback))

    def draw_screen(self) -> None:
        with self.deck.drawing:
            self._draw()
            self.deck.lane_open = self.deck.attached

    def _draw(self) -> None:
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

    def __init__(self, deck: Any) -> None:
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



class DeckLoop:
    """Mixed into Deck: the loop, the mailbox, attach and detach, frame timing."""

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
            self.overlay, self.overlay_kind, self.mode = None, "", "normal"
            self.say(f"the deck crashed and restarted; traceback in {self.crash_log}",
                     "failed")
            self._ended = True
            self.on_loop_crash(f"{type(exc).__name__}: {exc}")

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
            self.client_attached(self.client)
        try:
            self.loop.run()
        finally:
            with self.drawing:
                self.lane_open = False
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
        """Run the posted work; each item returns False when it needs no frame."""
        self.wakeups += 1
        with self._guard:
            self._wake_pending = False
            items = list(self._inbox)
            self._inbox.clear()
        redraw = False
        for work in items:
            redraw = work() is not False or redraw
        if redraw:
            self.dirty = True
        return True

    def _exit(self) -> None:
        raise urwid.ExitMainLoop()

    def _resized(self, cols: int, rows: int) -> None:
        self.screen.set_size(cols, rows)
        self.client.cols, self.client.rows = cols, rows

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
        self.screen.restart()
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
        self.lane_open = False
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
        """Have ``terminal`` wake the loop when it changes (once per frame
        drawn, or per feed while its echo misses the lane)."""
        if self._watched.get(role) is not terminal:
            self._watched[role] = terminal
            # A partial, not a lambda: one Python frame fewer on an echo's way.
            terminal.on_change = functools.partial(self._pane_output, role)

    def _pane_output(self, role: str) -> None:
        """A watched terminal changed, on whichever thread fed it: the echo of
        a key is drawn right there when it can be; anything else is the loop's."""
        if self._echo_until.get(role, 0.0) > time.monotonic() and self.echo_lane(role):
            return
        self.post(lambda: self._pane_changed(role))

    def _pane_changed(self, role: str) -> bool:
        """A shown pane has new output: a pane typed into is drawn at once
        (its echo is what the user waits for); the others wait for the frame
        budget, a longer one while the user types, so a flood is coalesced
        into few frames and never queues ahead of an echo."""
        now = time.monotonic()
        typed = self._typed.get(role, 0) > now
        if not self.attached or role not in self.state.layout.visible():
            if typed:
                self.port.echo_drawn(role)  # never drawn: nothing for the others to wait for
            return False  # not drawn: its terminal stays quiet until it is
        if typed:
            self._changed.discard(role)
            self._echo_owed.add(role)  # the other panes' output waits for this frame
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
        if self.client_backlog() > PACE_BACKLOG and self.loop is not None:
            # The client is behind: its neighbours' output waits (and keeps
            # coalescing) until it caught up, as tmux skips redrawing busy
            # panes for a slow client; an echo never waits for this.
            self._frame_alarm = self.loop.set_alarm_in(FRAME, self._frame_up)
            return
        self._frame_due = True
        self.dirty = True

    def drawn(self) -> None:
        """A frame went out (called by the loop)."""
        self.frames += 1
        self._last_frame = time.monotonic()
        self._frame_due = False
        self._typed = {r: until for r, until in self._typed.items() if until > self._last_frame}
        for role in self._echo_owed:
            self.port.echo_drawn(role)
        self._echo_owed.clear()

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

