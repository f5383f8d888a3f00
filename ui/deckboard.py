"""The task board and what it starts: a task's brief, report and diff
paged, approve or reject, the session page, and a rollback to before a task.
"""

from __future__ import annotations

import contextlib
from typing import Any

from choragos.plural import counted
from choragos.ui.deckbase import read_text
from choragos.ui.decknews import answered
from choragos.ui.overlays import (
    BoardOverlay,
    ConfirmOverlay,
    inert,
)
from choragos.ui.reducer import BoardRead, task_number


class DeckBoard:
    """Mixed into Deck: the task board's actions."""

    def act_task_board(self) -> None:
        def opened(ack: dict) -> None:
            self._apply(BoardRead(tuple(answered(ack, "tasks"))))
            if self.overlay_kind == "board":
                self._show_board()
        self._show_board()
        self.command({"cmd": "board"}, opened)

    def _sorted_tasks(self) -> list[dict]:
        return sorted(self.state.tasks.values(), key=lambda t: task_number(t["id"]))

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
                self._page(f"report of {task['id']}", read_text(report))
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
        """Exactly what the task changed, as ``choragos diff`` shows it, paged
        (worked out off the UI thread)."""
        from choragos.taskdiff import TaskDiffError, task_diff
        workdir = self.port.workdir

        def work() -> None:
            try:
                found = task_diff(workdir, task["id"])
            except TaskDiffError as exc:
                why = f"cannot show the diff: {exc}"
                self.post(lambda: self.say(why, "failed"))
                return
            self.post(lambda: self._page(found.title, found.patch or "No file differs."))
        with contextlib.suppress(RuntimeError):  # shutting down
            self._workers.submit(work)

    def _write_page(self) -> None:
        """``choragos report --html`` for this session, into .choragos/report.html."""
        workdir = self.port.workdir
        config = getattr(self.port, "config", None)
        price_for = config.price_for if config is not None else (lambda model: None)
        target = workdir / ".choragos" / "report.html"

        def work() -> None:
            from choragos.reportpage import session_page
            try:
                session_page(workdir, target, price_for)
                said = (f"wrote {target}: open it in a browser", "status message")
            except Exception as exc:  # reported on screen, never fatal
                said = (f"cannot write the report page: {exc}", "failed")
            self.post(lambda: self.say(*said))

        with contextlib.suppress(RuntimeError):  # shutting down
            self._workers.submit(work)


    # -- rollback ---------------------------------------------------------------------------

    def _plan_rollback(self, task: dict) -> None:
        """A dry run of the core's ``rollback`` command, shown for confirmation."""
        if not task.get("checkpoint"):
            self.say(f"{task['id']} has no checkpoint (not taken yet, or checkpoints are off)")
            return
        self.say(f"planning the rollback to before {task['id']}…")
        self.command({"cmd": "rollback", "target": task["checkpoint"], "dry_run": True},
                     lambda plan: plan.get("status") == "ok"
                     and self._confirm_rollback(task, plan))

    def _confirm_rollback(self, task: dict, plan: dict) -> None:
        title = f"Roll back to before {task['id']}"
        lines = rollback_lines(task, plan)
        if plan["empty"] and not plan["conflicts"]:
            self._open_overlay(ConfirmOverlay(title, lines, lambda yes: self._close_overlay(),
                                              allow_yes=False),
                               "confirm", ("relative", 80), ("relative", 60))
            return

        def answer(yes: bool) -> None:
            self._close_overlay()
            if yes:
                self._rollback(task, plan["checkpoint"])
        self._open_overlay(ConfirmOverlay(f"{title}?", lines, answer, "y roll back",
                                          allow_yes=not plan["conflicts"]),
                           "confirm", ("relative", 85), ("relative", 75))

    def _rollback(self, task: dict, checkpoint: str) -> None:
        """The confirmed checkpoint (its ref, not the task's newest), through the core."""
        def done(ack: dict) -> None:
            if ack.get("status") != "ok":
                return
            if ack.get("saved") is None:
                self.say("the files already matched; nothing changed", "working")
                return
            self.say(f"rolled back to before {task['id']}: restored {ack['restored']}, "
                     f"deleted {ack['deleted']}; undo: choragos rollback {ack['saved']}",
                     "working")
        self.command({"cmd": "rollback", "target": checkpoint}, done)


def rollback_lines(task: dict, plan: dict) -> list[Any]:
    """The confirmation dialog's text for a dry run's plan."""
    lines: list[Any] = [f"checkpoint {plan['name']} (before {task['id']} went to "
                        f"{task['role']})", ""]
    if plan["empty"] and not plan["conflicts"]:
        return [*lines, "The files already match this checkpoint: nothing to roll back."]
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
    if plan["conflicts"]:
        lines += ["", ("failed", "In the way (rollback refuses until they are moved):")]
        lines += [f"  {inert(p)}" for p in plan["conflicts"][:50]]
    return lines

