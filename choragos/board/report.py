"""What a session did, per role, read back from its event log.

The log is the only input: ``choragos report`` works after the session has
gone, on a copy of someone else's log, and on a log cut short by a crash.
A damaged line (torn by a crash, garbage, a record whose time no clock
shows) is skipped and the reading carries on; the summary says where the
first one was and how many there were.
Standard library only, like every CLI verb.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from choragos.gitstore import changes
from choragos.inert import inert

__all__ = ["TOKEN_FIELDS", "LogRead", "Report", "ReportError", "RoleStats", "build",
           "parse_record", "read_log", "read_or_say", "split_runs"]

TOKEN_FIELDS = ("input", "output", "cache_read", "cache_creation")


@dataclass
class LogRead:
    """The readable records; ``damaged_after`` is the line before the first
    damaged one, in the file ``damaged_in``, if any; ``damaged_lines`` how
    many were skipped (over all files); ``files`` were read, oldest first."""

    records: list[dict]
    damaged_after: int | None = None
    damaged_in: str | None = None
    damaged_lines: int = 0
    torn_tail: bool = False  # the only damage is the last line of its file
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # rotated names not read, with why


@dataclass
class RoleStats:
    """One role's numbers in a report: tasks by outcome, busy time, tokens, budgets, limits."""

    name: str
    tasks: int = 0
    done: int = 0
    failed: int = 0   # reported --failed, or failed by the session (worker died, undeliverable)
    blocked: int = 0  # reported --blocked
    busy: float = 0.0
    timed: int = 0  # resolved tasks whose start is in the log: AVG divides by these
    first: float | None = None
    last: float | None = None
    tokens: dict[str, int] | None = None
    models: dict[str, dict[str, int]] = field(default_factory=dict)  # tokens per model
    budget: dict | None = None  # {"usd", "tokens"} from the last "budgets" record
    over_budget: bool = False
    limits: int = 0        # provider limits it hit
    limited: float = 0.0   # seconds it waited them out
    refused: int = 0       # model calls a blocking budget refused

    @property
    def avg(self) -> float | None:
        return self.busy / self.timed if self.timed else None

    def touch(self, t: float) -> None:
        self.first = t if self.first is None else min(self.first, t)
        self.last = t if self.last is None else max(self.last, t)

    def absorb(self, other: RoleStats) -> None:
        """Add another run's numbers for the same role."""
        self.tasks += other.tasks
        self.done += other.done
        self.failed += other.failed
        self.blocked += other.blocked
        self.busy += other.busy
        self.timed += other.timed
        for t in (other.first, other.last):
            if t is not None:
                self.touch(t)
        if other.tokens is not None:
            self.tokens = _add_tokens(self.tokens or {}, other.tokens)
        for model, counts in other.models.items():
            self.models[model] = _add_tokens(self.models.get(model, {}), counts)
        self.budget = other.budget or self.budget
        self.over_budget = self.over_budget or other.over_budget
        self.limits += other.limits
        self.limited += other.limited
        self.refused += other.refused


@dataclass
class Report:
    """What a session's log says it did: its runs, each role's numbers, changes, rollbacks."""

    runs: int
    start: float
    wall: float
    dirs: list[str]
    roles: list[RoleStats]
    never_reported: list[str]
    damaged_after: int | None = None
    damaged_in: str | None = None  # the file damaged_after counts the lines of
    skipped: list[str] = field(default_factory=list)  # rotated logs not read, with why
    session_budget: float | None = None
    changes: list[dict] = field(default_factory=list)  # per work-done: the files it changed
    session_over: bool = False
    rollbacks: list[dict] = field(default_factory=list)  # every rollback asked for, in order


ROTATED_READ = 9  # rotated predecessors looked for: events.jsonl.1 … .9


def read_log(path: Path, *, rotated_only: bool = False) -> LogRead:
    """The records of ``path``, after those of its rotated predecessors
    (``path.3`` … ``path.1``, oldest first), so a run that outlived a rotation
    is read whole.  Each file is read up to its first damaged line, and the
    next one carries on; OSError if ``path`` itself cannot be read.
    ``rotated_only``: the predecessors alone (a reader that follows ``path``
    reads it itself).

    ``path`` is read wherever it leads (whoever ran the report named it), but
    a predecessor is found by its name alone, in a directory the agents can
    write to: one that is a link or not a regular file is skipped, never
    followed, and said in ``skipped``."""
    read = LogRead([])
    older = [path.with_name(f"{path.name}.{n}") for n in range(1, ROTATED_READ + 1)]
    live = [] if rotated_only else [path]
    for part in [*reversed([p for p in older if os.path.lexists(p)]), *live]:
        try:
            records, damaged, lines = _read_file(part, follow=part == path)
        except OSError as exc:
            if part == path:
                raise
            if exc.errno != errno.ENOENT:  # one that went away: the newer ones still count
                read.skipped.append(f"{part} ({exc.strerror})")
            continue
        read.records.extend(records)
        read.files.append(str(part))
        if damaged and read.damaged_after is None:
            read.damaged_after, read.damaged_in = damaged[0] - 1, str(part)
            read.torn_tail = damaged == [lines]
        elif damaged:
            read.torn_tail = False
        read.damaged_lines += len(damaged)
    return read


