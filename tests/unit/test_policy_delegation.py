"""The delegation policy, table-driven with a recording port: where a new
task goes, what the approve gate decides, and what a refusal leaves."""

from __future__ import annotations

import os

import pytest

from choragos.actors import messages as m
from choragos.actors.corejournal import CoreJournal
from choragos.actors.delegation import Delegation
from choragos.actors.guardrails import Guardrails
from choragos.actors.holds import Holds
from choragos.actors.limitflow import LimitFlow
from choragos.actors.mergeflow import MergeFlow
from choragos.board.tasks import TaskState
from choragos.config.model import RoleSpec
from choragos.roles import briefs
from choragos.roles.rolestatus import RoleStatus
from choragos.session import news
from tests.conftest import Told
from tests.unit.policyport import RecordingPort, core_state


def policy(tmp_path, checkpoints=False, **coder):
    state = core_state(tmp_path, RoleSpec(name="coder", command="x", **coder))
    (tmp_path / ".choragos" / "tasks").mkdir(parents=True)
    state.checkpointer = Told() if checkpoints else None
    port = RecordingPort(state)
    guard = Guardrails(port, state)
    merges = MergeFlow(port, state)
    holds = Holds(port, state, merges)
    return Delegation(port, state, CoreJournal(port, state), guard,
                      LimitFlow(port, state, guard), merges, holds), port, state


@pytest.mark.parametrize(("coder", "checkpoints", "effects", "state_after"), [
    # The event logged, then the task itself: on every board while it waits.
    ({}, False, ["publish", "publish", "enqueue"], TaskState.QUEUED),
    ({}, True, ["publish", "publish", "enqueue"], TaskState.QUEUED),
    ({"approve": True}, False,
     ["publish", "publish", "move", "event:delegate gated", "publish", "alert"],
     TaskState.GATED),
], ids=["straight to its queue", "checkpoints on", "at the approve gate"])
def test_a_new_task_goes_to_its_gate_or_on_to_its_queue(tmp_path, coder, checkpoints,
                                                        effects, state_after):
    delegation, port, state = policy(tmp_path, checkpoints, **coder)
    ack = delegation.command({"to": ["coder"], "task": "build it"})
    assert ack["status"] == "ok" and ack["tasks"][0]["state"] == str(state_after)
    assert port.kinds() == effects
    shown = port.named("publish")[1][0][0]
    assert isinstance(shown, news.TaskChanged) and shown.task.id == "T1"
    assert (tmp_path / ".choragos" / "tasks" / "T1.md").exists()
    # The checkpoint is the delivery's, when the task's turn comes: none yet.
    assert (state.checkpointer.told if checkpoints else []) == []


@pytest.mark.parametrize(("action", "state_after", "then"), [
    ("approve", TaskState.QUEUED, "enqueue"), ("reject", TaskState.REJECTED, "enqueue"),
])
def test_the_operator_decides_a_gated_delegation(tmp_path, action, state_after, then):
    delegation, port, state = policy(tmp_path, approve=True)
    delegation.command({"to": ["coder"], "task": "build it"})
    assert [g["id"] for g in delegation.gate_command({"action": "list"})["gates"]] == ["T1"]
    port.calls.clear()
    ack = delegation.gate_command({"action": action, "id": "T1", "reason": "no"})
    assert ack == {"status": "ok", "id": "T1", "state": str(state_after)}
    assert state.gates == {} and port.kinds()[-1] == then
    role = port.named("enqueue")[-1][0][0]
    assert role == ("coder" if action == "approve" else "lead")
    assert "no delegation T1" in delegation.gate_command({"action": action, "id": "T1"})[
        "error"]


@pytest.mark.parametrize(("request_", "says"), [
    ({"to": ["ghost"], "task": "x"}, "unknown role ghost"),
    ({"to": ["coder"], "task": "x", "require_live": True}, "nothing was delegated"),
], ids=["an unknown role", "a failed role, live required"])
def test_a_refused_delegation_leaves_nothing_behind(tmp_path, request_, says):
    delegation, port, state = policy(tmp_path)
    state.seats["coder"].view = m.RoleView("coder", RoleStatus.FAILED, detail="gone")
    assert says in delegation.command(request_)["error"]
    assert state.board.tasks == {} and port.calls == []


