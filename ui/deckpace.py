"""When the deck draws a pane's new output: at once for a pane typed into
(its echo is what the user waits for), else within a frame budget, a
longer one while the user types, and later still while the client is
behind, so a flood is coalesced into few frames and never queues ahead of
an echo.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from choragos.terminal.emulator import Terminal
from choragos.ui.deckbase import BUSY_FRAME, FAST_WINDOW, FRAME, PACE_BACKLOG


class FramePacer:
    """Which shown panes wait for a frame, and when the next frame is due.

    ``on_output(role)`` is called on the feeding thread when a watched
    terminal changed; ``echo_drawn(role)`` when a typed pane's echo went
    out; ``backlog()`` is what the client has not read yet; ``redraw()``
    asks the loop for a frame.  ``loop`` (set while the loop runs) gives
    the alarms.
    """

    def __init__(self, on_output: Callable[[str], None], echo_drawn: Callable[[str], None],
                 backlog: Callable[[], int], redraw: Callable[[], None]) -> None:
        self.on_output = on_output
        self.echo_drawn = echo_drawn
        self.backlog = backlog
        self.redraw = redraw
        self.loop: Any = None
        self.changed: set[str] = set()  # shown panes with output not drawn yet
        self.frame_due = False         # the frame budget is up: changed panes are drawn
        self.last_frame = 0.0          # the last frame drawn for output (a budget runs from it)
        self.whole_owed = False        # a new client's whole frame is the next one drawn
        self.frames = 0                # frames the loop drew
        self.wakeups = 0               # alarms that woke the loop for a frame
        self.watched: dict[str, Terminal] = {}  # terminals whose on_change wakes us
        self.typed: dict[str, float] = {}  # role -> until when it is drawn at once
        # The same, read on reader threads by the echo lane (written, never iterated).
        self.echo_until: dict[str, float] = {}
        self.echo_owed: set[str] = set()  # typed panes whose echo the loop's next frame draws
        # Told (on the feeding thread) of a watched terminal's plain echo: the
        # role, the text and the cell it was written at (see Terminal.on_echo).
        self.on_echo: Callable[[str, str, int, int], bool] | None = None
        self._alarm: Any = None

    def watch(self, role: str, terminal: Terminal) -> None:
        """Have ``terminal`` call ``on_output`` when it changes (once per frame
        drawn, or per feed while its echo misses the lane)."""
        if self.watched.get(role) is not terminal:
            self.watched[role] = terminal
            # A partial, not a lambda: one Python frame fewer on an echo's way.
            terminal.on_change = functools.partial(self.on_output, role)
            if self.on_echo is not None:
                terminal.on_echo = functools.partial(self.on_echo, role)

    def let_go(self) -> None:
        """This deck is done (a deck built anew after a give-up takes over the
        roles): the terminals it watched stop calling it.  Their callbacks
        would keep the whole dead deck for the session's life and post into
        its stopped loop.  A no-op, not None: a feed on a reader thread may be
        between its check of the callback and its call."""
        for terminal in self.watched.values():
            if getattr(terminal.on_change, "func", None) == self.on_output:
                terminal.on_change = _unwatched
            if self.on_echo is not None and getattr(terminal.on_echo, "func", None) == self.on_echo:
                terminal.on_echo = _unwatched
        self.watched.clear()

    def echoing(self, role: str) -> bool:
        """``role`` was typed into just now: its output is likely the echo."""
        return self.echo_until.get(role, 0.0) > time.monotonic()

    def typed_directly(self, role: str) -> None:
        """Keys went straight to ``role``'s PTY: its echo may take the lane."""
        self.echo_until[role] = time.monotonic() + FAST_WINDOW

    def taken(self, role: str) -> None:
        """``role``'s output is being drawn: it waits for no frame."""
        self.changed.discard(role)

    def forget(self) -> None:
        """A new client gets a whole frame: no pane waits for one, and no budget
        runs from it (drawn for the client, not for output: the agents' first
        prompts coming just after it are drawn at once, not a budget later)."""
        self.changed.clear()
        self.whole_owed = True

    def note_typed(self, targets: list[str | None]) -> None:
        """The user is typing into ``targets``: their echo is drawn at once."""
        until = time.monotonic() + FAST_WINDOW
        for role in targets:
            if role is not None:
                self.typed[role] = until
                self.echo_until[role] = until

    def pane_changed(self, role: str, shown: bool) -> bool:
        """A pane has new output (``shown``: on the attached client's screen);
        True when it is drawn in a frame now."""
        now = time.monotonic()
        typed = self.typed.get(role, 0) > now
        if not shown:
            if typed:
                self.echo_drawn(role)  # never drawn: nothing for the others to wait for
            return False  # not drawn: its terminal stays quiet until it is
        if typed:
            self.changed.discard(role)
            self.echo_owed.add(role)  # the other panes' output waits for this frame
            return True
        self.changed.add(role)
        # While the user types, the budget runs from the last key too: keys
        # draw no frame of their own, and the echo must not share its frame.
        last_key = max(self.typed.values(), default=0.0) - FAST_WINDOW
        typing = last_key + FAST_WINDOW > now
        self._schedule(now, BUSY_FRAME if typing else FRAME, max(self.last_frame, last_key))
        return False

    def waiting(self, role: str) -> bool:
        """``role``'s new output waits for the frame budget: drawn as it was."""
        return role in self.changed and not self.frame_due

    def _schedule(self, now: float, budget: float, since: float) -> None:
        if self._alarm is not None or self.loop is None:
            return
        self._alarm = self.loop.set_alarm_in(max(since + budget - now, 0.0), self._frame_up)

    def _frame_up(self, _loop: Any = None, _data: Any = None) -> None:
        self.wakeups += 1
        self._alarm = None
        if self.backlog() > PACE_BACKLOG and self.loop is not None:
            # The client is behind: its neighbours' output waits (and keeps
            # coalescing) until it caught up, as tmux skips redrawing busy
            # panes for a slow client; an echo never waits for this.
            self._alarm = self.loop.set_alarm_in(FRAME, self._frame_up)
            return
        self.frame_due = True
        self.redraw()

    def drawn(self) -> None:
        """A frame of the loop's went out."""
        self.frames += 1
        now = time.monotonic()
        if self.whole_owed:
            self.whole_owed = False
        else:
            self.last_frame = now
        self.frame_due = False
        self.typed = {r: until for r, until in self.typed.items() if until > now}
        for role in self.echo_owed:
            self.echo_drawn(role)
        self.echo_owed.clear()

    def stop(self) -> None:
        """The client is gone: no frame is due."""
        if self._alarm is not None and self.loop is not None:
            self.loop.remove_alarm(self._alarm)
        self._alarm = None


def _unwatched(*args: Any) -> None:
    """A let-go terminal's callback: nobody is told (an echo is "not shown")."""
    return None
