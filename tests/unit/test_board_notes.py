"""Board: notes added to a task where it lives (on the board or in the
archive), and a refused request's tasks taken back, ids included."""

from __future__ import annotations

from choragos.board.tasks import KEEP_RESOLVED, Board, TaskState


def make_board() -> Board:
    ticks = iter(range(100, 100_000))
    return Board(clock=lambda: float(next(ticks)))


def test_a_note_on_a_live_task_shows_on_the_board() -> None:
    board = make_board()
    task = board.create("coder", "fix it")
    noted = board.annotate(task.id, checkpoint="refs/choragos/checkpoints/100-T1")
    assert noted.checkpoint == "refs/choragos/checkpoints/100-T1"
    assert board.get(task.id) == noted
    assert [row["checkpoint"] for row in board.snapshot()] == [noted.checkpoint]
    assert (noted.id, noted.text, noted.state) == (task.id, "fix it", TaskState.QUEUED)


def test_a_note_on_an_archived_task_keeps_it_archived() -> None:
    board = make_board()
    first = board.create("coder", "the oldest")
    board.move(first.id, TaskState.DELIVERED)
    board.move(first.id, TaskState.DONE)
    for n in range(KEEP_RESOLVED):
        task = board.create("coder", f"task {n}")
        board.move(task.id, TaskState.DELIVERED)
        board.move(task.id, TaskState.DONE)
    assert first.id in board.archive  # pushed out by the newer ones
    changes = ({"path": "a.txt", "status": "modified"},)
    noted = board.annotate(first.id, changes=changes)
    assert board.archive[first.id] == noted and first.id not in board.tasks
    assert first.id not in [row["id"] for row in board.snapshot()]
    archived = {row["id"]: row for row in board.snapshot(archived=True)}
    assert archived[first.id]["changes"] == changes


def test_forgetting_a_refused_request_gives_its_ids_back() -> None:
    board = make_board()
    kept = board.create("coder", "kept")
    refused = [board.create("coder", "a"), board.create("reviewer", "b")]
    board.forget([task.id for task in refused])
    assert list(board.tasks) == [kept.id]
    assert board.create("coder", "next").id == "T2"  # the refused ids are reused


def test_forgetting_a_task_that_is_not_the_newest_keeps_the_numbering() -> None:
    board = make_board()
    older = board.create("coder", "older")
    board.create("coder", "newer")
    board.forget([older.id])
    assert list(board.tasks) == ["T2"]
    assert board.create("coder", "next").id == "T3"  # never a second T2


def test_forgetting_the_newest_task_gives_back_exactly_its_id() -> None:
    board = make_board()
    for text in ("a", "b", "c"):
        board.create("coder", text)
    board.forget(["T3"])
    assert board.create("coder", "again").id == "T3"


def test_forgetting_an_id_not_on_the_board_changes_nothing() -> None:
    board = make_board()
    board.create("coder", "kept")
    board.forget(["T7"])
    assert list(board.tasks) == ["T1"] and board.create("coder", "next").id == "T2"


def test_putting_back_a_task_undoes_a_change_live_or_archived() -> None:
    board = make_board()
    task = board.create("coder", "fix it")
    board.move(task.id, TaskState.DELIVERED)
    board.put_back(task)  # live: the earlier version replaces the later one
    assert board.get(task.id) == task and board.snapshot()[0]["state"] == "queued"
    board.archive[task.id] = board.tasks.pop(task.id)  # as compaction leaves it
    board.put_back(task)
    assert task.id in board.tasks and task.id not in board.archive
