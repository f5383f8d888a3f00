"""The delivery queues and fresh contexts, table-driven: no actor, no PTY.

A role's handle only records what it is told; the effects port records the
journal, events and hooks the policy asked for."""

from __future__ import annotations

from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors.delivery import Delivery
from choragos.actors.fresh import FreshContexts
from choragos.actors.guardrails import Guardrails
from choragos.actors.holds import Holds
from choragos.actors.judging import JudgeLoop
from choragos.actors.mergeflow import MergeFlow
from choragos.actors.timeouts import Timeouts
from choragos.board.tasks import TaskState
from choragos.config.model import RoleSpec
from choragos.roles.rolestatus import RoleStatus
from tests.conftest import Told
from tests.unit.policyport import RecordingPort, core_state


def policy(tmp_path, *workers, status="idle"):
    state = core_state(tmp_path, *workers, status=status)
    port = RecordingPort(state)
    merges = MergeFlow(port, state)
    holds = Holds(port, state, merges)
    judge = JudgeLoop(port, state, holds, merges)
    delivery = Delivery(port, state, FreshContexts(port, state), Guardrails(port, state),
                        Timeouts(port, state, judge))
    return delivery, port, state


def injected(state, role="coder"):
    return [msg.injection for msg in state.seats[role].handle.told if isinstance(msg, m.Inject)]


@pytest.mark.parametrize(("status", "lines", "typed", "journal"), [
    ("idle", 1, 1, ["enqueue", "inflight"]),
    ("idle", 2, 1, ["enqueue", "inflight", "enqueue"]),
    ("working", 2, 0, ["enqueue", "enqueue"]),
    ("booting", 1, 0, ["enqueue"]),
], ids=["ready", "one at a time", "busy", "booting"])
def test_a_line_is_typed_only_into_a_ready_role_and_one_at_a_time(tmp_path, status, lines,
                                                                   typed, journal):
    delivery, port, state = policy(tmp_path, status=status)
    for n in range(lines):
        delivery.enqueue("lead", f"notice {n}", "notice")
    assert len(injected(state, "lead")) == typed
    assert [args[0] for args, _ in port.named("journal")] == journal
    seat = state.seats["lead"]
    assert len(seat.queue) == lines - typed and (seat.in_flight is not None) == bool(typed)


def test_a_line_goes_out_only_once_its_record_is_on_disk(tmp_path):
    delivery, port, _state = policy(tmp_path)
    delivery.enqueue("lead", "hello", "notice")
    assert port.kinds() == ["journal", "journal", "tell_when_synced"]


def outcome(state, injection, **fields):
    return m.InjectionOutcome(injection.role, injection, **{"ok": True, **fields})


@pytest.mark.parametrize(("fields", "events", "queued", "alerts"), [
    ({}, ["injection"], 0, 0),
    ({"untouched": True, "ok": False}, ["injection held"], 1, 0),
    ({"ok": False, "final": False}, ["injection retry"], 0, 0),
    ({"ok": False, "detail": "no echo"}, ["injection", "injection requeued"], 1, 0),
    ({"ok": False, "left_in_input": True}, ["injection", "line not taken"], 0, 1),
], ids=["typed", "pane changed", "retrying", "not shown: one more round", "left in input"])
def test_what_happens_to_a_notice_after_its_outcome(tmp_path, fields, events, queued, alerts):
    delivery, port, state = policy(tmp_path)
    delivery.enqueue("lead", "hello", "notice")
    sent = injected(state, "lead")[0]
    port.calls.clear()
    state.seats["lead"].view = m.RoleView("lead", RoleStatus.WORKING)  # nothing typed next
    delivery.outcome(outcome(state, sent, **fields))
    assert [args[0] for args, _ in port.named("event")] == events
    assert len(state.seats["lead"].queue) == queued
    assert len(port.named("alert")) == alerts


def test_a_notice_missed_twice_is_the_operators(tmp_path):
    delivery, port, state = policy(tmp_path)
    delivery.enqueue("lead", "hello", "notice")
    for _ in range(2):
        sent = injected(state, "lead")[-1]
        delivery.outcome(outcome(state, sent, ok=False, detail="no echo"))
    assert [args[0] for args, _ in port.named("event")][-1] == "line not taken"
    assert port.named("alert")[0][0][:2] == ("on_input", "lead")
    assert state.rounds == {}


@pytest.mark.parametrize(("fields", "state_after", "queued"), [
    ({}, TaskState.DELIVERED, 0),
    ({"ok": False, "submitted": True, "detail": "exited"}, TaskState.FAILED, 0),
    ({"ok": False, "detail": "exited"}, TaskState.QUEUED, 1),
], ids=["delivered", "submitted, then cut off", "never submitted"])
def test_a_task_cut_off_by_an_exit_is_typed_again_only_if_never_submitted(
        tmp_path, fields, state_after, queued):
    delivery, _port, state = policy(tmp_path)
    task = state.board.create("coder", "build it")
    delivery.enqueue("coder", "T1 line", "task", task.id)
    sent = injected(state)[0]
    state.seats["coder"].view = m.RoleView("coder", RoleStatus.EXITED)  # it died meanwhile
    delivery.outcome(outcome(state, sent, **fields))
    assert state.board.get(task.id).state is state_after
    assert len(state.seats["coder"].queue) == queued


