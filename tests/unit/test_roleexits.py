"""What becomes of an exited role's tasks, the core's policy alone (a recording port)."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

from choragos.actors import messages as m
from choragos.actors.roleexits import RoleExits
from choragos.board.tasks import Task, TaskState
from choragos.terminal.restartpolicy import ExitStatus


class Port:
    def __init__(self, seat) -> None:
        self.seat, self.said = seat, []

    def event(self, event: str, **fields) -> None:
        self.said.append(event)

    def enqueue(self, role, text, kind, task_id=None, front=False) -> None:
        self.seat.queue.appendleft(m.Injection(len(self.said), role, text, kind, task_id))
        self.said.append(f"enqueue {task_id}")

    def fail_task(self, task, reason) -> None:
        self.said.append(f"fail {task.id}")


def _exits():
    seat = SimpleNamespace(queue=deque())
    task = Task("T1", "coder", "the task", state=TaskState.DELIVERED)
    state = SimpleNamespace(seats={"coder": seat}, start_role="orchestrator",
                            board=SimpleNamespace(open_for=lambda role: [task]))
    port = Port(seat)
    return RoleExits(port, state), port


LOST = ExitStatus(code=255, cause="the connection to box (me@box) was lost")


def test_a_task_lost_with_its_connection_is_typed_again_once_however_often_it_exits():
    exits, port = _exits()
    for _ in range(3):  # lost, then two starts that could not connect
        exits.work_of(m.RoleExited("coder", LOST, True, "restart 1 of 3", redeliver=True))
    assert port.said.count("enqueue T1") == 1, port.said
    assert len(port.seat.queue) == 1


def test_a_task_of_a_role_that_exits_for_good_is_failed():
    exits, port = _exits()
    exits.work_of(m.RoleExited("coder", ExitStatus(code=3), False, "no restart policy"))
    assert port.said == ["fail T1"]
