"""The deck's dialogs about tasks: the gate dialog (approve, reject, put
aside), the task board and what it starts (a task's brief, report and diff
paged, the session page, a rollback to before a task).

:class:`TaskDialogs` reads tasks and gates from the model and changes them
only through it; decisions go to the core as commands, and the domain reads
(a task's diff, the report page) through core helpers on a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from choragos.plural import counted
from choragos.ui import keys as k
from choragos.ui.deckbase import DeckHost, read_text
from choragos.ui.deckcommands import CommandRunner, answered
from choragos.ui.deckmodel import DeckModel
from choragos.ui.deckoverlays import OverlayStack
from choragos.ui.pane import inert
from choragos.ui.reducer import BoardRead, GateDecided, GateDismissed, task_number


class TaskDialogs:
    """Gates, the board and rollbacks, as dialogs on the overlay stack."""

    def __init__(self, model: DeckModel, overlays: OverlayStack, commands: CommandRunner,
                 host: DeckHost, keymap: k.Keymap, workdir: Path,
                 price_for: Callable[[str], Any]) -> None:
        self.model = model
        self.overlays = overlays
        self.commands = commands
        self.host = host
        self.keymap = keymap
        self.workdir = workdir
        self.price_for = price_for
        self.board_selected: str | None = None

    # -- gates ----------------------------------------------------------------------------

    def show_next_gate(self) -> None:
        """The first gate still waiting, in its dialog, when nothing else is open."""
        if not self.overlays.free:
            return
        state = self.model.state
        waiting = [g for g in state.gates.values() if g["id"] not in state.dismissed]
        if not waiting:
            return
        # The dialogs' module (and the urwid widgets it is made of) with the
        # first gate, not with the first news: a crew without gates never loads it.
        from choragos.ui.overlays import GateOverlay

        gate = waiting[0]
        position = list(state.gates).index(gate["id"]) + 1
        widget = GateOverlay(gate, position, len(state.gates), self._task_text(gate),
                             lambda key: self._gate_key(gate, key))
        self.overlays.open(widget, "gate", ("relative", 80), ("relative", 60))

    def close_gate(self, task_id: str) -> None:
        """The gate of ``task_id`` was decided: its dialog, if open, goes."""
        overlays = self.overlays
        if overlays.kind == "gate" and getattr(overlays.widget, "gate", {}).get("id") == task_id:
            overlays.close()

    def _gate_key(self, gate: dict, key: str) -> None:
        task_id = gate["id"]
        if key == "esc":
            self.model.apply(GateDismissed(task_id))
            self.overlays.close()
            self.host.say(f"{task_id} still waits; decide it from the task board "
                          f"({k.display_name(self.keymap.prefix_spelling)} "
                          f"{self.keymap.spellings['task_board']})")
        elif key in ("y", "n"):
            self.decide(task_id, key == "y")
            self.model.apply(GateDecided(task_id))
            self.overlays.close()
        elif key == "v" and gate.get("kind") == "merge":
            self.overlays.page(f"{task_id}: merge {gate.get('branch', '')}",
                               read_text(gate["diff"]))
        elif key == "v":
            self._page_task(gate)
        elif key == "e" and gate.get("kind") != "merge":
            self.overlays.edit(gate.get("brief") or self._task_file(task_id))

    def decide(self, task_id: str, approve: bool) -> None:
        request = {"cmd": "gate", "action": "approve" if approve else "reject", "id": task_id}
        if not approve:
            request["reason"] = "the operator said no in the deck."

        def done(ack: dict) -> None:
            if ack.get("status") == "ok":
                self.host.say(f"{'approved' if approve else 'rejected'} {task_id}",
                              "working" if approve else "waiting")
        self.commands.command(request, done)

    def _task_file(self, task_id: str) -> str:
        return str(self.workdir / ".choragos" / "tasks" / f"{task_id}.md")

    def _task_text(self, task: dict) -> str:
        if task.get("kind") == "merge":
            return read_text(task["diff"])
        return read_text(self._task_file(task["id"]))

    def _page_task(self, task: dict) -> None:
        text = self._task_text(task)
        if task.get("brief"):
            text += f"\n\n──── brief: {task['brief']} ────\n\n" + read_text(task["brief"])
        self.overlays.page(f"{task['id']} for {task['role']}", text)

    # -- the board ------------------------------------------------------------------------

    def tick(self) -> bool:
        """Keep an open dialog's clocks running (the gate's waiting time, the
        board's ages); False when no open dialog has any."""
        if self.overlays.kind == "gate":
            self.overlays.widget.refresh()
            return True
        if self.overlays.kind == "board":
            self.update_board()
            return True
        return False

    def open_board(self) -> None:
        def opened(ack: dict) -> None:
            self.model.apply(BoardRead(tuple(answered(ack, "tasks"))))
            if self.overlays.kind == "board":
                self._show_board()
        self._show_board()
        self.commands.command({"cmd": "board"}, opened)

    def update_board(self) -> None:
        """Show the board's news in the open board, or rebuild it when it must."""
        overlays = self.overlays
        if overlays.kind != "board":
            return
        if not overlays.widget.update(self._sorted_tasks()):
            chosen = overlays.widget.current()
            if chosen is not None:
                self.board_selected = chosen["id"]
            self._show_board()

    def _sorted_tasks(self) -> list[dict]:
        return sorted(self.model.state.tasks.values(), key=lambda t: task_number(t["id"]))

    def _show_board(self) -> None:
        from choragos.ui.overlays import BoardOverlay

        self.overlays.open(BoardOverlay(self._sorted_tasks(), self._board_action,
                                        self.board_selected),
                           "board", ("relative", 90), ("relative", 80))

    def _board_action(self, action: str, task: dict | None) -> None:
        if task is not None:
            self.board_selected = task["id"]
        if action == "close":
            self.overlays.close()
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
                self.overlays.page(f"report of {task['id']}", read_text(report))
            else:
                self.host.say(f"{task['id']} has no report yet")
        elif action == "edit":
            self.overlays.edit(task.get("brief") or self._task_file(task["id"]))
        elif action in ("approve", "reject"):
            if task.get("state") != "gated" and task["id"] not in self.model.state.gates:
                self.host.say(f"{task['id']} is {task.get('state')}, not waiting at a gate")
                return
            self.decide(task["id"], action == "approve")
        elif action == "cancel":
            self._confirm_cancel(task)
        elif action == "rollback":
            self._plan_rollback(task)
        elif action == "diff":
            self._show_diff(task)

    def _confirm_cancel(self, task: dict) -> None:
        """A task not yet typed into its role, taken back once the operator says y."""
        if task.get("state") not in ("queued", "gated"):
            self.host.say(f"{task['id']} is {task.get('state')}: only a queued or gated task "
                          "can be cancelled")
            return
        from choragos.ui.overlays import ConfirmOverlay

        overlays, task_id = self.overlays, task["id"]

        def answer(yes: bool) -> None:
            overlays.close()
            if yes:
                self.commands.command(
                    {"cmd": "cancel", "id": task_id, "reason": "the operator cancelled it in "
                                                               "the deck."},
                    lambda ack: ack.get("status") == "ok"
                    and self.host.say(f"cancelled {task_id}", "waiting"))
        lines = [f"{task_id} for {task['role']}: {inert(task.get('label', ''))}", "",
                 "It has not been typed into its role: it ends rejected, and the "
                 "orchestrator is told."]
        overlays.open(ConfirmOverlay(f"Cancel {task_id}?", lines, answer, "y cancel it"),
                      "confirm", ("relative", 70), ("relative", 40))

    def _show_diff(self, task: dict) -> None:
        """Exactly what the task changed, as ``choragos diff`` shows it, paged
        (worked out off the UI thread)."""
        from choragos.gitstore.taskdiff import TaskDiffError, task_diff
        workdir, post = self.workdir, self.host.post

        def work() -> None:
            try:
                found = task_diff(workdir, task["id"])
            except TaskDiffError as exc:
                why = f"cannot show the diff: {exc}"
                post(lambda: self.host.say(why, "failed"))
                return
            post(lambda: self.overlays.page(found.title, found.patch or "No file differs."))
        self.commands.background(work)

    def _write_page(self) -> None:
        """``choragos report --html`` for this session, into .choragos/report.html."""
        workdir, price_for, post = self.workdir, self.price_for, self.host.post
        target = workdir / ".choragos" / "report.html"

        def work() -> None:
            from choragos.board.reportpage import session_page
            try:
                session_page(workdir, target, price_for)
                said = (f"wrote {target}: open it in a browser", "status message")
            except Exception as exc:  # reported on screen, never fatal
                said = (f"cannot write the report page: {exc}", "failed")
            post(lambda: self.host.say(*said))

        self.commands.background(work)

    # -- rollback ---------------------------------------------------------------------------

    def _plan_rollback(self, task: dict) -> None:
        """A dry run of the core's ``rollback`` command, shown for confirmation."""
        if not task.get("checkpoint"):
            self.host.say(f"{task['id']} has no checkpoint (not taken yet, or checkpoints "
                          "are off)")
            return
        self.host.say(f"planning the rollback to before {task['id']}…")
        self.commands.command({"cmd": "rollback", "target": task["checkpoint"],
                               "dry_run": True},
                              lambda plan: plan.get("status") == "ok"
                              and self._confirm_rollback(task, plan))

    def _confirm_rollback(self, task: dict, plan: dict) -> None:
        from choragos.ui.overlays import ConfirmOverlay

        title = f"Roll back to before {task['id']}"
        lines = rollback_lines(task, plan)
        overlays = self.overlays
        if plan["empty"] and not plan["conflicts"]:
            overlays.open(ConfirmOverlay(title, lines, lambda yes: overlays.close(),
                                         allow_yes=False),
                          "confirm", ("relative", 80), ("relative", 60))
            return

        def answer(yes: bool) -> None:
            overlays.close()
            if yes:
                self._rollback(task, plan["checkpoint"])
        overlays.open(ConfirmOverlay(f"{title}?", lines, answer, "y roll back",
                                     allow_yes=not plan["conflicts"]),
                      "confirm", ("relative", 85), ("relative", 75))

    def _rollback(self, task: dict, checkpoint: str) -> None:
        """The confirmed checkpoint (its ref, not the task's newest), through the core."""
        def done(ack: dict) -> None:
            if ack.get("status") != "ok":
                return
            if ack.get("saved") is None:
                self.host.say("the files already matched; nothing changed", "working")
                return
            # Short, so the undo command fits on an 80-column status line
            # whole; the counts were in the plan confirmed.
            self.host.say(f"rolled back {task['id']}; undo: choragos rollback {ack['saved']}",
                          "working")
        self.commands.command({"cmd": "rollback", "target": checkpoint}, done)


