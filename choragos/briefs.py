"""What choragos tells the agents: standing briefs, task files, typed lines.

Content travels as files and control as one typed line, because agent TUIs
drop or mangle multi-line pastes.  Every line that is typed into a pane goes
through :func:`one_line`, which removes control characters and escape
sequences, so text from the wire can never act on a terminal.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from choragos.board import Task

_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Bidi marks, embeddings, overrides and isolates: invisible, and they can make
# a typed line read differently than it is.
_BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SPACES = re.compile(r"\s+")


def one_line(text: str, limit: int = 2000) -> str:
    """Flatten to one inert line: no escapes, no controls, single spaces."""
    text = _ESCAPES.sub("", text)
    text = _CONTROLS.sub(" ", _BIDI.sub("", text))
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def boot_line(role: str, template: str, brief_file: str) -> str:
    lead = one_line(template, 600)
    lead = f"{lead} " if lead else ""
    return (f"{lead}You are the {role} role in a choragos team. Read {brief_file} now: it "
            f"holds your standing brief and exactly how to take and report work.")


def task_line(task: Task, task_file: str) -> str:
    return (f"New task {task.id} from choragos: read {task_file} and carry it out; "
            f"report with `choragos work-done --id {task.id}` when finished.")


# How a report that is not a plain "done" reads in the orchestrator's input.
_OUTCOME_LEAD = {"failed": "FAILED: ", "blocked": "BLOCKED, needs: "}


def report_line(task_id: str, role: str, summary: str, report: str | None,
                note: str = "", outcome: str = "done") -> str:
    lead = _OUTCOME_LEAD.get(outcome, "")
    text = f"A worker reports: [{task_id} from {role}] {lead}{one_line(summary, 1200)}"
    if note:
        text += f" ({one_line(note, 200)})"
    if report:
        text += f" Full report: read {one_line(report, 400)}"
    return text


def rejection_line(task: Task, reason: str) -> str:
    why = f" Reason: {one_line(reason, 600)}" if reason.strip() else ""
    return (f"The operator rejected delegation {task.id} to {task.role} "
            f"(\"{one_line(task.label, 200)}\").{why} Re-plan without it.")


def failure_line(task: Task, reason: str) -> str:
    return (f"Task {task.id} to {task.role} failed: {one_line(reason, 400)}. "
            f"Decide whether to delegate it again.")


def budget_line(who: str, spent: str, paused: bool) -> str:
    then = ("it is paused; `choragos resume` lets it go on once you decide (a reload that "
            "raises the budget re-arms it)" if paused else "it keeps working")
    return (f"Budget: {who} is over its budget ({one_line(spent, 80)}); {then}. Re-plan "
            f"with that in mind.")


def team_changed_line(added: Sequence[str], removed: Sequence[str], brief_file: str) -> str:
    parts = []
    if added:
        parts.append(f"added {', '.join(added)}")
    if removed:
        parts.append(f"removed {', '.join(removed)}")
    return (f"The team changed ({'; '.join(parts)}). Read {brief_file} again for the "
            f"current roster before you delegate.")


# A role's PATH starts with .choragos/bin (choragos/selfpath.py); the
# relative fallback still works from the workspace if a shell resets PATH.
REACH_NOTE = ("`choragos` is on your PATH (the session put `.choragos/bin` first); if a "
              "shell ever answers `command not found`, run `.choragos/bin/choragos` with "
              "the same arguments.")


OUTCOME_GUIDE = (
    "Say honestly how it ended.  If you could not do the task (it is wrong, impossible,",
    "or your attempt failed), report `--failed` instead of `--done`, with the reason in",
    "`--task`.  If you cannot go on without something (a decision, access, another",
    "task first), report `--blocked` with what you need in `--task`.  Never report",
    "`--done` for work that is not done.",
)


def work_done_command(task_id: str) -> str:
    return (f'choragos work-done --id {task_id} --done --task "<one-line summary>" '
            f"--report .choragos/reports/{task_id}.md")


def task_document(task: Task, template: str) -> str:
    parts = [f"# Task {task.id} for {task.role}", ""]
    if template.strip():
        parts += ["## Your standing brief", "", template.strip(), ""]
    parts += ["## The task", "", task.text.strip(), ""]
    if task.brief:
        parts += ["## Full brief", "", f"Read {task.brief} for the details.", ""]
    parts += [
        "## When you are finished",
        "",
        f"1. Write what you did and what you found to `.choragos/reports/{task.id}.md`.",
        "2. Report back by running exactly this shell command (fill in the summary):",
        "",
        "```",
        work_done_command(task.id),
        "```",
        "",
        "Leave out `--done` only if you must stop before the task is complete.",
        "",
        *OUTCOME_GUIDE,
        "",
    ]
    return "\n".join(parts)


def roster_table(roles: Sequence[dict]) -> str:
    lines = ["| role | command | model | gated |", "|---|---|---|---|"]
    for role in roles:
        gated = "yes (the operator approves each task)" if role["approve"] else "no"
        lines.append(f"| {role['name']} | {role['command']} | {role['model'] or '-'} "
                     f"| {gated} |")
    return "\n".join(lines)


def orchestrator_brief(name: str, template: str, workers: Sequence[dict]) -> str:
    example = workers[0]["name"] if workers else "coder"
    quoted = shlex.quote("Add retry with jitter to the S3 client")
    return "\n".join([
        f"# Standing brief: {name} (orchestrator)",
        "",
        template.strip() or "You coordinate the team: plan, delegate, and merge results.",
        "",
        "## Your team",
        "",
        roster_table(workers),
        "",
        "## How to hand out work",
        "",
        "Run this shell command, once per task (one or more roles, comma-separated):",
        "",
        "```",
        f"choragos delegate --to {example} --task {quoted}",
        f"choragos delegate --to {example} --task 'Short label' --brief /abs/path/brief.md",
        "```",
        "",
        "It prints the task id it created (T1, T2, …).  The acknowledgement means the",
        "task reached choragos, not that the worker has done it.  Put long instructions",
        "in a file and pass it with `--brief`.",
        "",
        "## How results come back",
        "",
        "When a worker finishes, a line appears in your input: `A worker reports: [T3 from",
        "coder] <summary>`, often followed by `Full report: read <path>`.  Read the report",
        "before you act on it.  A worker that could not do its task says so:",
        "`[T3 from coder] FAILED: <why>`; one that cannot go on without something says",
        "`[T3 from coder] BLOCKED, needs: <what>`.  Rejections by the operator and tasks",
        "that failed in delivery arrive the same way; re-plan when they do.",
        "",
        "Useful: `choragos board` lists every task and its state.",
        "",
        REACH_NOTE,
        "",
    ])


def worker_brief(name: str, template: str) -> str:
    return "\n".join([
        f"# Standing brief: {name}",
        "",
        template.strip() or "Do the tasks you are given, then report back.",
        "",
        "## How work reaches you",
        "",
        "A line appears in your input: `New task T3 from choragos: read",
        ".choragos/tasks/T3.md …`.  Read that file and do exactly that task.",
        "",
        "## How to report",
        "",
        "When the task is finished, write your findings to `.choragos/reports/<id>.md`",
        "and run this shell command (with the task's id):",
        "",
        "```",
        work_done_command("T3"),
        "```",
        "",
        *OUTCOME_GUIDE,
        "",
        REACH_NOTE,
        "",
        "Until a task arrives, wait.",
        "",
    ])