class ReportError(Exception):
    """What keeps a report from being read or written, as one sentence."""


def read_or_say(path: Path) -> LogRead:
    """:func:`read_log`, a log that cannot be read a :class:`ReportError`."""
    try:
        return read_log(path)
    except FileNotFoundError:
        raise ReportError(f"there is no event log at {inert(path)}") from None
    except OSError as exc:
        raise ReportError(f"cannot read {inert(path)}: {inert(exc.strerror or exc)}") from None


def _read_file(path: Path, follow: bool = True) -> tuple[list[dict], list[int], int]:
    """The readable records of ``path``, the numbers of its damaged lines,
    and how many lines it has."""
    records: list[dict] = []
    damaged: list[int] = []
    number = 0
    with _open_log(path, follow) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue  # an empty line carries no event and hides none
            record = parse_record(line)
            if record is None:
                damaged.append(number)
            else:
                records.append(record)
    return records, damaged, number


def _open_log(path: Path, follow: bool) -> TextIO:
    """``path`` for reading; unless ``follow``, only as a regular file that
    is no link (OSError otherwise, its strerror saying which)."""
    if follow:
        return open(path, encoding="utf-8", errors="replace")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symbolic link; rotated logs are read only as "
                                       "regular files") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    return open(fd, encoding="utf-8", errors="replace")


def parse_record(line: str | bytes) -> dict | None:
    """One line's record, or None when it is damaged (not JSON, not an object,
    no time a clock shows)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
        return None
    if not isinstance(record, dict) or not _is_time(record.get("t")):
        return None
    return record


MAX_TIME = 2.0**34  # seconds since the epoch (the year 2514): past it, a forged time


def _is_time(value: object) -> bool:
    """A time every clock can show (a forged 1e300 made the report crash)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return math.isfinite(value) and 0 <= value <= MAX_TIME


def split_runs(records: list[dict]) -> list[list[dict]]:
    """One list per run, each from its ``deck starting`` record.

    Records before the first start (a rotated log begins mid-run) form a run
    of their own, so nothing is dropped.
    """
    runs: list[list[dict]] = []
    for record in records:
        if record.get("event") == "deck starting" or not runs:
            runs.append([])
        runs[-1].append(record)
    return _join_resumed(runs)


def _join_resumed(runs: list[list[dict]]) -> list[list[dict]]:
    """A run started with ``serve --resume`` continues the one before it, so a task
    delegated before a restart and reported after it is one task."""
    joined: list[list[dict]] = []
    for run in runs:
        if joined and any(r.get("event") == "session resumed" for r in run):
            joined[-1].extend(run)
        else:
            joined.append(run)
    return joined


def build(runs: list[list[dict]], damaged_after: int | None = None,
          damaged_in: str | None = None, skipped: list[str] | None = None) -> Report:
    """Summarise ``runs`` (at least one) into one report, adding up their roles."""
    summaries = [_RunSummary(run) for run in runs]
    roles: dict[str, RoleStats] = {}
    for summary in summaries:
        for name, stats in summary.roles.items():
            roles.setdefault(name, RoleStats(name)).absorb(stats)
    dirs = list(dict.fromkeys(s.dir for s in summaries if s.dir))
    return Report(runs=len(runs), start=summaries[0].start,
                  wall=sum(s.end - s.start for s in summaries), dirs=dirs,
                  roles=list(roles.values()),
                  never_reported=[t for s in summaries for t in s.never_reported()],
                  damaged_after=damaged_after, damaged_in=damaged_in,
                  skipped=list(skipped or ()),
                  session_budget=next((s.session_budget for s in reversed(summaries)
                                       if s.session_budget is not None), None),
                  session_over=any(s.session_over for s in summaries),
                  changes=[{"run": n, **c} for n, s in enumerate(summaries, 1)
                           for c in s.changes],
                  rollbacks=[{"run": n, **r} for n, s in enumerate(summaries, 1)
                             for r in s.rollbacks])


