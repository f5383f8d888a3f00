"""Merges and holds, table-driven with a recording port: what becomes of
finished work once its checks are through, and of work held for a person."""

from __future__ import annotations

import pytest

from choragos.actors.aftercare import MergeWork
from choragos.actors.holds import Holds
from choragos.actors.mergeflow import MergeFlow
from choragos.board.tasks import TaskState
from choragos.config.model import RoleSpec
from choragos.session import news
from tests.conftest import Told
from tests.unit.policyport import RecordingPort, core_state, delivered


def gates(tmp_path, **coder):
    state = core_state(tmp_path, RoleSpec(name="coder", command="x", **coder))
    state.aftercare = Told()
    state.trees = {"coder": tmp_path / "tree"}
    port = RecordingPort(state)
    merges = MergeFlow(port, state)
    return merges, Holds(port, state, merges), port, state


@pytest.mark.parametrize(("coder", "unmerged", "events", "says", "merging"), [
    ({}, True, [], "T1 done.", False),
    ({"worktree": True}, False, [], "Nothing to merge.", False),
    ({"worktree": True, "merge": "manual"}, True, ["merge left"], "not merged", False),
    ({"worktree": True, "merge": "never"}, True, ["merge left"], "not merged", False),
    ({"worktree": True, "merge": "auto"}, True, [], "Merging choragos/coder", True),
    ({"worktree": True, "merge": "gate"}, True, ["merge diff failed", "merge gated"],
     "waits at a merge gate", False),
], ids=["in the main tree", "nothing to merge", "manual", "never", "auto", "gated"])
def test_checked_work_is_passed_on_with_what_becomes_of_its_branch(
        tmp_path, coder, unmerged, events, says, merging):
    merges, _, port, state = gates(tmp_path, **coder)
    task = delivered(state)
    merges.pass_on(task, "T1 done.", unmerged, "done")
    assert [args[0] for args, _ in port.named("event")] == events
    (role, line, kind, _), _ = port.named("enqueue")[-1]
    assert (role, kind) == ("lead", "report") and says in line
    assert bool(state.aftercare.told) is merging
    if merging:
        assert isinstance(state.aftercare.told[0], MergeWork)
    assert (task.id in state.merging.gates) is ("merge gated" in events)


def test_a_failed_work_is_reported_as_it_is_not_merged(tmp_path):
    merges, _, port, state = gates(tmp_path, worktree=True, merge="auto")
    task = delivered(state)
    merges.pass_on(task, "T1 failed.", True, "failed")
    assert port.kinds() == ["enqueue"] and state.aftercare.told == []


@pytest.mark.parametrize(("action", "state_after", "told"), [
    ("approve", TaskState.DONE, "report"),
    ("reject", TaskState.FAILED, "notice"),
])
def test_held_work_goes_on_or_fails_as_the_operator_decides(tmp_path, action, state_after,
                                                            told):
    _, holds, port, state = gates(tmp_path)
    task = delivered(state)
    holds.hold(task, "owner", "coder changed OWNED.md", "T1 done.", False)
    assert task.id in holds.listing()[0]["id"]
    opened = [args[0] for args, _ in port.named("publish")
              if isinstance(args[0], news.GateOpened)]
    assert opened and opened[0].gate.kind == "owner"
    assert state.board.get(task.id).waiting["kind"] == "owner"  # a resume finds it
    ack = holds.decision({"id": task.id, "action": action, "reason": "no"})
    assert ack["status"] == "ok" and state.holds == {}
    assert state.board.get(task.id).state is state_after
    assert port.named("enqueue")[-1][0][2] == told


def test_a_restored_hold_opens_the_same_gate_again(tmp_path):
    _, holds, port, state = gates(tmp_path)
    task = delivered(state)
    holds.hold(task, "judge", "no verdict", "T1 done.", False)
    first = next(args[0] for args, _ in port.named("publish")
                 if isinstance(args[0], news.GateOpened))
    state.holds.clear()
    holds.restore(state.board.get(task.id), state.board.get(task.id).waiting,
                  first.gate.created)
    again = [args[0] for args, _ in port.named("publish")
             if isinstance(args[0], news.GateOpened)][-1]
    assert {k: again.gate.as_dict()[k] for k in ("kind", "label", "diff")} == {
        k: first.gate.as_dict()[k] for k in ("kind", "label", "diff")}
