"""A session's timeline, read from its event log: what ``report --html`` draws.

Per role: a bar per task from its delivery (or delegation, when it was never
typed in) to the record that closed it, with the outcome; the wait at an
approval gate; pauses; restarts and timeouts as marks.  Plus the running
cost of every priced token.  Standard library only, like the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from choragos.board.report import TOKEN_FIELDS
from choragos.gateway.costs import priced

# How a task ended, in the order the legend lists them.
OUTCOMES = ("done", "failed", "blocked", "timed out", "rejected", "open")


@dataclass
class Bar:
    """One task on its role's row: from its start to the record that closed it, and how."""

    role: str
    task: str
    label: str
    start: float | None = None  # None: it never left the gate
    end: float | None = None
    outcome: str = "open"
    gate: tuple[float, float | None] | None = None  # (held, decided) times


@dataclass
class Mark:
    """A moment on a role's row: a restart or a timeout."""

    role: str
    t: float
    kind: str  # "restart", "timeout"
    text: str


@dataclass
class Span:
    """A time a role was paused (``end`` None: still paused where the log ends)."""

    role: str
    start: float
    end: float | None
    kind: str = "paused"


@dataclass
class Timeline:
    """What ``report --html`` draws: a row per role (bars, marks, pauses), the running cost."""

    t0: float
    t1: float
    roles: list[str]
    bars: list[Bar] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    cost: list[tuple[float, float]] = field(default_factory=list)  # (t, USD so far)


PriceFor = Callable[[str], object]


def build(records: list[dict], roles: list[str], price_for: PriceFor) -> Timeline:
    """Fold ``records`` (the runs the report covers, in order) into a timeline."""
    builder = Builder(roles, price_for)
    for record in records:
        builder.add(record)
    line = builder.timeline()
    assert line is not None, "a timeline needs at least one record"
    return line


class Builder:
    """A timeline folded a record at a time, readable between records: the web
    page's timeline follows a log that grows, and folding it again from its
    first record at every look costs in proportion to the session's history."""

    def __init__(self, roles: list[str], price_for: PriceFor) -> None:
        self.roles = list(roles)
        self.price_for = price_for
        self._line: Timeline | None = None
        self._folder: _Folder | None = None

    def add(self, record: dict) -> None:
        if self._line is None:
            self._line = Timeline(record["t"], record["t"], list(self.roles))
            self._folder = _Folder(self._line, self.price_for)
        self._line.t1 = max(self._line.t1, record["t"])
        self._folder.fold(record)

    def timeline(self) -> Timeline | None:
        """The records so far as a timeline (the same object, updated), or
        None before the first."""
        if self._folder is not None:
            self._folder.settle()
        return self._line


def to_wire(line: Timeline) -> dict:
    """``line`` as plain data, equal to ``dataclasses.asdict(line)``; written out
    because asdict's deep copy of every bar was a third of a look at 10,000 tasks."""
    return {
        "t0": line.t0, "t1": line.t1, "roles": list(line.roles),
        "bars": [{"role": b.role, "task": b.task, "label": b.label, "start": b.start,
                  "end": b.end, "outcome": b.outcome, "gate": b.gate} for b in line.bars],
        "marks": [{"role": k.role, "t": k.t, "kind": k.kind, "text": k.text}
                  for k in line.marks],
        "spans": [{"role": s.role, "start": s.start, "end": s.end, "kind": s.kind}
                  for s in line.spans],
        "cost": list(line.cost),
    }


