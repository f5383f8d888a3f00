"""What a journal may hold, checked before a resume trusts it.

Only choragos writes the journal, but it lives in the workspace, where an
agent or a person can edit a record and recompute its checksum.  A record
that is not what choragos writes (a field missing or of another type, a
kind no version writes, a number no session reaches, an id that is no task
id or role name) is named by :func:`record_problem`, a snapshot by
:func:`snapshot_problem`, and a task filed under another id by
:func:`image_problem`.  Each answer is a short phrase, or None: the journal
turns it into a refusal, never a traceback at load or on the core's thread.

A new kind of record, a new field that may be null, or a new kind of
waiting must be declared here, or a resume refuses the journals that hold
it (the durable and resume tests load journals real sessions wrote).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from choragos import onuse
from choragos.board.tasks import TaskState

Check = Callable[[Any], "str | None"]

MAX_COUNT = 2**53          # ids, counters, sequence numbers: JSON-safe, never reached
MAX_PID = 2**22            # Linux's highest pid_max
MAX_TIME = 2.0**34         # seconds since the epoch (the year 2514)
MAX_SECONDS = 10.0**9      # a timeout clock's length
MAX_DEPTH = 64             # a layout's nesting (a deck shows a few dozen tiles at most)
_TASK_ID = onuse.pattern(r"T[0-9]{1,16}")  # up to MAX_COUNT
_ROLE = onuse.pattern(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")  # as the config allows
_BRANCH = onuse.pattern(r"choragos/[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
_COMMIT_ID = onuse.pattern(r"(?:[0-9a-f]{40}|[0-9a-f]{64})?")
_STATES = frozenset(str(state) for state in TaskState)


# -- small checks: each says what is wrong with one value, or None -------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def count(lo: int = 0, hi: int = MAX_COUNT) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return "is not a whole number"
        return None if lo <= value <= hi else f"is out of range ({lo} to {hi})"
    return check


def number(hi: float) -> Check:
    def check(value: Any) -> str | None:
        if not _is_number(value):
            return "is not a number"
        if not math.isfinite(value) or not 0 <= value <= hi:
            return f"is out of range (0 to {hi:g})"
        return None
    return check


def text(value: Any) -> str | None:
    return None if isinstance(value, str) else "is not a string"


def flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "is not true or false"


def mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else "is not an object"


def shallow(value: Any, depth: int = 0) -> str | None:
    """An object nested at most MAX_DEPTH deep (the deck walks a layout
    recursively; a deeper one would end its thread in a RecursionError)."""
    if depth == 0 and not isinstance(value, dict):
        return "is not an object"
    if depth > MAX_DEPTH:
        return f"is nested more than {MAX_DEPTH} deep"
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) \
        else ()
    return next((why for item in items if (why := shallow(item, depth + 1)) is not None), None)


def matching(pattern: Callable[[], re.Pattern], what: str) -> Check:
    def check(value: Any) -> str | None:
        ok = isinstance(value, str) and pattern().fullmatch(value)
        return None if ok else f"is not {what}"
    return check


def optional(inner: Check) -> Check:
    return lambda value: None if value is None else inner(value)


def one_of(values: frozenset[str]) -> Check:
    def check(value: Any) -> str | None:
        if isinstance(value, str) and value in values:
            return None
        return f"is not one of {', '.join(sorted(values))}"
    return check


def list_of(inner: Check) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            return "is not a list"
        return next((f"[{n}] {why}" for n, item in enumerate(value)
                     if (why := inner(item)) is not None), None)
    return check


def dict_of(key: Check, inner: Check) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "is not an object"
        for name, item in value.items():
            why = key(name)
            if why is not None:
                return f"has a key {str(name)[:40]!r} that {why}"
            why = inner(item)
            if why is not None:
                return f"[{str(name)[:40]!r}] {why}"
        return None
    return check


def fields(required: dict[str, Check], optional_fields: dict[str, Check] | None = None
           ) -> Check:
    """An object with ``required`` fields (and maybe ``optional_fields``); others ignored."""
    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "is not an object"
        missing = next((name for name in required if name not in value), None)
        if missing is not None:
            return f"has no field {missing!r}"
        for name, inner in {**required, **(optional_fields or {})}.items():
            if name in value and (why := inner(value[name])) is not None:
                return f"has a field {name!r} that {why}"
        return None
    return check


task_id = matching(_TASK_ID, "a task id (T1, T2, ...)")
role = matching(_ROLE, "a role name")
moment = number(MAX_TIME)
seconds = number(MAX_SECONDS)


# -- the shapes choragos writes -----------------------------------------------------

_BRANCH_OF = matching(_BRANCH, "a role's branch")
# What a merge takes goes to git as an argument: a commit's id, never an option.
_COMMIT = matching(_COMMIT_ID, "a commit id")
_WAITING = {
    "merge": fields({"branch": _BRANCH_OF, "diff": text}, {"commit": _COMMIT}),
    "merging": fields({"branch": _BRANCH_OF}, {"commit": _COMMIT}),
    "judge": fields({"why": text, "line": text, "unmerged": flag}, {"file": text}),
    "judging": fields({"judge_task": task_id, "line": text, "unmerged": flag}),
}
_WAITING["owner"] = _WAITING["judge"]


def waiting(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "is not an object"
    kind = value.get("kind")
    shape = _WAITING.get(kind) if isinstance(kind, str) else None
    if shape is None:
        return f"waits on {str(kind)[:40]!r}, which no choragos writes"
    return shape(value)


task = fields(
    {"id": task_id, "role": role, "text": text, "state": one_of(_STATES)},
    {"brief": optional(text), "created": moment, "delivered": optional(moment),
     "finished": optional(moment), "report": optional(text),
     "summary": optional(text), "checkpoint": optional(text), "note": optional(text),
     "changes": optional(list_of(mapping)), "changed": optional(mapping),
     "checks": optional(text),
     "rounds": count(), "waiting": optional(waiting),
     "owned": optional(dict_of(text, optional(text)))})

_TOKENS = dict_of(text, dict_of(text, dict_of(text, count())))
# The budget alarms that rang: key (a role, or "[session]") -> the caps then.
_RANG = dict_of(text, list_of(optional(number(float(MAX_COUNT)))))
_INJECTION = fields({"id": count(1), "role": role, "text": text, "what": text,
                     "task": optional(task_id)}, {"sent": flag})
_CLOCK = fields({"role": role, "seconds": seconds, "left": seconds,
                 "since": optional(moment)})
_ROLE_STATE = fields({}, {"restarts_used": count(), "restarts_total": count(),
                          "paused": flag})

# kind -> (required fields, optional fields); "seq", "t" and "kind" are common
_RECORDS: dict[str, tuple[dict[str, Check], dict[str, Check]]] = {
    "session": ({"config": text, "pid": optional(count(1, MAX_PID))}, {}),
    "stop": ({}, {}),
    "task": ({"task": task}, {}),
    "forget": ({"ids": list_of(task_id), "next_number": count(1)}, {}),
    "enqueue": ({"id": count(1), "role": role, "text": text, "what": text,
                 "task": optional(task_id)}, {"front": flag}),
    "inflight": ({"id": count(1), "role": role}, {}),
    "injected": ({"id": count(1), "role": role}, {"requeued": flag}),
    "drop queue": ({"role": role}, {}),
    "role": ({"role": role}, {"restarts_used": count(), "restarts_total": count(),
                              "paused": flag}),
    "clock": ({"action": one_of(frozenset({"start", "stop"})), "task": task_id},
              {"role": role, "seconds": seconds, "left": seconds}),
    "layout": ({"layout": shallow}, {}),
    "tokens": ({"totals": _TOKENS}, {"rang": _RANG}),
    "handoff": ({}, {"done": flag, "config": optional(text), "wait": optional(seconds)}),
    "reload": ({}, {}),
    "alive": ({}, {}),
}
_CLOCK_START = fields({"role": role, "seconds": seconds, "left": seconds})
_COMMON = fields({"kind": text, "seq": count(1), "t": moment})


def record_problem(record: dict) -> str | None:
    """What makes ``record`` something choragos does not write, or None."""
    why = _COMMON(record)
    if why is not None:
        return f"the record {why}"
    shape = _RECORDS.get(record["kind"])
    if shape is None:
        return f"the record is of a kind no choragos writes ({record['kind'][:40]!r})"
    why = fields(*shape)(record)
    if why is None and record["kind"] == "clock" and record["action"] == "start":
        why = _CLOCK_START(record)
    return None if why is None else f"the {record['kind']!r} record {why}"


_SNAPSHOT = fields(
    {"seq": count(), "tasks": dict_of(task_id, task), "next_number": count(1)},
    {"config": text, "pid": optional(count(1, MAX_PID)), "started": moment, "stopped": flag,
     "last_t": moment, "runs": count(), "queues": dict_of(role, list_of(_INJECTION)),
     "next_injection": count(1), "roles": dict_of(role, _ROLE_STATE),
     "clocks": dict_of(task_id, _CLOCK), "layout": optional(shallow),
     "tokens": _TOKENS, "rang": _RANG, "handoff": optional(mapping)})


def snapshot_problem(data: Any) -> str | None:
    """What makes a snapshot's content something choragos does not write, or None."""
    why = _SNAPSHOT(data)
    return None if why is None else f"the snapshot {why}"


def image_problem(tasks: dict[str, dict]) -> str | None:
    """What does not add up in the folded state: a task filed under another id."""
    for key, item in tasks.items():
        if item["id"] != key:
            return f"task {key} is filed under the id {item['id']}"
    return None