def test_a_delegation_that_cannot_be_written_is_forgotten(tmp_path):
    delegation, port, state = policy(tmp_path)
    (tmp_path / ".choragos" / "tasks").rmdir()
    (tmp_path / ".choragos" / "tasks").write_text("not a directory")
    assert "was not recorded" in delegation.command({"to": ["coder"], "task": "x"})["error"]
    assert state.board.tasks == {} and port.calls == []


def test_a_brief_for_a_role_on_another_host_is_copied_for_it(tmp_path):
    delegation, _port, _state = policy(tmp_path, host="box")
    brief = tmp_path / "notes.md"
    brief.write_text("the details")
    ack = delegation.command({"to": ["coder"], "task": "x", "brief": str(brief)})
    assert ack["status"] == "ok", ack
    tasks = tmp_path / ".choragos" / "tasks"
    assert (tasks / "T1.brief.md").read_text() == "the details"
    assert "Read `.choragos/tasks/T1.brief.md` for the details (a copy of " in (
        tasks / "T1.md").read_text()


@pytest.mark.parametrize("kind", ["fifo", "missing", "too big"])
def test_a_brief_a_remote_role_cannot_get_refuses_the_delegation(tmp_path, kind):
    delegation, port, state = policy(tmp_path, host="box")
    brief = tmp_path / "brief"
    if kind == "fifo":  # opened without blocking: the core's thread is never held
        os.mkfifo(brief)
    elif kind == "too big":
        brief.write_bytes(b"x" * (briefs.BRIEF_COPY_LIMIT + 1))
    error = delegation.command({"to": ["coder"], "task": "x", "brief": str(brief)})["error"]
    assert error.startswith(f"the brief {brief} ") and "coder runs on another host" in error
    assert state.board.tasks == {} and port.calls == []
    assert list((tmp_path / ".choragos" / "tasks").iterdir()) == []


def _queued(delegation, state, text="build it"):
    """A task delegated and its line in its role's queue, as the delivery keeps it."""
    task_id = delegation.command({"to": ["coder"], "task": text})["tasks"][0]["id"]
    state.seats["coder"].queue.append(m.Injection(len(state.seats["coder"].queue) + 1,
                                                  "coder", "line", "task", task_id))
    return task_id


def test_the_operator_cancels_a_task_still_in_its_queue(tmp_path):
    delegation, port, state = policy(tmp_path)
    first, second = _queued(delegation, state), _queued(delegation, state, "the other")
    port.calls.clear()
    ack = delegation.cancel_command({"id": second, "reason": "done by hand"})
    assert ack == {"status": "ok", "id": second, "state": "rejected"}
    assert [i.task_id for i in state.seats["coder"].queue] == [first]
    assert state.board.get(second).note == "cancelled by the operator: done by hand"
    assert port.named("journal")[0][0] == ("injected",)  # out of the journal's queue too
    (role, line, kind, task_id), _ = port.named("enqueue")[-1]
    assert (role, kind, task_id) == ("lead", "notice", second)
    assert "cancelled task T2" in line and "done by hand" in line


def test_a_gated_task_is_cancelled_as_a_rejection(tmp_path):
    delegation, _port, state = policy(tmp_path, approve=True)
    delegation.command({"to": ["coder"], "task": "build it"})
    assert delegation.cancel_command({"id": "T1"})["state"] == "rejected"
    assert state.gates == {}


@pytest.mark.parametrize(("where", "says"), [
    ("typing", "T1 is being typed into coder now: it cannot be taken back"),
    ("delivered", "T1 is already with coder: it cannot be taken back"),
    ("unknown", "no task T9 is on the board"),
])
def test_a_task_already_given_is_not_cancelled(tmp_path, where, says):
    delegation, port, state = policy(tmp_path)
    _queued(delegation, state)
    seat = state.seats["coder"]
    if where == "typing":
        seat.in_flight = seat.queue.popleft()
    elif where == "delivered":
        state.board.move("T1", TaskState.DELIVERED)
    port.calls.clear()
    error = delegation.cancel_command({"id": "T9" if where == "unknown" else "T1"})["error"]
    assert error.startswith(says)
    assert port.calls == [] and state.board.get("T1").state is not TaskState.REJECTED
