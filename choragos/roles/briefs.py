"""What choragos tells the agents: standing briefs, task files, typed lines.

Content travels as files and control as one typed line, because agent TUIs
drop or mangle multi-line pastes.  Every line that is typed into a pane goes
through :func:`one_line`, which removes control characters and escape
sequences, so text from the wire can never act on a terminal.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from choragos import onuse
from choragos.board.tasks import Task
from choragos.plural import counted

if TYPE_CHECKING:
    from choragos.config.model import RoleSpec

_ESCAPES = onuse.pattern(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = onuse.pattern(r"[\x00-\x1f\x7f-\x9f]")
# Bidi marks, embeddings, overrides and isolates: invisible, and they can make
# a typed line read differently than it is.
_BIDI = onuse.pattern(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SPACES = onuse.pattern(r"\s+")


def one_line(text: str, limit: int = 2000) -> str:
    """Flatten to one inert line: no escapes, no controls, single spaces."""
    text = _ESCAPES().sub("", text)
    text = _CONTROLS().sub(" ", _BIDI().sub("", text))
    text = _SPACES().sub(" ", text).strip()
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
                note: str = "", outcome: str = "done", changed: str = "") -> str:
    lead = _OUTCOME_LEAD.get(outcome, "")
    text = f"A worker reports: [{task_id} from {role}] {lead}{one_line(summary, 1200)}"
    if changed:
        text += f" ({changed})"
    if note:
        text += f" ({one_line(note, 200)})"
    if report:
        text += f" Full report: read {one_line(report, 400)}"
    return text


def rejection_line(task: Task, reason: str) -> str:
    why = f" Reason: {one_line(reason, 600)}" if reason.strip() else ""
    return (f"The operator rejected delegation {task.id} to {task.role} "
            f"(\"{one_line(task.label, 200)}\").{why} Re-plan without it.")


def cancelled_line(task: Task, reason: str) -> str:
    why = f" Reason: {one_line(reason, 600)}" if reason.strip() else ""
    return (f"The operator cancelled task {task.id} to {task.role} "
            f"(\"{one_line(task.label, 200)}\") before it was typed in.{why} "
            "Re-plan without it.")


def failure_line(task: Task, reason: str) -> str:
    return (f"Task {task.id} to {task.role} failed: {one_line(reason, 400)}. "
            f"Decide whether to delegate it again.")


def fix_line(task: Task, task_file: str, why: str, round_: int, rounds: int) -> str:
    return (f"Task {task.id} did not pass its check ({one_line(why, 120)}; fix round "
            f"{round_} of {rounds}): read {task_file} again, the failing output is at its "
            f"end; fix it, then report with `choragos work-done --id {task.id}` again.")


def verify_failed_section(why: str, tail: str, log: str, round_: int, rounds: int) -> str:
    fence = "````" if "```" in tail else "```"
    return "\n".join([
        f"## The check failed (fix round {round_} of {rounds})", "",
        f"The role's verify command failed ({why}) after your last work-done.  The whole "
        f"output is in `{log}`; its end:", "", fence, tail, fence, "",
        "Fix the cause, then report again exactly as above.", ""])


def verify_out_of_rounds_line(task: Task, why: str, log: str, rounds: int) -> str:
    return (f"A worker reports: [{task.id} from {task.role}] FAILED: its verify still fails "
            f"({one_line(why, 120)}) after {counted(rounds, 'fix round')}; the output is in "
            f"{one_line(log, 200)}. Decide whether to delegate it again.")


def merged_line(task: Task, branch: str, commit: str, checkpointed: bool) -> str:
    undo = (f" `choragos rollback merge-{task.id}` undoes it." if checkpointed else
            " (No checkpoint could be taken before it.)")
    return (f"Merged: {branch} with {task.id} from {task.role} is in the main checkout now "
            f"(commit {commit[:12]}).{undo}")


def merged_before_line(task: Task, branch: str, commit: str, earlier: str) -> str:
    """An older merge gate approved after a newer one of the same branch had merged."""
    by = (f"with the merge of {earlier}" if earlier and earlier != task.id
          else "by an earlier merge")
    return (f"Merged: {branch} with {task.id} from {task.role} is in the main checkout: it "
            f"went in {by} (commit {commit[:12]}), which held this work too. Nothing more "
            "was merged.")


def merge_refused_line(task: Task, branch: str, why: str) -> str:
    return (f"Not merged: {branch} with {task.id} from {task.role} was not merged because "
            f"{one_line(why, 400)}. The main checkout is untouched and the branch is kept; "
            f"resolve it (for example rebase the branch) before it can be merged.")


def merge_declined_line(task: Task, branch: str, reason: str) -> str:
    why = f" Reason: {one_line(reason, 400)}" if reason.strip() else ""
    return (f"The operator declined merging {branch} ({task.id} from {task.role}); the "
            f"branch is kept, the main checkout is unchanged.{why}")


def held_rejected_line(task: Task, kind: str, why: str, reason: str) -> str:
    extra = f" Reason: {one_line(reason, 400)}" if reason.strip() else ""
    return (f"Task {task.id} from {task.role} FAILED: the operator rejected it at the {kind} "
            f"gate ({one_line(why, 300)}).{extra} Decide whether to delegate it again.")


def judge_task_text(task: Task) -> str:
    return (f"Judge task {task.id} by {task.role}: \"{one_line(task.label, 200)}\". Read the "
            f"brief, then write your verdict as the report.")


def judge_brief(task: Task, report: str, diff: str, pass_mark: int) -> str:
    fence = "````" if "```" in diff else "```"
    return "\n".join([
        f"# Judge {task.id} from {task.role}", "",
        "## The task it was given", "", task.text.strip(), "",
        "## The worker's summary", "", one_line(task.summary or "-", 1200), "",
        "## The worker's report", "", report.strip() or "(no report file)", "",
        "## The diff", "", fence + "diff", diff.rstrip(), fence, "",
        "## Your verdict", "",
        "Write your report so that its FIRST line is exactly `VERDICT: n/10` (n from 0 to "
        f"10; {pass_mark} or more passes), followed by your critique: what is wrong and what "
        "must change.  Anything else on the first line counts as no verdict, and a person "
        "is asked instead.", ""])


def critique_section(score: int, pass_mark: int, critique: str, round_: int,
                     rounds: int) -> str:
    return "\n".join([
        f"## The judge's critique (scored {score}/10, {pass_mark} passes; round {round_} of "
        f"{rounds})", "", critique.strip(), "",
        "Address it, then report again exactly as above.", ""])


def critique_line(task: Task, task_file: str, score: int, pass_mark: int) -> str:
    return (f"Task {task.id} was judged {score}/10 ({pass_mark} passes): read {task_file} "
            f"again, the judge's critique is at its end; improve the work, then report with "
            f"`choragos work-done --id {task.id}` again.")


def resumed_fix_line(task: Task, task_file: str) -> str:
    """A fix round (a failed verify, a judge's critique) queued when the
    session stopped: the task file still holds what failed at its end."""
    return (f"The choragos session restarted before this reached you: task {task.id} did "
            f"not pass its check ({one_line(task.checks, 120)}); read {task_file} again, what "
            f"failed is at its end; fix it, then report with `choragos work-done --id "
            f"{task.id}` again.")


def handback_line(task: Task, task_file: str) -> str:
    return (f"The choragos session restarted; task {task.id} is still yours: read "
            f"{task_file} (the file is still there) and carry it on; report with "
            f"`choragos work-done --id {task.id}` when finished.")


def resumed_notice_line(task: Task) -> str:
    """A notice about ``task`` queued when the session stopped, told again
    from the board after ``serve --resume``."""
    note = f" ({one_line(task.note, 400)})" if task.note.strip() else ""
    return (f"The choragos session restarted with a notice about task {task.id} to "
            f"{task.role} still queued; the task is now {task.state}{note}. "
            f"`choragos board` shows the rest.")


def repeated_line(text: str, after: str = "the choragos session restarted") -> str:
    """``text`` marked as a line the agent may have had already.  A line cut
    off again is marked once, with the latest cause: the marks of a line
    repeated after every exit in a row would otherwise stack up, each
    longer than the last, ahead of the line itself."""
    return f"(Repeated after {after}; ignore it if you had it) {_REPEAT_MARK().sub('', text, 1)}"


_REPEAT_MARK = onuse.pattern(r"\A\(Repeated after [^;]*; ignore it if you had it\) ")


def handoff_line(wait: float) -> str:
    return (f"The operator is ending this session and handing it to a new team; you have "
            f"{wait:g} seconds. First append a dated entry to .choragos/memory.md with what "
            f"the next team must know about this project. Then write .choragos/handoff.md: "
            f"the goal, the state of the work, what is left, and what the next team must "
            f"know. Delegate nothing more.")


def budget_line(who: str, spent: str, paused: bool, blocked: bool = False) -> str:
    if blocked:
        then = ("its model calls are refused until the operator raises the budget "
                "(`choragos budget`, or a reload)")
    elif paused:
        then = ("it is paused; `choragos resume` lets it go on once you decide (a reload that "
                "raises the budget re-arms it)")
    else:
        then = "it keeps working"
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


# A role's PATH starts with .choragos/bin (choragos/roles/selfpath.py); the
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


# The largest brief copied for a role on another host (its file is not there).
BRIEF_COPY_LIMIT = 1 << 20


def brief_copy(task_id: str) -> str:
    """Where a task's brief is copied, relative to the workspace: a role on
    another host reads it there, since the operator's file is on this one."""
    return f".choragos/tasks/{task_id}.brief.md"


def document_for(task: Task, spec: RoleSpec) -> str:
    """The task's file for its role ``spec``; a role on another host is sent
    to the brief's copy (:func:`brief_copy`), not to a path it cannot read."""
    copied = brief_copy(task.id) if spec.host and task.brief else None
    return task_document(task, spec.prompt_template, copied)


def task_document(task: Task, template: str, copied: str | None = None) -> str:
    parts = [f"# Task {task.id} for {task.role}", ""]
    if template.strip():
        parts += ["## Your standing brief", "", template.strip(), ""]
    parts += ["## The task", "", task.text.strip(), ""]
    if copied:
        parts += ["## Full brief", "", f"Read `{copied}` for the details (a copy of "
                  f"{task.brief}, made when the task was delegated).", ""]
    elif task.brief:
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


def continue_line(task_id: str) -> str:
    """Typed into an agent idle at its prompt once a provider's limit is over."""
    return (f"Continue: the provider's limit that stopped you is over. Carry on with task "
            f"{task_id} where you left off.")


def budget_continue_line(task_id: str) -> str:
    """Typed into an agent idle at its prompt once the operator raised the
    budget whose refusal stopped its model calls."""
    return (f"Continue: the operator raised the budget that stopped your model calls. Carry "
            f"on with task {task_id} where you left off.")


def nudge_line(task_id: str) -> str:
    """Typed into an agent idle at its prompt while it holds a task it stopped on."""
    return (f"Continue with task {task_id}, or report it with `choragos work-done --id "
            f"{task_id}` (--failed or --blocked if you cannot finish it).")


def limit_line(role: str, what: str, until: str, rerouted: Sequence[str]) -> str:
    """Tells the orchestrator that a role waits out a provider's limit."""
    moved = f"; its queued work was rerouted: {', '.join(rerouted)}" if rerouted else ""
    return (f"Limit: {role} hit a provider's {one_line(what, 80)} and waits until {until}; "
            f"choragos sets it going again then{moved}.")


def rerouted_line(task_id: str, role: str, taker: str, why: str) -> str:
    """Tells the orchestrator that a task delegated to a limited role went elsewhere."""
    return (f"Rerouted: {task_id} went to {taker} instead of {role}: {one_line(why, 160)} "
            f"(limit_action = \"reroute\").")
