"""After a stop or a crash, "no session" names ``serve --resume`` when there is
a state to resume: a plain ``serve`` would keep its open tasks aside."""

from __future__ import annotations

from pathlib import Path

from choragos.board import journal
from choragos.board.journal import Journal
from choragos.session.resume import left_open, resume_hint, with_resume_hint
from choragos.ui.attach import Client
from tests.unit.test_journal import task

NOT_FOUND = "no choragos session is running (socket /s not found); start one with `choragos serve`"
REFUSED = ("connection refused: the session at /s is not answering (it may have crashed; "
           "`choragos serve` starts a new one)")


def saved(workdir: Path, *tasks: dict) -> Path:
    j = Journal(journal.state_dir(workdir))
    for one in tasks:
        j.append("task", task=one)
    j.close()
    return workdir


def test_no_state_or_an_empty_one_leaves_the_advice_as_it_was(tmp_path: Path) -> None:
    assert resume_hint(tmp_path) is None
    assert with_resume_hint(NOT_FOUND, tmp_path) == NOT_FOUND
    assert with_resume_hint(NOT_FOUND, saved(tmp_path)) == NOT_FOUND  # the next serve drops it
    assert with_resume_hint(NOT_FOUND, None) == NOT_FOUND


def test_a_saved_state_turns_start_a_new_one_into_resume_it(tmp_path: Path) -> None:
    saved(tmp_path, task("T1", "done"), task("T2", "gated"))
    hint = ("the last session here is saved (2 tasks, 1 open): `choragos serve --resume` "
            "carries it on; a plain `choragos serve` starts afresh and keeps it aside")
    assert resume_hint(tmp_path) == hint
    assert with_resume_hint(NOT_FOUND, tmp_path) == \
        f"no choragos session is running (socket /s not found); {hint}"
    assert with_resume_hint(REFUSED, tmp_path) == \
        f"connection refused: the session at /s is not answering; {hint}"


def test_attach_without_a_session_names_the_resume(tmp_path: Path) -> None:
    saved(tmp_path, task("T1", "delivered"))
    said = Client(tmp_path / "x.ui.sock", False, tmp_path)._not_running()
    assert "(1 task, 1 open): `choragos serve --resume` carries it on" in said
    assert "start one with" not in said


def test_shutdown_names_the_open_tasks_and_the_resume() -> None:
    from choragos.board.tasks import Task, TaskState

    def made(n: int, state: TaskState) -> Task:
        return Task(id=f"T{n}", role="coder", text="x", state=state)

    assert left_open([made(1, TaskState.DONE)]) == {}
    many = [made(n, TaskState.DELIVERED) for n in range(1, 8)]
    assert left_open(many) == {"message": "7 tasks still open (T1, T2, T3, T4, T5, …); "
                                          "`choragos serve --resume` carries them on"}
