"""``choragos report [LOG] [--all] [--json]``: a per-role summary of a session.

Reads the event log only, so it needs no running session.  Every piece of
log text that reaches the terminal goes through ``_client.inert``: the log
holds role names, ids and directories that came from outside.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from choragos.board import events, report
from choragos.board.reporttable import COLUMNS, PriceFor, clock, header, local_time, role_cost, row
from choragos.cli import _client, _target
from choragos.cli._argparser import named, named_path
from choragos.durations import format_duration
from choragos.gateway import costs
from choragos.plural import counted


def run(argv: list[str], verb: str = "report") -> int:
    """Entry point for ``choragos report``."""
    return _client.guard(verb, lambda: _main(argv, verb), json=_client.wants_json(argv))


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
    made.add_argument("log", nargs="?", metavar="LOG", type=named,
                      help="event log (default: .choragos/logs/events.jsonl here)")
    made.add_argument("--all", action="store_true",
                      help="add up every run in the log, not only the last")
    made.add_argument("--json", action="store_true", help="print the summary as JSON")
    made.add_argument("--html", type=_page_file, metavar="FILE",
                      help="also write the session as one self-contained page: a timeline "
                           "per role, the table, the cost curve")
    made.add_argument("--config", type=named_path, metavar="FILE",
                      help="price tokens with this file's [pricing] (default: "
                           ".choragos.toml here)")
    _target.add_option(made)
    return made


def _page_file(text: str) -> Path:
    """``--html``'s file: a name to write, not a directory."""
    path = Path(named(text))
    if path.name in ("", "..") or path.is_dir():
        raise argparse.ArgumentTypeError(f"{_client.inert(text)} is a directory; name the "
                                         "page's file, such as report.html")
    return path


def write_page(path: Path, summary: report.Report, runs: list[list[dict]],
               price_for: PriceFor) -> None:
    """The self-contained HTML page (timeline, table, cost curve) at ``path``."""
    from choragos.board import reportpage  # only --html pays for the page's imports

    try:
        reportpage.write(path, summary, runs, price_for)
    except report.ReportError as exc:
        raise _client.Failure(_client.EXIT_REFUSED, str(exc)) from None


def prices(path: Path | None, project: Path | None = None) -> PriceFor:
    """The ``[pricing]`` lookup of the project's configuration (``path`` when
    given); without one, nothing is priced.  A ``--config`` FILE that does not
    load is a usage error: the operator named it to get prices, and a table
    without them would pass for priced.  The project's own file may be broken
    mid-edit; the log is still worth reading, so that one is only a note."""
    from choragos.config.model import ConfigError, load_config

    try:
        return load_config(path and path.absolute(), project or Path.cwd()).price_for
    except ConfigError as exc:
        first = _client.inert(exc.errors[0] if exc.errors else str(exc))
        if path is not None:
            raise _client.Failure(_client.EXIT_USAGE, f"the --config file does not load: "
                                  f"{first}; fix it, or leave --config out") from None
        print(f"note: no prices ({first}); COST reads n/a", file=sys.stderr)
        return lambda model: None


def _read(path: Path) -> report.LogRead:
    if os.path.exists(path) and not os.path.isfile(path):  # /dev/zero: read for ever
        raise _client.Failure(_client.EXIT_USAGE, f"{_client.inert(path)} is not an event "
                                                  "log: not a regular file")
    try:
        return report.read_or_say(path)
    except report.ReportError as exc:
        raise _client.Failure(_client.EXIT_REFUSED, str(exc)) from None


def render(summary: report.Report, price_for: PriceFor = lambda model: None) -> str:
    """The header, the role table and the never-reported count, as text."""
    rows = [row(stats, price_for) for stats in summary.roles]
    lines = [header(summary), "", _client.table(rows, COLUMNS), "",
             f"{counted(len(summary.never_reported), 'task')} never reported work-done"]
    if summary.session_budget is not None:
        crossed = "; crossed: every role was paused" if summary.session_over else ""
        lines.insert(1, f"session budget ${summary.session_budget:.2f}{crossed}")
    if summary.never_reported:
        lines.append(", ".join(_client.inert(t) for t in summary.never_reported))
    lines += _night_lines(summary.roles)
    if summary.rollbacks:
        lines += ["", f"{counted(len(summary.rollbacks), 'rollback')}:"]
        lines += [rollback_text(r) for r in summary.rollbacks]
    return "\n".join(lines)


def rollback_text(rollback: dict) -> str:
    """One rollback as a line: when, to before what, by whom, and its undo."""
    who = _client.inert(str(rollback.get("by") or "?"))
    if not rollback["ok"]:
        return (f"  {clock(rollback['t'])}  {_client.inert(str(rollback.get('target')))}"
                f" by {who}: failed: {_client.inert(str(rollback.get('error')))}")
    undo = rollback.get("undo")
    undo_text = f"; undo: choragos rollback {_client.inert(str(undo))}" if undo else ""
    return (f"  {clock(rollback['t'])}  to before {_client.inert(str(rollback.get('task')))}"
            f" by {who}: restored {rollback.get('restored')}, deleted "
            f"{rollback.get('deleted')}{undo_text}")


def _night_lines(roles: list[report.RoleStats]) -> list[str]:
    """Provider limits waited out and model calls a budget refused, when any."""
    limits = [f"{_client.inert(r.name)} {r.limits} (waited {format_duration(r.limited)})"
              for r in roles if r.limits]
    refused = [f"{_client.inert(r.name)} {r.refused}" for r in roles if r.refused]
    lines = [f"provider limits: {', '.join(limits)}"] if limits else []
    return lines + ([f"model calls refused by a budget: {', '.join(refused)}"]
                    if refused else [])


def as_json(summary: report.Report,
            price_for: PriceFor = lambda model: None) -> dict[str, object]:
    """The same summary with raw numbers: seconds, epoch times, token counts, USD."""
    return {"runs": summary.runs, "start": summary.start, "start_local": local_time(summary.start),
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
            "limits": stats.limits, "limited": stats.limited, "refused": stats.refused,
            "tokens": tokens, "models": stats.models, "cost": role_cost(stats, price_for),
            "estimated": costs.estimated(stats.models, price_for)}


def _damage_note(read: report.LogRead) -> str:
    where = _client.inert(read.damaged_in)
    if read.torn_tail:
        return f"{where} is damaged after line {read.damaged_after}; read up to there"
    count = read.damaged_lines
    return (f"{where} is damaged after line {read.damaged_after}: {count} damaged "
            f"line{'' if count == 1 else 's'} skipped, every other line read")