def rollback_lines(task: dict, plan: dict) -> list[Any]:
    """The confirmation dialog's text for a dry run's plan."""
    lines: list[Any] = [f"checkpoint {plan['name']} (before {task['id']} went to "
                        f"{task['role']})", ""]
    if plan["empty"] and not plan["conflicts"]:
        return [*lines, "The files already match this checkpoint: nothing to roll back.",
                *nested_lines(plan)]
    lines.append(f"{counted(plan['restore_count'], 'file')} to restore, {plan['delete_count']} to "
                 "delete:")
    lines += [f"  restore  {inert(p)}" for p in plan["restore"]]
    lines += [f"  delete   {inert(p)}" for p in plan["delete"]]
    if plan["head_moved"]:
        lines += ["", ("waiting", f"HEAD moved since ({plan['head_then'][:12]} -> "
                                  f"{plan['head_now'][:12]}); commits stay, only files change")]
    lines += ["", ("waiting", "Agents of this session may be writing files right now."),
              f"The current state is saved first: undo with "
              f"`choragos rollback pre-rollback-{task['id']}`."]
    lines += nested_lines(plan)
    if plan["conflicts"]:
        lines += ["", ("failed", "In the way (rollback refuses until they are moved):")]
        lines += [f"  {inert(p)}" for p in plan["conflicts"][:50]]
    return lines


def nested_lines(plan: dict) -> list[Any]:
    """The nested repositories the rollback leaves as they are although they
    are not as they were: never left unsaid."""
    lines: list[Any] = []
    if plan.get("nested_restored"):
        lines += ["", "Nested repositories whose files are put back (their commits and index "
                  "stay):", *(f"  {inert(p)}" for p in plan["nested_restored"][:50])]
    lines += [("waiting", inert(note)) for note in (plan.get("nested_notes") or [])[:50]]
    for key, heading in (("nested_changes", "Nested repositories with work not committed "
                                            "there stay as they are (rollback never enters "
                                            "one):"),
                         ("submodules", "Nested repositories at another commit stay as they "
                                        "are:")):
        paths = plan.get(key) or []
        if paths:
            more = int(plan.get(f"{key}_count", len(paths))) - len(paths[:50])
            lines += ["", ("waiting", heading), *(f"  {inert(p)}" for p in paths[:50])]
            lines += [f"  ... and {more} more"] if more > 0 else []
    return lines