def test_a_fresh_role_is_restarted_before_its_second_task(tmp_path):
    delivery, port, state = policy(tmp_path, RoleSpec(name="coder", command="x", fresh=True))
    seat = state.seats["coder"]
    first, second = (state.board.create("coder", text) for text in ("one", "two"))
    delivery.enqueue("coder", "first", "task", first.id)
    delivery.outcome(outcome(state, injected(state)[0]))
    delivery.enqueue("coder", "second", "task", second.id)
    assert [type(msg) for msg in seat.handle.told] == [m.Inject, m.Restart]
    assert [i.task_id for i in seat.queue] == [second.id] and seat.view.ready is False
    assert "event:fresh restart" in port.kinds()


def test_a_brief_held_back_from_a_busy_agent_is_said_and_nothing_retried(tmp_path, caplog):
    delivery, port, state = policy(tmp_path, status="booting")
    boot = m.Injection(id=0, role="lead", text="brief", kind="boot")
    delivery.outcome(m.InjectionOutcome("lead", boot, False, "not briefed: still busy",
                                        untouched=True))
    assert port.kinds() == ["event:boot held", "alert"]
    assert port.named("alert")[0][0] == ("on_input", "lead", None)
    assert "lead is not briefed yet (not briefed: still busy)" in caplog.text
    assert not injected(state, "lead") and not state.seats["lead"].queue


@pytest.mark.parametrize(("status", "alerts"), [("idle", 1), ("exited", 0)],
                         ids=["live: it waits unbriefed", "gone: its exit says so"])
def test_a_brief_cut_off_by_an_exit_or_a_stop_rings_no_input_alarm(tmp_path, caplog, status,
                                                                   alerts):
    """Every stop of a session while a role was being briefed ran
    ``on_input`` and warned that the role "did not take its brief": the
    role is gone, not waiting for a person.  The event stays."""
    delivery, port, _state = policy(tmp_path, status=status)
    boot = m.Injection(id=0, role="lead", text="brief", kind="boot")
    delivery.outcome(m.InjectionOutcome("lead", boot, False, "lead was stopped mid-injection"))
    assert port.kinds() == ["event:boot injection"] + ["alert"] * alerts
    assert ("did not take its brief" in caplog.text) is bool(alerts)


def test_lines_held_by_a_quiet_busy_agent_are_said_once_per_hold(tmp_path, caplog):
    """A role whose screen went quiet but whose agent kept wanting the CPU
    takes no line: with lines waiting, the operator hears of it once per
    hold (as of a held brief), and nothing is typed."""
    delivery, port, state = policy(tmp_path, status="working")
    seat = state.seats["lead"]
    seat.view = replace(seat.view, busy_held=5.0, detail="quiet, but still busy")
    delivery.pump(seat)  # nothing waits: nothing to say
    assert port.kinds() == []
    delivery.enqueue("lead", "a report", "report")
    delivery.enqueue("lead", "another", "report")
    delivery.pump(seat)
    assert [k for k in port.kinds() if k != "journal"] == ["event:lines held", "alert"]
    assert port.named("alert")[0][0] == ("on_input", "lead", None)
    assert "1 line for lead waiting (quiet, but still busy)" in caplog.text
    assert not injected(state, "lead")
    seat.view = replace(seat.view, busy_held=40.0)  # a new hold, after output
    delivery.pump(seat)
    assert [k for k in port.kinds() if k != "journal"].count("event:lines held") == 2
    seat.view = replace(seat.view, busy_held=None, status=RoleStatus.IDLE, ready=True)
    delivery.pump(seat)
    assert [i.text for i in injected(state, "lead")] == ["a report"]


def checkpointing(tmp_path, status="idle"):
    delivery, port, state = policy(tmp_path, status=status)
    state.checkpointer = Told()
    return delivery, port, state


def snapshots(state) -> list[str]:
    return [msg.task_id for msg in state.checkpointer.told if isinstance(msg, m.Snapshot)]


