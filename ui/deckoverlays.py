"""Dialogs over the deck: the gate dialog, the pager, the clocks of open
dialogs, and the decisions taken in them.
"""

from __future__ import annotations

from typing import Any

import urwid

from choragos.ui import keys as k
from choragos.ui.deckbase import read_text
from choragos.ui.overlays import (
    GateOverlay,
    PagerOverlay,
    PromptOverlay,
)
from choragos.ui.reducer import GateDecided, GateDismissed


class DeckOverlays:
    """Mixed into Deck: opening, closing and feeding dialogs."""

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
            self._apply(GateDismissed(task_id))
            self._close_overlay()
            self.say(f"{task_id} still waits; decide it from the task board "
                     f"({k.display_name(self.keymap.prefix_spelling)} "
                     f"{self.keymap.spellings['task_board']})")
        elif key in ("y", "n"):
            self._decide(task_id, key == "y")
            self._apply(GateDecided(task_id))
            self._close_overlay()
        elif key == "v" and gate.get("kind") == "merge":
            self._page(f"{task_id}: merge {gate.get('branch', '')}", read_text(gate["diff"]))
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
            return read_text(task["diff"])
        return read_text(self._task_file(task["id"]))

    def _page_task(self, task: dict) -> None:
        text = self._task_text(task)
        if task.get("brief"):
            text += f"\n\n──── brief: {task['brief']} ────\n\n" + read_text(task["brief"])
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

