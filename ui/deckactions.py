"""The prefix-key actions, one method per ``[keys]`` action (the names
match ``config.KEY_ACTIONS``).
"""

from __future__ import annotations

from choragos.rolestatus import RoleStatus
from choragos.ui import keys as k
from choragos.ui.layout import COLUMN, ROW
from choragos.ui.overlays import (
    ConfirmOverlay,
    HelpOverlay,
    PromptOverlay,
)


class DeckActions:
    """Mixed into Deck: the bound actions."""

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
        action = "resume" if info is not None and info.status == RoleStatus.PAUSED else "pause"
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

