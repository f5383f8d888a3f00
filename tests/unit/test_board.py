import pytest

from choragos.board.tasks import Board, BoardError, TaskState


def make_board():
    ticks = iter(range(100, 10_000))
    return Board(clock=lambda: float(next(ticks)))


def test_ids_are_sequential_and_unique():
    board = make_board()
    ids = [board.create("coder", f"task {n}").id for n in range(5)]
    assert ids == ["T1", "T2", "T3", "T4", "T5"]


def test_happy_path_records_times():
    board = make_board()
    task = board.create("coder", "Add retry\nwith details")
    assert task.label == "Add retry"
    board.move(task.id, TaskState.DELIVERED)
    done = board.move(task.id, TaskState.DONE, summary="ok")
    assert done.delivered is not None and done.finished > done.delivered
    assert not done.is_open
    row = board.snapshot()[0]
    assert row["state"] == "done" and row["duration"] == done.finished - done.delivered


def test_gate_then_reject():
    board = make_board()
    task = board.create("release", "ship it")
    board.move(task.id, TaskState.GATED)
    rejected = board.move(task.id, TaskState.REJECTED, note="not today")
    assert rejected.note == "not today"


@pytest.mark.parametrize("path", [
    [TaskState.DONE],
    [TaskState.GATED, TaskState.DELIVERED],
    [TaskState.DELIVERED, TaskState.DONE, TaskState.FAILED],
    [TaskState.GATED, TaskState.REJECTED, TaskState.QUEUED],
])
def test_illegal_transitions_are_refused(path):
    board = make_board()
    task = board.create("coder", "x")
    with pytest.raises(BoardError):
        for state in path:
            board.move(task.id, state)


def test_late_report_still_resolves_timed_out_and_failed():
    board = make_board()
    for bad in (TaskState.TIMED_OUT, TaskState.FAILED):
        task = board.create("coder", "x")
        board.move(task.id, TaskState.DELIVERED)
        board.move(task.id, bad)
        assert board.move(task.id, TaskState.DONE).state is TaskState.DONE


def test_unknown_id():
    with pytest.raises(BoardError, match="no task T9"):
        make_board().get("T9")


def test_open_for_role():
    board = make_board()
    a = board.create("coder", "a")
    board.create("reviewer", "b")
    c = board.create("coder", "c")
    board.move(c.id, TaskState.DELIVERED)
    board.move(c.id, TaskState.DONE)
    assert [t.id for t in board.open_for("coder")] == [a.id]


def test_resolved_tasks_past_the_limit_move_to_the_archive() -> None:
    from choragos.board.tasks import KEEP_RESOLVED

    board = Board(clock=lambda: 1.0)
    failed = board.create("coder", "will fail")
    board.move(failed.id, TaskState.DELIVERED)
    board.move(failed.id, TaskState.FAILED)
    for _ in range(KEEP_RESOLVED + 5):
        task = board.create("coder", "x")
        board.move(task.id, TaskState.DELIVERED)
        board.move(task.id, TaskState.DONE)
    assert len(board.archive) == 5 and "T2" in board.archive
    assert failed.id in board.tasks  # a failed task may still get its late work-done
    assert board.get("T2").state is TaskState.DONE
    assert len(board.snapshot()) == KEEP_RESOLVED + 1
    assert [t["id"] for t in board.snapshot(archived=True)][:3] == ["T1", "T2", "T3"]
    assert board.archived_counts() == [{"role": "coder", "state": "done", "count": 5}]
    board.put_back(board.get("T2"))
    assert "T2" in board.tasks and "T2" not in board.archive
    assert board.archived_counts() == [{"role": "coder", "state": "done", "count": 4}]


def test_the_live_board_counts_its_unsettled_tasks_whoever_writes_it():
    """The count the guardrails ask instead of walking the board: after
    each kind of write it is what a walk would say."""
    from choragos.board.tasks import KEEP_RESOLVED, SETTLED_STATES, Board, LiveTasks

    def recount(b: Board) -> int:
        return sum(t.state not in SETTLED_STATES for t in dict.values(b.tasks))

    board = Board()
    checks = []
    ids = [board.create("coder", f"t{n}").id for n in range(KEEP_RESOLVED + 10)]
    checks.append(board.tasks.unsettled == recount(board) == len(ids))
    for task_id in ids[:-5]:  # past KEEP_RESOLVED: the oldest go to the archive
        board.move(task_id, TaskState.DELIVERED)
        board.move(task_id, TaskState.DONE)
    checks.append(board.tasks.unsettled == recount(board) == 5)
    before = board.get(ids[-1])
    board.move(ids[-1], TaskState.FAILED)
    checks.append(board.tasks.unsettled == recount(board) == 4)
    board.put_back(before)  # a refused request's undo
    board.annotate(ids[-1], note="x")
    checks.append(board.tasks.unsettled == recount(board) == 5)
    board.put_back(board.archive[ids[0]])  # back from the archive, settled
    board.forget([ids[-1]])
    checks.append(board.tasks.unsettled == recount(board) == 4)
    board.tasks.pop(ids[-2])
    del board.tasks[ids[-3]]
    checks.append(board.tasks.unsettled == recount(board) == 2)
    copied = Board(tasks=dict(board.tasks))  # a plain dict given is counted too
    checks.append(isinstance(copied.tasks, LiveTasks) and copied.tasks.unsettled == 2)
    board.tasks.clear()
    checks.append(board.tasks.unsettled == 0)
    assert all(checks), checks
