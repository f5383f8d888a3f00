"""The deck's actions: the input router's intents carried out.

Keys typed at the agents go to their PTYs; the mouse goes to a pane, the
sidebar or the open dialog; scrollback, search and border moves change
the focused pane and the tiling; and each ``[keys]`` action has a method
``act_<name>`` (the names match ``config.KEY_ACTIONS``), but the resize
mode, which is the router's own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import singledispatchmethod
from typing import Any

from choragos.actors.base import dispatch_of
from choragos.roles.rolestatus import RoleStatus
from choragos.terminal.emulator import Terminal
from choragos.ui import deckinput as di
from choragos.ui import keys as k
from choragos.ui.deckbase import AUTO_FOCUS_PAUSE, DeckHost, SessionPort
from choragos.ui.deckboard import TaskDialogs
from choragos.ui.deckcommands import CommandRunner
from choragos.ui.deckdraw import Renderer
from choragos.ui.deckmodel import DeckModel
from choragos.ui.deckoverlays import OverlayStack
from choragos.ui.deckpace import FramePacer
from choragos.ui.layout import COLUMN, ROW, LayoutError
from choragos.ui.pane import PaneView, deepest, inert

_SCROLL_ENDS = ("end", "G", "q", "esc")


class Actions:
    """What the keys and the mouse do."""

    def __init__(self, model: DeckModel, port: SessionPort, keymap: k.Keymap, host: DeckHost,
                 overlays: OverlayStack, dialogs: TaskDialogs, commands: CommandRunner,
                 renderer: Renderer, pacer: FramePacer) -> None:
        self.model = model
        self.port = port
        self.keymap = keymap
        self.host = host
        self.overlays = overlays
        self.dialogs = dialogs
        self.commands = commands
        self.renderer = renderer
        self.pacer = pacer
        self.user_active_until = 0.0  # auto-focus waits while the user works in a pane

    # -- intents ---------------------------------------------------------------------------

    _action_for: Any = None  # the class's lookup of its handlers, set below the class

    def do(self, intent: Any) -> None:
        """Carry ``intent`` out, by the handler registered for its class."""
        self._action_for(intent.__class__)(self, intent)

    @singledispatchmethod
    def _do(self, intent: Any) -> None:
        raise TypeError(f"the deck has no action for {type(intent).__name__}")

    @_do.register(di.TypeKeys)
    def _type(self, intent: di.TypeKeys) -> None:
        state = self.model.state
        layout = state.layout
        targets = layout.shown() if state.broadcast else [layout.focus]
        for role in targets:
            if role is None:
                continue
            terminal = self.port.terminal(role)
            if terminal is None:
                continue
            data = k.to_agent(intent.token, application_cursor=terminal.application_cursor,
                              bracketed_paste=terminal.bracketed_paste)
            if data:
                self.port.type_keys(role, data)
        self.typed(targets)

    @_do.register(di.ToEditor)
    def _to_editor(self, intent: di.ToEditor) -> None:
        if self.overlays.editor is not None:
            self.overlays.editor.send(intent.token)

    @_do.register(di.ToDialog)
    def _to_dialog(self, intent: di.ToDialog) -> None:
        self.overlays.key(intent.token)

    @_do.register(di.RunAction)
    def _run(self, intent: di.RunAction) -> None:
        getattr(self, "act_" + intent.action)()

    @_do.register(di.FocusNumber)
    def _focus_number(self, intent: di.FocusNumber) -> None:
        self._user_focus(lambda: self.model.state.layout.focus_index(intent.number))

    @_do.register(di.Unbound)
    def _unbound(self, intent: di.Unbound) -> None:
        self.host.say(f"{k.display_name(self.keymap.prefix_spelling)} {inert(intent.key)}: "
                      "not bound (? lists the keys)")

    @_do.register(di.MoveBorder)
    def _move_border(self, intent: di.MoveBorder) -> None:
        if not self.model.state.layout.resize(intent.direction):
            self.host.say(f"no border to move {intent.direction}")
        self.host.relayout()

    def typed(self, targets: list[str | None]) -> None:
        """The user is typing into ``targets``: their echo is drawn at once."""
        self.user_active_until = time.monotonic() + AUTO_FOCUS_PAUSE
        self.pacer.note_typed(targets)

    def _user_focus(self, change: Callable[[], Any]) -> None:
        try:
            change()
        except LayoutError as exc:
            self.host.say(str(exc))
        self.user_active_until = time.monotonic() + AUTO_FOCUS_PAUSE
        self.host.relayout()

    # -- mouse -----------------------------------------------------------------------------

    @_do.register(di.Mouse)
    def _mouse(self, intent: di.Mouse) -> None:
        if self.overlays.widget is not None:
            self.overlays.mouse(intent.event)
            return
        name, button, x, y = intent.event
        state = self.model.state
        body_w, body_h, side = self.renderer.screen_areas()
        if side and x >= body_w and "press" in name and button == 1:
            self._sidebar_click(y)
            return
        geometry = state.layout.geometry(body_w, body_h)
        role = next((r for r, rect in geometry.tiles.items() if rect.contains(x, y)), None)
        if role is None:
            return
        rect = geometry.tiles[role]
        terminal = self.port.terminal(role)
        inside = y > rect.y
        if terminal is not None and inside and terminal.mouse_tracking:
            # Where the click is on the agent's terminal: the tile may show a
            # part of it (a viewport, see PaneView.origin).
            ox, oy = state.pane(role).origin
            data = k.mouse_to_agent(name, button, x - rect.x + ox, y - rect.y - 1 + oy,
                                    mode=terminal.mouse_tracking, sgr=terminal.mouse_sgr)
            if data:
                self.port.type_keys(role, data)
            if "press" in name and button in (1, 2, 3):
                state.layout.focus = role
            return
        if "press" in name and button in (4, 5) and terminal is not None:
            state.pane(role).scroll_by(terminal, 3 if button == 4 else -3, rect.h - 1)
            return
        if "press" in name and button == 1:
            self._user_focus(lambda: setattr(state.layout, "focus", role))

    def _sidebar_click(self, y: int) -> None:
        for name, start, end in self.renderer.card_spans:
            if start <= y < end:
                self._user_focus(lambda n=name: self.model.state.layout.show(n))
                return

    # -- scrollback and search ---------------------------------------------------------------

    def _focused_pane(self) -> tuple[str, PaneView, Terminal, int] | None:
        state = self.model.state
        role = state.layout.focus
        terminal = self.port.terminal(role) if role else None
        if role is None or terminal is None:
            return None
        height = state.sizes.get(role, (0, terminal.rows))[1]
        return role, state.pane(role), terminal, height

    @_do.register(di.ScrollBack)
    def _scroll_back(self, intent: di.ScrollBack) -> None:
        found = self._focused_pane()
        if found is None:
            return
        _, pane, terminal, height = found
        if not terminal.history_size():
            self.host.say("nothing has scrolled off this pane yet")
            return
        pane.scroll_to(terminal, (pane.scroll.offset if pane.scroll else 0)
                       + (max(height - 1, 1) if intent.page else 0), height)

    @_do.register(di.ScrollKey)
    def _scroll_key(self, intent: di.ScrollKey) -> None:
        found = self._focused_pane()
        if found is None:
            return
        _, pane, terminal, height = found
        key = intent.key
        page = max(height - 1, 1)
        moves = {"page up": page, "page down": -page, "up": 1, "k": 1, "down": -1, "j": -1,
                 "ctrl u": page // 2, "ctrl d": -page // 2}
        if key in moves:
            pane.scroll_by(terminal, moves[key], height)
            if pane.scroll is None:
                self.host.say("back to the live screen")
        elif key in ("home", "g"):
            pane.scroll_to(terminal, deepest(terminal, height), height)
        elif key in _SCROLL_ENDS:
            pane.end_scroll()
        elif key == "n":
            pane.next_match(terminal, -1, height)
        elif key == "N":
            pane.next_match(terminal, +1, height)
        elif key == "/":
            self.act_search()

    # -- actions (one per [keys] action; names match config.KEY_ACTIONS) ------------------------

    def act_split_vertical(self) -> None:
        self._user_focus(lambda: self.model.state.layout.split(ROW))

    def act_split_horizontal(self) -> None:
        self._user_focus(lambda: self.model.state.layout.split(COLUMN))

    def act_close_pane(self) -> None:
        def close() -> None:
            layout = self.model.state.layout
            role = layout.close()
            number = layout.roster.index(role) + 1
            # Only roles 1-9 have a key; the rest are shown from their card.
            how = (f"{k.display_name(self.keymap.prefix_spelling)} {number} shows it"
                   if number <= 9 else "a click on its card or a split shows it")
            self.host.say(f"{role} is hidden and keeps running ({how})")
        self._user_focus(close)

    def _move(self, direction: str) -> None:
        body_w, body_h, _ = self.renderer.screen_areas()
        self._user_focus(lambda: self.model.state.layout.move_focus(direction, body_w, body_h))

    def act_focus_pane_left(self) -> None:
        self._move("left")

    def act_focus_pane_right(self) -> None:
        self._move("right")

    def act_focus_pane_up(self) -> None:
        self._move("up")

    def act_focus_pane_down(self) -> None:
        self._move("down")

    def act_cycle_pane_next(self) -> None:
        self._user_focus(lambda: self.model.state.layout.cycle(1))

    def act_cycle_pane_previous(self) -> None:
        self._user_focus(lambda: self.model.state.layout.cycle(-1))

    def act_zoom(self) -> None:
        layout = self.model.state.layout
        if not layout.toggle_zoom() and len(layout.shown()) <= 1:
            self.host.say("only one pane is shown; nothing to zoom")
        self.host.relayout()

    def act_toggle_sidebar(self) -> None:
        state = self.model.state
        state.sidebar = not state.sidebar
        self.host.relayout()

    def act_restart_role(self) -> None:
        from choragos.ui.overlays import ConfirmOverlay

        role = self.model.state.layout.focus
        if role is None:
            return

        def answer(yes: bool) -> None:
            self.overlays.close()
            if yes:
                self.commands.command({"cmd": "restart", "role": role},
                                      lambda ack: ack.get("status") == "ok"
                                      and self.host.say(f"restarting {role}"))
        self.overlays.open(ConfirmOverlay(
            f"Restart {role}?",
            [f"{role}'s process is stopped (SIGTERM, then SIGKILL) and started again.",
             "Whatever it was doing is lost; its restart budget is reset.",
             "Open tasks of this role are marked failed and the orchestrator is told."],
            answer, "y restart"), "confirm", ("relative", 70), 10)

    def act_pause_role(self) -> None:
        state = self.model.state
        role = state.layout.focus
        if role is None:
            return
        info = state.roles.get(role)
        if info is not None and info.status in (RoleStatus.EXITED, RoleStatus.FAILED):
            # The session refuses it too; said here at once, with the key that helps.
            self.host.say(f"{role} is not running ({info.status}): nothing to pause; "
                          f"{self.keymap.describe('restart_role')} restarts it")
            return
        action = "resume" if info is not None and info.status == RoleStatus.PAUSED else "pause"
        self.commands.command({"cmd": action, "role": role},
                              lambda ack: ack.get("status") == "ok" and self.host.say(
                                  f"{'resumed' if action == 'resume' else 'paused'} {role}"))

    def act_reload(self, request: dict | None = None) -> None:
        def done(ack: dict) -> None:
            if ack.get("status") == "ok":
                self.host.say(ack.get("message") or "reloaded", "working")
                self.host.sync()
            elif ack.get("loosened") and ack.get("seen"):
                self._confirm_loosening(ack["loosened"], ack["seen"])
            else:
                self.host.say(f"reload: {ack.get('error', 'failed')}", "failed")
        self.host.say("reloading the config…")
        self.commands.command(request or {"cmd": "reload"}, done, quiet=True)

    def _confirm_loosening(self, loosened: list, seen: str) -> None:
        """The file loosens what only the operator decides (an agent may have
        written it): shown whole, applied only on ``y``, and only as shown."""
        from choragos.ui.overlays import ConfirmOverlay

        def answer(yes: bool) -> None:
            self.overlays.close()
            if yes:
                self.act_reload({"cmd": "reload", "loosen": True, "seen": seen})
            else:
                self.host.say("reload cancelled: nothing changed")
        self.overlays.open(ConfirmOverlay(
            "The config loosens what only you decide",
            ["Apply these only if you made them (an agent can edit the file):", "",
             *(f"  {inert(str(change))}" for change in loosened)],
            answer, "y apply them"), "confirm", ("relative", 80), min(len(loosened) + 8, 20))

    def act_detach(self) -> None:
        self.host.detach("detached")

    def act_broadcast(self) -> None:
        state = self.model.state
        state.broadcast = not state.broadcast
        self.host.say("broadcast on: keys go to every shown pane" if state.broadcast
                      else "broadcast off")

    def act_task_board(self) -> None:
        self.dialogs.open_board()

    def act_search(self) -> None:
        from choragos.ui.overlays import PromptOverlay

        found = self._focused_pane()
        if found is None:
            return
        role, pane, terminal, height = found
        previous = pane.scroll.query if pane.scroll else ""

        def done(query: str | None) -> None:
            self.overlays.close()
            if not query:
                return
            if pane.search(terminal, query, height):
                count = len(pane.scroll.matches)
                self.host.say(f"{count} line{'s' if count != 1 else ''} match; n older, "
                              "N newer, q back", "scroll")
            else:
                self.host.say(f"no line of {role} matches {query!r}")
                if pane.scroll is not None and not pane.scroll.offset:
                    pane.end_scroll()
        self.overlays.open(PromptOverlay(f"Search {role}", "/", done, previous), "search",
                           ("relative", 60), 5)

    def act_help(self) -> None:
        from choragos.ui.overlays import HelpOverlay

        self.overlays.open(HelpOverlay(self.keymap, self.overlays.close), "help",
                           ("relative", 80), ("relative", 85))


# The class's lookup of its intents' handlers: reading ``self._do`` would make
# a new wrapper for every intent (a keystroke's among them; see actors/base.py).
Actions._action_for = dispatch_of(Actions, "_do")
