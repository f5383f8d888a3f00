"""The news carry typed values: a task is the board's frozen Task, a gate a
GateView of one; each gives the row the wire, the deck and the page read."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from choragos.board.tasks import Task, TaskState
from choragos.session import news
from choragos.web.news import as_event

TASK = Task("T3", "coder", "Add retry", state=TaskState.GATED, created=5.0)


def row(values: dict) -> dict:
    """A row without what depends on the moment it is read."""
    return {key: value for key, value in values.items() if key not in ("age", "duration")}


def test_an_approve_gate_is_the_tasks_row():
    view = news.GateView(TASK)
    assert view.id == "T3"
    assert row(view.as_dict()) == row(TASK.as_dict())
    assert "kind" not in view.as_dict()


def test_a_merge_gate_adds_what_waits_and_keeps_an_empty_commit():
    view = news.GateView(TASK, "merge", diff=".choragos/diffs/T3.diff", branch="choragos/coder",
                         commit="", label="merge choragos/coder: Add retry", created=9.0)
    got = view.as_dict()
    assert {key: got[key] for key in ("kind", "diff", "branch", "commit", "label", "created")} == {
        "kind": "merge", "diff": ".choragos/diffs/T3.diff", "branch": "choragos/coder",
        "commit": "", "label": "merge choragos/coder: Add retry", "created": 9.0}
    assert got["id"] == "T3" and got["state"] == "gated"


def test_the_web_page_gets_the_rows():
    kind, data = as_event(news.TaskChanged(TASK))
    assert kind == "task" and row(data) == row(TASK.as_dict())
    kind, data = as_event(news.GateOpened(news.GateView(TASK, "judge", diff="f.md")))
    assert kind == "gate-opened" and (data["id"], data["kind"], data["diff"]) == (
        "T3", "judge", "f.md")


def test_tasks_gates_and_usage_travel_as_typed_values_not_dicts():
    hints = {cls: typing.get_type_hints(cls)
             for cls in (news.TaskChanged, news.GateOpened, news.TokensChanged)}
    assert hints[news.TaskChanged]["task"] is Task
    assert hints[news.GateOpened]["gate"] is news.GateView
    assert dataclasses.is_dataclass(news.GateView)
    assert news.GateView.__dataclass_params__.frozen
    assert typing.get_args(hints[news.TokensChanged]["usages"])[1] is news.RoleUsage


def test_usage_travels_typed_and_gives_back_the_status_row():
    rows = {"coder": {"tokens": {"input": 5, "output": 2}, "cost": 0.1, "estimated": ["mystery"],
                      "budget": {"usd": 1.0, "tokens": None, "over": False}},
            "tester": {"tokens": {"input": 0}, "cost": None, "estimated": [], "budget": None}}
    usages = news.role_usages(rows)
    assert usages["coder"].estimated == ("mystery",) and usages["tester"].budget is None
    assert {role: usage.as_dict() for role, usage in usages.items()} == rows
    kind, data = as_event(news.TokensChanged(usages))
    assert kind == "tokens" and data == rows


def test_an_event_travels_typed_read_only_and_gives_back_its_record():
    record = {"ts": "2026-12-05T08:00:00Z", "t": 1.5, "event": "delegate", "task": "T3",
              "role": "coder"}
    item = news.EventLogged.of(record)
    assert (item.event, item.at, item.fields["task"]) == ("delegate", 1.5, "T3")
    assert item.as_dict() == record
    assert as_event(item) == ("event", record)
    record["task"] = "T9"  # the log's own dict changing later changes no news
    assert item.fields["task"] == "T3"
    with pytest.raises(TypeError):
        item.fields["task"] = "T4"  # type: ignore[index]


def test_marks_travel_read_only():
    marks = {"coder": ["over budget"]}
    item = news.MarksChanged.of(marks)
    marks["coder"].append("stalled")
    assert dict(item.marks) == {"coder": ("over budget",)}
    assert as_event(item) == ("marks", {"coder": ["over budget"]})
