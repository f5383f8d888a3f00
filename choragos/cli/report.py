"""``choragos report [LOG] [--all] [--json]``: a per-role summary of a session (spec G3).

Reads the event log only, so it needs no running session.  Every piece of
log text that reaches the terminal goes through ``_client.inert``: the log
holds role names, ids and directories that came from outside.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from choragos import events, report
from choragos.cli import _client
from choragos.durations import format_duration

_COLUMNS = [("role", "ROLE"), ("tasks", "TASKS"), ("done", "DONE"), ("failed", "FAILED"),
            ("blocked", "BLOCKED"), ("budget", "BUDGET"), ("busy", "BUSY"),
            ("avg", "AVG"), ("first", "FIRST"), ("last", "LAST"), ("tokens", "TOKENS")]


def run(argv: list[str], verb: str = "report") -> int:
    """Entry point for ``choragos report``."""
    return _client.guard(verb, lambda: _main(argv, verb))


def _main(argv: list[str], verb: str) -> int:
    args = _parser(verb).parse_args(argv)
    path = Path(args.log) if args.log else events.default_path(Path.cwd())
    read = _read(path)
    if read.damaged_after is not None:
        # stderr, so --json output stays one parseable document.
        print(f"note: the log is damaged after line {read.damaged_after}; read up to there",
              file=sys.stderr)
    runs = report.split_runs(read.records)
    if not runs:
        raise _client.Failure(_client.EXIT_REFUSED, f"{_client.inert(path)} holds no events")
    summary = report.build(runs if args.all else runs[-1:], read.damaged_after)
    if args.json:
        return _client.print_json(as_json(summary))
    return _client.say(render(summary))


def _parser(verb: str) -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(
        prog=f"choragos {verb}",
        description="Summarise a session per role from its event log.")
    made.add_argument("log", nargs="?", metavar="LOG",
                      help="event log (default: .choragos/logs/events.jsonl here)")
    made.add_argument("--all", action="store_true",
                      help="add up every run in the log, not only the last")
    made.add_argument("--json", action="store_true", help="print the summary as JSON")
    return made


def _read(path: Path) -> report.LogRead:
    try:
        return report.read_log(path)
    except FileNotFoundError:
        raise _client.Failure(_client.EXIT_REFUSED,
                              f"there is no event log at {_client.inert(path)}") from None
    except OSError as exc:
        raise _client.Failure(_client.EXIT_REFUSED, f"cannot read {_client.inert(path)}: "
                              f"{_client.inert(exc.strerror or exc)}") from None


def render(summary: report.Report) -> str:
    """The header, the role table and the never-reported count, as text."""
    rows = [_row(stats) for stats in summary.roles]
    lines = [_header(summary), "", _client.table(rows, _COLUMNS), "",
             f"{len(summary.never_reported)} task(s) never reported work-done"]
    if summary.session_budget is not None:
        crossed = "; crossed: every role was paused" if summary.session_over else ""
        lines.insert(1, f"session budget ${summary.session_budget:.2f}{crossed}")
    if summary.never_reported:
        lines.append(", ".join(_client.inert(t) for t in summary.never_reported))
    return "\n".join(lines)


def _header(summary: report.Report) -> str:
    runs = "run" if summary.runs == 1 else f"{summary.runs} runs from"
    where = ", ".join(_client.inert(d) for d in summary.dirs) or "directory unknown"
    return f"{runs} {_local(summary.start)} · wall {format_duration(summary.wall)} · {where}"


def _row(stats: report.RoleStats) -> dict[str, object]:
    # A role that was never handed work (the orchestrator) has no task numbers.
    idle = stats.tasks == 0 and stats.done + stats.failed + stats.blocked == 0
    avg = stats.avg
    return {"role": stats.name,
            "tasks": "-" if idle else stats.tasks,
            "done": "-" if idle else stats.done,
            "failed": "-" if idle else stats.failed,
            "blocked": "-" if idle else stats.blocked,
            "budget": budget_text(stats.budget, stats.over_budget),
            "busy": "-" if idle else format_duration(stats.busy),
            "avg": "-" if avg is None else format_duration(avg),
            "first": _clock(stats.first), "last": _clock(stats.last),
            "tokens": tokens_text(stats.tokens)}


def budget_text(budget: dict | None, over: bool) -> str:
    """``$1.00``, ``$1.00 over`` (crossed during the run), or ``-`` without a budget."""
    if not budget:
        return "-"
    caps = [f"${budget['usd']:.2f}" if _is_number(budget.get("usd")) else "",
            f"{tokens_text({'input': budget['tokens']})} tok"
            if _is_number(budget.get("tokens")) else ""]
    return "/".join(c for c in caps if c) + (" over" if over else "")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def tokens_text(tokens: dict[str, int] | None) -> str:
    """All tokens a role's models handled, compactly: ``950``, ``184.2k``, ``1.4M``."""
    if tokens is None:
        return "n/a"
    total = sum(tokens.values())
    if total < 1000:
        return str(total)
    if total < 1_000_000:
        return f"{total / 1000:.1f}k"
    return f"{total / 1_000_000:.1f}M"


def as_json(summary: report.Report) -> dict[str, object]:
    """The same summary with raw numbers: seconds, epoch times, token counts."""
    return {"runs": summary.runs, "start": summary.start, "start_local": _local(summary.start),
            "wall": summary.wall, "dirs": summary.dirs,
            "damaged_after": summary.damaged_after,
            "roles": [_role_json(stats) for stats in summary.roles],
            "never_reported": summary.never_reported,
            "session_budget": None if summary.session_budget is None else {
                "usd": summary.session_budget, "over": summary.session_over}}


def _role_json(stats: report.RoleStats) -> dict[str, object]:
    tokens = None if stats.tokens is None else {**stats.tokens,
                                                "total": sum(stats.tokens.values())}
    return {"role": stats.name, "tasks": stats.tasks, "done": stats.done,
            "failed": stats.failed, "blocked": stats.blocked,
            "budget": None if stats.budget is None else {**stats.budget,
                                                          "over": stats.over_budget},
            "busy": stats.busy, "avg": stats.avg, "first": stats.first, "last": stats.last,
            "tokens": tokens}


def _local(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _clock(t: float | None) -> str:
    return "-" if t is None else time.strftime("%H:%M:%S", time.localtime(t))
