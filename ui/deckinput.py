"""Keys and mouse: the prefix key, keys to agents (or to every shown
pane when broadcasting), mouse routing to panes and the sidebar,
scrollback and search keys, and the resize mode.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from choragos.terminal import Terminal
from choragos.ui import keys as k
from choragos.ui.deckbase import (
    AUTO_FOCUS_PAUSE,
    ESC_WAIT,
    FAST_WINDOW,
)
from choragos.ui.layout import LayoutError
from choragos.ui.overlays import inert
from choragos.ui.pane import PaneView

# Bytes that are typed as themselves whatever the deck's state: printable
# ASCII, Enter and Backspace (no escape sequence, no control key).
_PLAIN = bytes([*range(0x20, 0x7f), 0x0d, 0x7f])
_PLAIN_NAMES = {"enter": b"\r", "backspace": b"\x7f"}


class DeckInput:
    """Mixed into Deck: input routing."""

    # -- input ---------------------------------------------------------------------------

    def _keys_direct(self, data: bytes) -> bool:
        """On the attach pump's thread: plain typing for the focused agent,
        with nothing else going on in the deck (no dialog, prefix, scroll,
        broadcast, key sequence or earlier input in progress), is written to
        its PTY right here; the keystroke's echo then waits for no hand-over
        to the deck's thread.  False: the deck's loop must act on ``data``."""
        if not data or data.translate(None, _PLAIN):
            return False
        role = self._direct_target()
        prefix = self.keymap.prefix
        if role is None or _PLAIN_NAMES.get(prefix, prefix.encode()) in data:
            return False
        # The neighbours are held first, so none of them takes the interpreter
        # while the keys are written; the rest is noted while the agent works
        # on its echo, which takes far longer than these lines.  (Should the
        # echo win all the same, it is drawn by the loop: later, never lost.)
        self.port.expect_echo(role, len(data))
        self.port.type_keys(role, data)
        self._echo_until[role] = time.monotonic() + FAST_WINDOW
        # Acted on before the echo's wake-up (the echo is then drawn at once,
        # as for keys typed through the loop), without a wake-up of its own
        # competing with the echo's way back.
        self.post(lambda: self._typed_at(role), wake=False)
        return True

    def _direct_target(self) -> str | None:
        """The focused role when the deck would pass plain keys straight to it."""
        with self._guard:
            if self._inputs_waiting:
                return None  # earlier bytes first
        if (not self.attached or self.editor is not None or self.overlay is not None
                or self.mode != "normal" or self.state.broadcast or self.tokenizer.pending
                or self.tokenizer.in_paste):
            return None
        role = self.state.layout.focus
        pane = self.state.panes.get(role) if role else None
        if role is None or (pane is not None and pane.scroll is not None):
            return None
        return role if self.port.terminal(role) is not None else None

    def _typed_at(self, role: str) -> bool:
        """What typing through the loop notes, for keys written directly."""
        self._note_typed([role])
        return False

    def _posted_input(self, data: bytes) -> bool | None:
        try:
            return self._input(data)
        finally:
            with self._guard:
                self._inputs_waiting -= 1

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
                self.port.type_keys(role, data)
        self._note_typed(targets)

    def _note_typed(self, targets: list[str | None]) -> None:
        """The user is typing into ``targets``: their echo is drawn at once."""
        self._user_active_until = time.monotonic() + AUTO_FOCUS_PAUSE
        until = time.monotonic() + FAST_WINDOW
        for role in targets:
            if role is not None:
                self._typed[role] = until
                self._echo_until[role] = until

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
            # Where the click is on the agent's terminal: the tile may show a
            # part of it (a viewport, see PaneView.origin).
            ox, oy = self.state.pane(role).origin
            data = k.mouse_to_agent(name, button, x - rect.x + ox, y - rect.y - 1 + oy,
                                    mode=terminal.mouse_tracking, sgr=terminal.mouse_sgr)
            if data:
                self.port.type_keys(role, data)
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