@dataclass
class _Task:
    """A task as one run's log tells it: its role, when it went out, how it is counted."""

    role: str
    delegated: float
    delivered: float | None = None
    resolved: bool = False
    rejected: bool = False
    counted: str = ""  # the outcome this task is counted under, if any


@dataclass
class _TokenCounter:
    """A role's cumulative counters for one model; a drop means the agent restarted."""

    banked: dict[str, int] = field(default_factory=dict)
    current: dict[str, int] = field(default_factory=dict)

    def update(self, values: dict[str, int]) -> None:
        if any(values[k] < self.current.get(k, 0) for k in TOKEN_FIELDS):
            self.banked = _add_tokens(self.banked, self.current)
        self.current = values

    def total(self) -> dict[str, int]:
        return _add_tokens(self.banked, self.current)


def _add_tokens(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in TOKEN_FIELDS}


class _RunSummary:
    """Folds one run's records into per-role numbers."""

    def __init__(self, records: list[dict]) -> None:
        self.start = records[0]["t"]
        self.end = max(r["t"] for r in records)
        self.dir = str(records[0].get("dir") or "") if _starts(records) else ""
        self.roles: dict[str, RoleStats] = {}
        self.tasks: dict[str, _Task] = {}
        self.tokens: dict[tuple[str, str], _TokenCounter] = {}
        self.session_budget: float | None = None
        self.session_over = False
        self.changes: list[dict] = []
        self.rollbacks: list[dict] = []
        self._fold(records)
        self._settle_tokens()

    def _fold(self, records: list[dict]) -> None:
        handlers = {"delegate": self._delegate, "delivered": self._delivered,
                    "work-done": self._work_done, "gate rejected": self._rejected,
                    "task failed": self._task_failed, "task rerouted": self._rerouted,
                    "verify failed": self._checked_failed,
                    "held work rejected": self._checked_failed,
                    "held work approved": self._held_approved,
                    "budgets": self._budgets,
                    "over budget": self._over_budget,
                    "role limited": self._limited, "limit over": self._limit_over,
                    "limit given up": self._limit_over, "model call refused": self._refused,
                    "tokens": self._tokens, "changes": self._changes,
                    "rollback": self._rollback, "rollback failed": self._rollback}
        for record in records:
            self._touch(record)
            event = record.get("event")
            handler = handlers.get(event) if isinstance(event, str) else None
            if handler is not None:
                handler(record)

    def _settle_tokens(self) -> None:
        # Counters are per model; a role's column adds up all its models.
        for (role, model), counter in self.tokens.items():
            stats = self._role(role)
            stats.tokens = _add_tokens(stats.tokens or {}, counter.total())
            stats.models[model] = _add_tokens(stats.models.get(model, {}), counter.total())

    def never_reported(self) -> list[str]:
        return [tid for tid, task in self.tasks.items()
                if not task.resolved and not task.rejected]

    def _role(self, name: str) -> RoleStats:
        return self.roles.setdefault(name, RoleStats(name))

    def _touch(self, record: dict) -> None:
        role = record.get("role")
        # "unknown" is what the core writes for a report whose id matched no
        # task; it names no role, so it must not become a row.
        if isinstance(role, str) and role and not _unmatched(record):
            self._role(role).touch(record["t"])

    def _delegate(self, record: dict) -> None:
        task, role = record.get("task"), record.get("role")
        if isinstance(task, str) and isinstance(role, str):
            self.tasks[task] = _Task(role, record["t"])
            self._role(role).tasks += 1

    def _delivered(self, record: dict) -> None:
        task = self.tasks.get(str(record.get("task")))
        # The first delivery counts; a later one (by="work-done") adds nothing.
        if task is not None and task.delivered is None:
            task.delivered = record["t"]

    def _work_done(self, record: dict) -> None:
        role = record.get("role")
        if record.get("note") or not isinstance(role, str) or _unmatched(record):
            return
        outcome = _outcome(record)
        stats = self._role(role)
        task = self.tasks.get(str(record.get("task")))
        if task is None:
            _count(stats, outcome, 1)  # delegated before this log begins: its time is unknown
            return
        if task.counted == "done":
            return
        self._recount(task, outcome)
        if not task.resolved:
            task.resolved = True
            stats.busy += record["t"] - (task.delivered if task.delivered is not None
                                         else task.delegated)
            stats.timed += 1

    def _rollback(self, record: dict) -> None:
        # Files put back are the operator's decision, so the report shows each
        # one, failed or not, with who asked and how to undo it.
        done = record.get("event") == "rollback"
        self.rollbacks.append({
            "t": record["t"], "ok": done, "task": record.get("task") if done else None,
            "target": record.get("target"), "by": record.get("by"),
            "restored": record.get("restored"), "deleted": record.get("deleted"),
            "undo": record.get("saved"), "error": None if done else record.get("error")})

    def _changes(self, record: dict) -> None:
        files = record.get("files")
        if isinstance(files, list):
            counted = record.get("totals")
            self.changes.append({"task": record.get("task"), "role": record.get("role"),
                                 "files": files, "flagged": bool(record.get("flagged")),
                                 "totals": counted if isinstance(counted, dict)
                                 else _totals(files)})

    def _task_failed(self, record: dict) -> None:
        # The session failed it (its worker died, it could not be typed); a
        # later report from the worker replaces this count.
        task = self.tasks.get(str(record.get("task")))
        if task is not None and not task.counted:
            self._recount(task, "failed")

    def _checked_failed(self, record: dict) -> None:
        # Reported done, then failed by its checks (its verify, or the
        # operator at a hold): failed on the board, so here; a report after a
        # fix counts it done again.
        task = self.tasks.get(str(record.get("task")))
        if task is not None and task.counted:
            self._recount(task, "failed")

    def _held_approved(self, record: dict) -> None:
        task = self.tasks.get(str(record.get("task")))
        if task is not None and task.counted:
            self._recount(task, "done")

    def _rerouted(self, record: dict) -> None:
        # A limited role's queued task given to a free one: it is the taker's
        # now, on the board as here (its report comes from the taker).
        task, role = self.tasks.get(str(record.get("task"))), record.get("role")
        if task is None or not isinstance(role, str) or not role or role == task.role:
            return
        was, now = self._role(task.role), self._role(role)
        was.tasks -= 1
        now.tasks += 1
        if task.counted:
            _count(was, task.counted, -1)
            _count(now, task.counted, 1)
        task.role = role

    def _recount(self, task: _Task, outcome: str) -> None:
        stats = self._role(task.role)
        if task.counted:
            _count(stats, task.counted, -1)
        _count(stats, outcome, 1)
        task.counted = outcome

    def _budgets(self, record: dict) -> None:
        roles = record.get("roles") if isinstance(record.get("roles"), dict) else {}
        for name, caps in roles.items():
            if isinstance(caps, dict):
                self._role(str(name)).budget = {"usd": caps.get("usd"),
                                                "tokens": caps.get("tokens")}
        session = record.get("session")
        self.session_budget = session if _is_time(session) else None

    def _over_budget(self, record: dict) -> None:
        role = record.get("role")
        if record.get("scope") == "session":
            self.session_over = True
        elif isinstance(role, str) and role:
            self._role(role).over_budget = True

    def _limited(self, record: dict) -> None:
        if isinstance(record.get("role"), str):
            self._role(record["role"]).limits += 1

    def _limit_over(self, record: dict) -> None:
        lasted = record.get("lasted")
        # Any agent can write the log: only a sane wait is added up.
        if isinstance(record.get("role"), str) and _is_time(lasted) and 0 <= lasted < 1e7:
            self._role(record["role"]).limited += lasted

    def _refused(self, record: dict) -> None:
        if isinstance(record.get("role"), str):
            self._role(record["role"]).refused += 1

    def _rejected(self, record: dict) -> None:
        task = self.tasks.get(str(record.get("task")))
        if task is not None:
            task.rejected = True

    def _tokens(self, record: dict) -> None:
        role, values = record.get("role"), _token_values(record)
        if isinstance(role, str) and role and values is not None:
            key = (role, str(record.get("model") or ""))
            self.tokens.setdefault(key, _TokenCounter()).update(values)


def _outcome(record: dict) -> str:
    outcome = record.get("outcome")
    return outcome if outcome in ("failed", "blocked") else "done"


def _count(stats: RoleStats, outcome: str, step: int) -> None:
    setattr(stats, outcome, getattr(stats, outcome) + step)


def _starts(records: list[dict]) -> bool:
    return records[0].get("event") == "deck starting"


def _unmatched(record: dict) -> bool:
    return record.get("event") == "work-done" and record.get("role") == "unknown"


def _token_values(record: dict) -> dict[str, int] | None:
    values = {k: record.get(k, 0) for k in TOKEN_FIELDS}
    if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
           for v in values.values()):
        return values
    return None


def _totals(files: list) -> dict[str, int]:
    """An older log's ``changes`` event had no totals: its list was whole then."""
    def lines(entry: object, key: str) -> int:
        value = entry.get(key) if isinstance(entry, dict) else None
        return value if isinstance(value, int) else 0
    return changes.totals([{"added": lines(c, "added"), "deleted": lines(c, "deleted")}
                           for c in files])
