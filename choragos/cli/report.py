"""``choragos report [LOG] [--all] [--json]``: a per-role summary of a session.

Reads the event log only, so it needs no running session.  Every piece of
log text that reaches the terminal goes through ``_client.inert``: the log
holds role names, ids and directories that came from outside.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from choragos import costs, events, report
from choragos.cli import _client, _target
from choragos.durations import format_duration

_COLUMNS = [("role", "ROLE"), ("tasks", "TASKS"), ("done", "DONE"), ("failed", "FAILED"),
            ("blocked", "BLOCKED"), ("budget", "BUDGET"), ("busy", "BUSY"),
            ("avg", "AVG"), ("first", "FIRST"), ("last", "LAST"), ("tokens", "TOKENS"),
            ("cost", "COST")]


def run(argv: list[str], verb: str = "report") -> int:
    """Entry point for ``choragos report``."""
    return _client.guard(verb, lambda: _main(argv, verb), json="--json" in argv)


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    project = Path.cwd() if args.log else _project(args, verb)
    path = Path(args.log) if args.log else events.default_path(project)
    read = _read(path)
    for skipped in read.skipped:
        print(f"note: skipped {_client.inert(skipped)}", file=sys.stderr)
    if read.damaged_after is not None:
        # stderr, so --json output stays one parseable document.
        print(f"note: {_damage_note(read)}", file=sys.stderr)
    runs = report.split_runs(read.records)
    if not runs:
        raise _client.Failure(_client.EXIT_REFUSED, f"{_client.inert(path)} holds no events")
    chosen = runs if args.all else runs[-1:]
    summary = report.build(chosen, read.damaged_after, read.damaged_in, read.skipped)
    price_for = prices(args.config, project)
    if args.html is not None:
        write_page(args.html, summary, chosen, price_for)
        if not args.json:
            return _client.say(f"wrote {_client.inert(args.html)}")
    if args.json:
        return _client.print_json(as_json(summary, price_for))
    return _client.say(render(summary, price_for))


def _project(args: argparse.Namespace, verb: str) -> Path:
    """Whose log: the target's; else this project's; else the only running session's."""
    return _target.directory(args, verb, ".choragos/logs/events.jsonl")


def arguments(verb: str) -> argparse.ArgumentParser:
    made = _client.bare_parser(verb, "Summarise a session per role from its event log.")
    made.add_argument("log", nargs="?", metavar="LOG",
                      help="event log (default: .choragos/logs/events.jsonl here)")
    made.add_argument("--all", action="store_true",
                      help="add up every run in the log, not only the last")
    made.add_argument("--json", action="store_true", help="print the summary as JSON")
    made.add_argument("--html", type=Path, metavar="FILE",
                      help="also write the session as one self-contained page: a timeline "
                           "per role, the table, the cost curve")
    made.add_argument("--config", type=Path, metavar="FILE",
                      help="price tokens with this file's [pricing] (default: "
                           ".choragos.toml here)")
    _target.add_option(made)
    return made


PriceFor = Callable[[str], object]


def session_page(workdir: Path, path: Path, price_for: PriceFor) -> None:
    """The page for the last run in ``workdir``'s event log (the deck's board writes it)."""
    runs = report.split_runs(_read(events.default_path(workdir)).records)
    if not runs:
        raise _client.Failure(_client.EXIT_REFUSED, "the event log holds no events")
    write_page(path, report.build(runs[-1:]), runs[-1:], price_for)