class _Folder:
    def __init__(self, line: Timeline, price_for: PriceFor) -> None:
        self.line = line
        self.price_for = price_for
        self.bars: dict[str, Bar] = {}
        self.paused: dict[str, Span] = {}
        self.counters: dict[tuple[str, str], tuple[dict, dict]] = {}  # banked, current

    def fold(self, record: dict) -> None:
        handler = getattr(self, "_" + str(record.get("event", "")).replace(" ", "_")
                          .replace("-", "_"), None)
        if handler is not None and isinstance(record.get("role", ""), str):
            handler(record)

    def settle(self) -> None:
        self.line.bars = list(self.bars.values())

    def _delegate(self, record: dict) -> None:
        task, role = record.get("task"), record.get("role")
        if isinstance(task, str) and role:
            bar = Bar(role, task, str(record.get("label") or ""), start=record["t"])
            self.bars[task] = bar
            self._lane(role)

    def _delegate_gated(self, record: dict) -> None:
        bar = self.bars.get(str(record.get("task")))
        if bar is not None:
            bar.gate, bar.start = (record["t"], None), None

    def _gate_approved(self, record: dict) -> None:
        bar = self.bars.get(str(record.get("task")))
        if bar is not None and bar.gate is not None:
            bar.gate, bar.start = (bar.gate[0], record["t"]), record["t"]

    def _gate_rejected(self, record: dict) -> None:
        bar = self.bars.get(str(record.get("task")))
        if bar is not None and bar.gate is not None:
            bar.gate, bar.outcome = (bar.gate[0], record["t"]), "rejected"

    def _delivered(self, record: dict) -> None:
        bar = self.bars.get(str(record.get("task")))
        if bar is not None and bar.end is None and record.get("by") != "work-done":
            bar.start = record["t"]

    def _work_done(self, record: dict) -> None:
        bar = self.bars.get(str(record.get("task")))
        if bar is None or record.get("note") or bar.outcome not in ("open", "timed out"):
            return
        outcome = record.get("outcome")
        bar.outcome = outcome if outcome in ("failed", "blocked") else "done"
        bar.end = record["t"]

    def _task_failed(self, record: dict) -> None:
        bar = self.bars.get(str(record.get("task")))
        if bar is not None and bar.outcome in ("open", "timed out"):
            bar.outcome, bar.end = "failed", record["t"]

    def _timeout(self, record: dict) -> None:
        bar = self.bars.get(str(record.get("task")))
        if bar is not None and bar.outcome == "open":
            bar.outcome = "timed out"
        seconds = record.get("seconds")
        self._mark(record, "timeout", f"{record.get('task')} timed out"
                   + (f" after {seconds:g}s" if isinstance(seconds, int | float) else ""))

    def _role_exited(self, record: dict) -> None:
        if record.get("restarting"):
            self._mark(record, "restart", f"restarted: {record.get('status') or 'exited'}")

    def _role_state(self, record: dict) -> None:
        role, state = record.get("role"), record.get("state")
        if not role:
            return
        self._lane(role)
        open_span = self.paused.pop(role, None)
        if open_span is not None:
            open_span.end = record["t"]
        if state == "paused":
            span = Span(role, record["t"], None)
            self.paused[role] = span
            self.line.spans.append(span)

    def _tokens(self, record: dict) -> None:
        role = record.get("role")
        values = {k: record.get(k, 0) for k in TOKEN_FIELDS}
        if not role or not all(isinstance(v, int) and v >= 0 for v in values.values()):
            return
        key = (role, str(record.get("model") or ""))
        banked, current = self.counters.get(key, ({}, {}))
        if any(values[k] < current.get(k, 0) for k in TOKEN_FIELDS):
            banked = {k: banked.get(k, 0) + current.get(k, 0) for k in TOKEN_FIELDS}
        self.counters[key] = (banked, values)
        self.line.cost.append((record["t"], self._spent()))

    def _spent(self) -> float:
        """USD so far over every priced model (an unpriced one adds nothing)."""
        total = 0.0
        for (_, model), (banked, current) in self.counters.items():
            counts = {k: banked.get(k, 0) + current.get(k, 0) for k in TOKEN_FIELDS}
            total += priced({model: counts}, self.price_for) or 0.0
        return total

    def _mark(self, record: dict, kind: str, text: str) -> None:
        role = record.get("role")
        if role:
            self._lane(role)
            self.line.marks.append(Mark(role, record["t"], kind, text))

    def _lane(self, role: str) -> None:
        if role not in self.line.roles and role != "unknown":
            self.line.roles.append(role)
