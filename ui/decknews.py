"""News from the core applied to the deck: the reducer's new state and
its effects carried out, the full resync, and the control commands the deck
runs on worker threads.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from choragos.news import News
from choragos.ui import reducer
from choragos.ui.deckbase import MESSAGE_TIME
from choragos.ui.overlays import inert


class DeckNews:
    """Mixed into Deck: news, resync, commands and the status message."""

    # -- news from the core ------------------------------------------------------------

    def _news(self, item: News) -> None:
        self._apply(item)

    def _apply(self, item: reducer.Item) -> bool:
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
            self._maybe_show_gate()
        elif isinstance(effect, reducer.CloseGate):
            self._close_gate_dialog(effect.task_id)
        elif isinstance(effect, reducer.RefreshBoard):
            self._update_board()
        elif isinstance(effect, reducer.Resync):
            self._sync()

    def _close_gate_dialog(self, task_id: str) -> None:
        if self.overlay_kind == "gate" and getattr(self.overlay, "gate", {}).get(
                "id") == task_id:
            self._close_overlay()

    def _auto_focus(self, role: str) -> None:
        if not self.ui.auto_focus or time.monotonic() < self._user_active_until:
            return
        if role in self.state.layout.shown() and self.overlay is None and self.mode == "normal":
            self.state.layout.focus = role

    def _sync(self) -> None:
        """Ask the core for the whole picture (at start and after a reload)."""
        asked = {name: info.news for name, info in self.state.roles.items()}

        def roles(ack: dict) -> None:
            if ack.get("status") != "ok":
                return
            if self._apply(reducer.StatusRead(tuple(ack.get("roles", [])), asked)):
                self.relayout()

        def board(ack: dict) -> None:
            self._apply(reducer.BoardRead(tuple(answered(ack, "tasks"))))

        def gates(ack: dict) -> None:
            self._apply(reducer.GatesRead(tuple(answered(ack, "gates"))))

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
            self.post(lambda: self._answered(request, ack, then, quiet))

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



def answered(ack: dict, key: str) -> list:
    """The list ``key`` of a command's answer; none when the command failed."""
    return ack.get(key, []) if ack.get("status") == "ok" else []