def write_page(path: Path, summary: report.Report, runs: list[list[dict]],
               price_for: PriceFor) -> None:
    """The self-contained HTML page (timeline, table, cost curve) at ``path``."""
    from choragos import reportpage, timeline

    records = [record for run in runs for record in run]
    line = timeline.build(records, [stats.name for stats in summary.roles], price_for)
    rows = [_row(stats, price_for) for stats in summary.roles]
    page = reportpage.render(line, _header(summary), rows, _COLUMNS)
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(page, encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise _client.Failure(_client.EXIT_REFUSED, f"cannot write {_client.inert(path)}: "
                              f"{_client.inert(exc.strerror or exc)}") from None


def prices(path: Path | None, project: Path | None = None) -> PriceFor:
    """The ``[pricing]`` lookup of the project's configuration (``path`` when
    given); without one, nothing is priced."""
    from choragos.config import ConfigError, load_config

    try:
        return load_config(path and path.absolute(), project or Path.cwd()).price_for
    except ConfigError as exc:
        first = exc.errors[0] if exc.errors else str(exc)
        print(f"note: no prices ({_client.inert(first)}); COST reads n/a", file=sys.stderr)
        return lambda model: None


def role_cost(stats: report.RoleStats, price_for: PriceFor) -> float | None:
    return costs.priced(stats.models, price_for)


def _read(path: Path) -> report.LogRead:
    try:
        return report.read_log(path)
    except FileNotFoundError:
        raise _client.Failure(_client.EXIT_REFUSED,
                              f"there is no event log at {_client.inert(path)}") from None
    except OSError as exc:
        raise _client.Failure(_client.EXIT_REFUSED, f"cannot read {_client.inert(path)}: "
                              f"{_client.inert(exc.strerror or exc)}") from None


def render(summary: report.Report, price_for: PriceFor = lambda model: None) -> str:
    """The header, the role table and the never-reported count, as text."""
    rows = [_row(stats, price_for) for stats in summary.roles]
    lines = [_header(summary), "", _client.table(rows, _COLUMNS), "",
             f"{len(summary.never_reported)} task(s) never reported work-done"]
    if summary.session_budget is not None:
        crossed = "; crossed: every role was paused" if summary.session_over else ""
        lines.insert(1, f"session budget ${summary.session_budget:.2f}{crossed}")
    if summary.never_reported:
        lines.append(", ".join(_client.inert(t) for t in summary.never_reported))
    if summary.rollbacks:
        lines += ["", f"{len(summary.rollbacks)} rollback(s):"]
        lines += [rollback_text(r) for r in summary.rollbacks]
    return "\n".join(lines)


def rollback_text(rollback: dict) -> str:
    """One rollback as a line: when, to before what, by whom, and its undo."""
    who = _client.inert(str(rollback.get("by") or "?"))
    if not rollback["ok"]:
        return (f"  {_clock(rollback['t'])}  {_client.inert(str(rollback.get('target')))}"
                f" by {who}: failed: {_client.inert(str(rollback.get('error')))}")
    undo = rollback.get("undo")
    undo_text = f"; undo: choragos rollback {_client.inert(str(undo))}" if undo else ""
    return (f"  {_clock(rollback['t'])}  to before {_client.inert(str(rollback.get('task')))}"
            f" by {who}: restored {rollback.get('restored')}, deleted "
            f"{rollback.get('deleted')}{undo_text}")


def _header(summary: report.Report) -> str:
    runs = "run" if summary.runs == 1 else f"{summary.runs} runs from"
    where = ", ".join(_client.inert(d) for d in summary.dirs) or "directory unknown"
    return f"{runs} {_local(summary.start)} · wall {format_duration(summary.wall)} · {where}"


def _row(stats: report.RoleStats, price_for: PriceFor) -> dict[str, object]:
    # A role that was never handed work (the orchestrator) has no task numbers.
    idle = stats.tasks == 0 and stats.done + stats.failed + stats.blocked == 0
    avg = stats.avg
    cost, guess = role_cost(stats, price_for), costs.estimated(stats.models, price_for)
    return {"role": stats.name,
            "tasks": "-" if idle else stats.tasks,
            "done": "-" if idle else stats.done,
            "failed": "-" if idle else stats.failed,
            "blocked": "-" if idle else stats.blocked,
            "budget": budget_text(stats.budget, stats.over_budget),
            "busy": "-" if idle else format_duration(stats.busy),
            "avg": "-" if avg is None else format_duration(avg),
            "first": _clock(stats.first), "last": _clock(stats.last),
            "tokens": tokens_text(stats.tokens),
            "cost": "n/a" if cost is None else costs.cost_text(cost, bool(guess))}


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


def as_json(summary: report.Report,
            price_for: PriceFor = lambda model: None) -> dict[str, object]:
    """The same summary with raw numbers: seconds, epoch times, token counts, USD."""
    return {"runs": summary.runs, "start": summary.start, "start_local": _local(summary.start),
            "wall": summary.wall, "dirs": summary.dirs,
            "damaged_after": summary.damaged_after, "damaged_in": summary.damaged_in,
            "skipped": summary.skipped,
            "roles": [_role_json(stats, price_for) for stats in summary.roles],
            "never_reported": summary.never_reported, "changes": summary.changes,
            "rollbacks": summary.rollbacks,
            "session_budget": None if summary.session_budget is None else {
                "usd": summary.session_budget, "over": summary.session_over}}


def _role_json(stats: report.RoleStats, price_for: PriceFor) -> dict[str, object]:
    tokens = None if stats.tokens is None else {**stats.tokens,
                                                "total": sum(stats.tokens.values())}
    return {"role": stats.name, "tasks": stats.tasks, "done": stats.done,
            "failed": stats.failed, "blocked": stats.blocked,
            "budget": None if stats.budget is None else {**stats.budget,
                                                          "over": stats.over_budget},
            "busy": stats.busy, "avg": stats.avg, "first": stats.first, "last": stats.last,
            "tokens": tokens, "models": stats.models, "cost": role_cost(stats, price_for),
            "estimated": costs.estimated(stats.models, price_for)}


def _local(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _damage_note(read: report.LogRead) -> str:
    where = _client.inert(read.damaged_in)
    if read.torn_tail:
        return f"{where} is damaged after line {read.damaged_after}; read up to there"
    count = read.damaged_lines
    return (f"{where} is damaged after line {read.damaged_after}: {count} damaged "
            f"line{'' if count == 1 else 's'} skipped, every other line read")


def _clock(t: float | None) -> str:
    return "-" if t is None else time.strftime("%H:%M:%S", time.localtime(t))
