"""The board's rows exactly as `choragos board --json` and the deck read them."""

from __future__ import annotations

import time

import pytest

from choragos.board.tasks import Board, BoardError, Task, TaskState


def clock(*times: float):
    ticks = iter(times)
    return lambda: next(ticks)


def test_a_row_holds_every_field_with_age_and_duration():
    board = Board(clock=clock(100.0, 110.0, 150.0, 200.0))
    board.create("coder", "  Fix the build\nthen the docs", brief="/b.md")
    board.move("T1", TaskState.DELIVERED)
    board.move("T1", TaskState.DONE, summary="fixed", report="/r.md")
    assert board.snapshot() == [{
        "id": "T1", "role": "coder", "text": "  Fix the build\nthen the docs",
        "brief": "/b.md", "state": "done", "created": 100.0, "delivered": 110.0,
        "finished": 150.0, "report": "/r.md", "summary": "fixed", "checkpoint": None,
        "note": "", "changes": None, "changed": None, "flagged": None, "checks": "", "rounds": 0,
        "waiting": None, "owned": None,
        "label": "Fix the build", "age": 100.0, "duration": 40.0}]


def test_an_open_row_counts_its_duration_up_to_now():
    board = Board(clock=clock(100.0, 110.5, 130.25))
    board.create("coder", "x")
    board.move("T1", TaskState.DELIVERED)
    row = board.snapshot()[0]
    assert (row["state"], row["finished"], row["age"], row["duration"]) == (
        "delivered", None, 30.25, 19.75)


def test_an_undelivered_row_has_no_duration_and_rounds_its_age():
    task = Task("T1", "coder", "", created=100.0)
    row = task.as_dict(now=100.12345)
    assert row["duration"] is None and row["age"] == 0.123 and row["label"] == ""


def test_labels_are_cut_at_72_characters():
    assert Task("T1", "r", "x" * 72).label == "x" * 72
    assert Task("T1", "r", "y" * 73).label == "y" * 71 + "…"


def test_ids_count_from_one_and_each_task_is_kept():
    board = Board(clock=clock(1.0, 2.0))
    first, second = board.create("a", "one"), board.create("b", "two", brief=None)
    assert (first.id, second.id, board.next_number) == ("T1", "T2", 3)
    assert board.get("T2") == second and second.created == 2.0 and second.role == "b"
    assert second.text == "two" and second.state is TaskState.QUEUED


def test_a_refused_move_names_the_task_and_both_states_and_changes_nothing():
    board = Board(clock=clock(1.0, 2.0))
    board.create("coder", "x")
    with pytest.raises(BoardError) as refused:
        board.move("T1", TaskState.DONE)
    assert str(refused.value) == "task T1 is queued; it cannot become done"
    assert board.get("T1").state is TaskState.QUEUED and board.get("T1").finished is None
    with pytest.raises(BoardError, match=r"^no task T9 on the board$"):
        board.get("T9")


def test_a_move_keeps_a_time_given_by_the_caller():
    board = Board(clock=clock(1.0, 2.0, 3.0))
    board.create("coder", "x")
    assert board.move("T1", TaskState.DELIVERED, delivered=1.5).delivered == 1.5
    assert board.move("T1", TaskState.FAILED, finished=2.5).finished == 2.5


def test_a_row_without_a_given_time_is_aged_by_the_clock_and_rounded_to_milliseconds():
    task = Task("T1", "coder", "x", created=time.time() - 60, delivered=100.00049,
                finished=100.12349)
    row = task.as_dict()
    assert 59 < row["age"] < 3600 and row["duration"] == 0.123