def test_a_task_is_checkpointed_at_its_turn_and_typed_only_after(tmp_path):
    """Queued behind another, a task's snapshot is asked for only when its
    turn comes, and nothing is typed into the role until it is answered."""
    delivery, port, state = checkpointing(tmp_path)
    first, second = (state.board.create("coder", text) for text in ("one", "two"))
    delivery.enqueue("coder", "first", "task", first.id)
    delivery.enqueue("coder", "second", "task", second.id)
    assert snapshots(state) == ["T1"] and injected(state) == []
    delivery.checkpointed(m.CheckpointDone("T1", ref="refs/choragos/checkpoints/1-T1"))
    assert [i.task_id for i in injected(state)] == ["T1"]
    assert state.board.get("T1").checkpoint == "refs/choragos/checkpoints/1-T1"
    assert state.board.get("T2").checkpoint is None and snapshots(state) == ["T1"]
    delivery.outcome(outcome(state, injected(state)[0]))
    assert snapshots(state) == ["T1", "T2"]  # T1 typed: T2's turn
    delivery.checkpointed(m.CheckpointDone("T2", ref="refs/choragos/checkpoints/2-T2"))
    assert [i.task_id for i in injected(state)] == ["T1", "T2"]
    assert "event:checkpoint" in port.kinds()


def test_a_checkpoint_whose_turn_passed_is_taken_again(tmp_path):
    """The role turned busy while its snapshot was taken: that one is not the
    task's (the tree may change before the task goes out)."""
    delivery, _port, state = checkpointing(tmp_path)
    task = state.board.create("coder", "one")
    delivery.enqueue("coder", "first", "task", task.id)
    state.seats["coder"].view = m.RoleView("coder", RoleStatus.WORKING)
    delivery.checkpointed(m.CheckpointDone("T1", ref="refs/choragos/checkpoints/1-T1"))
    assert injected(state) == [] and state.board.get("T1").checkpoint is None
    state.seats["coder"].view = m.RoleView("coder", RoleStatus.IDLE, ready=True)
    delivery.pump(state.seats["coder"])
    assert snapshots(state) == ["T1", "T1"]
    delivery.checkpointed(m.CheckpointDone("T1", ref="refs/choragos/checkpoints/2-T1"))
    assert state.board.get("T1").checkpoint == "refs/choragos/checkpoints/2-T1"
    # Held after all (the pane changed): taken again at the next turn.
    delivery.outcome(outcome(state, injected(state)[0], ok=False, untouched=True))
    assert state.board.get("T1").checkpoint is None
    delivery.pump(state.seats["coder"])  # its next ready view
    assert snapshots(state) == ["T1", "T1", "T1"]


def test_a_failed_checkpoint_lets_the_task_go_unprotected_once(tmp_path):
    delivery, port, state = checkpointing(tmp_path)
    task = state.board.create("coder", "one")
    delivery.enqueue("coder", "first", "task", task.id)
    delivery.checkpointed(m.CheckpointDone("T1", error="No space left on device"))
    assert [i.task_id for i in injected(state)] == ["T1"]
    # None on the board, as for a task no checkpoint was taken for.
    assert state.board.get("T1").checkpoint is None and "event:checkpoint failed" in port.kinds()
    delivery.outcome(outcome(state, injected(state)[0], ok=False, untouched=True))
    delivery.pump(state.seats["coder"])
    assert snapshots(state) == ["T1"]  # not tried again


def test_owned_files_are_fingerprinted_at_the_tasks_turn(tmp_path):
    """What a task behind another finds of the owned files is the tree at its
    turn: the owner's change before it is not laid at its door."""
    delivery, _port, state = policy(tmp_path, RoleSpec(name="coder", command="x"),
                                    RoleSpec(name="docs", command="x", owns_files=("README",)))
    (tmp_path / "README").write_text("first\n")
    first, second = (state.board.create("coder", text) for text in ("one", "two"))
    delivery.enqueue("coder", "first", "task", first.id)
    delivery.enqueue("coder", "second", "task", second.id)
    assert state.board.get("T1").owned is not None and state.board.get("T2").owned is None
    (tmp_path / "README").write_text("the owner's, meanwhile\n")
    delivery.outcome(outcome(state, injected(state)[0]))
    assert state.board.get("T2").owned != state.board.get("T1").owned


def test_a_turn_missed_takes_the_owned_files_fingerprints_again(tmp_path):
    """Fingerprints kept on a task stay (a resumed hand-back keeps those of
    the turn before the kill); a line put back untyped has them taken again."""
    delivery, _port, state = policy(tmp_path, RoleSpec(name="coder", command="x"),
                                    RoleSpec(name="docs", command="x", owns_files=("README",)))
    (tmp_path / "README").write_text("first\n")
    task = state.board.create("coder", "one")
    delivery.enqueue("coder", "first", "task", task.id)
    taken = state.board.get("T1").owned
    assert list(taken) == ["README"] and taken["README"]
    delivery.outcome(outcome(state, injected(state)[0], ok=False, untouched=True))
    assert state.board.get("T1").owned is None
    (tmp_path / "README").write_text("changed before its next turn\n")
    delivery.pump(state.seats["coder"])
    assert state.board.get("T1").owned["README"] != taken["README"]
