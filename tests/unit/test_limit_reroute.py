"""Provider limits through the night, with no actor: where ``limit_action =
"reroute"`` sends a limited role's work, a crew held up only by limits, the
operator lifting a hold, and budget alarms a resumed session takes over."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors.guardrails import OVER, SESSION, Guardrails, IdleCheck, rang
from choragos.actors.limitflow import LIMIT_NOTE, REROUTED_NOTE, LimitFlow
from choragos.board.journal import Image, apply
from choragos.board.journalcheck import record_problem
from choragos.config.model import BudgetSettings, RoleSpec
from choragos.gateway.limits import Limit
from choragos.roles.rolestatus import RoleStatus
from tests.unit.policyport import RecordingPort, core_state, delivered


def _crew(tmp_path, *others: tuple[RoleSpec, str], coder: RoleSpec | None = None):
    """A lead, a claude coder with reroute holding a task and one queued, and
    ``others`` (spec, profile), each idle at its prompt."""
    coder = coder or RoleSpec(name="coder", command="x", limit_action="reroute")
    state = core_state(tmp_path, coder, *(spec for spec, _ in others))
    for name, profile in [("lead", "claude"), ("coder", "claude"),
                          *((spec.name, profile) for spec, profile in others)]:
        state.seats[name].view = replace(state.seats[name].view, profile=profile)
    delivered(state)
    queued = state.board.create("coder", "next")
    state.seats["coder"].queue.append(m.Injection(1, "coder", "next", "task", queued.id))
    port = RecordingPort(state)
    guard = Guardrails(port, state)
    return state, port, LimitFlow(port, state, guard), guard, queued


def _limit(limits: LimitFlow, role: str = "coder", wait: float = 3600) -> None:
    limits.seen(role, Limit("usage limit", "anthropic", time.time() + wait))


def _told_lead(port: RecordingPort) -> list[str]:
    return [args[1] for args, _ in port.named("enqueue") if args[0] == "lead"]


def test_reroute_goes_to_another_cli_when_none_on_its_own_is_free(tmp_path):
    """The claude twin is limited too; the codex role takes the work, and the
    history says where and why, the orchestrator told once."""
    state, port, limits, _, queued = _crew(
        tmp_path, (RoleSpec(name="twin", command="x"), "claude"),
        (RoleSpec(name="helper", command="y"), "codex"))
    _limit(limits, "twin")
    port.calls.clear()
    _limit(limits)
    task = state.board.get(queued.id)
    assert task.role == "helper"
    assert task.note == REROUTED_NOTE + ("coder waits out a provider's usage limit; no role "
                                         "running its agent CLI (claude) was free, helper "
                                         "runs codex")
    [(_, moved)] = [(a, f) for a, f in port.named("event") if a[0] == "task rerouted"]
    assert (moved["was"], moved["role"], moved["same_cli"]) == ("coder", "helper", False)
    told = _told_lead(port)
    assert len(told) == 1 and told[0].startswith("Limit: coder")
    assert f"{queued.id} to helper (on codex)" in told[0]
    assert ("queue_task", (queued.id, "helper"), {}) in port.calls


def test_reroute_prefers_a_free_role_on_the_same_cli(tmp_path):
    state, _, limits, _, queued = _crew(
        tmp_path, (RoleSpec(name="helper", command="y"), "codex"),
        (RoleSpec(name="twin", command="x"), "claude"))
    _limit(limits)
    assert state.board.get(queued.id).role == "twin"


@pytest.mark.parametrize("why", ["reader", "paused", "refused", "over budget", "orchestrator"])
def test_reroute_never_goes_to_a_role_that_cannot_take_the_work(tmp_path, why):
    spec = RoleSpec(name="other", command="y", writes=why != "reader")
    state, _, limits, _, queued = _crew(tmp_path, (spec, "codex"))
    other = state.seats["other"]
    if why == "paused":
        other.view = replace(other.view, status=RoleStatus.PAUSED, ready=False)
    elif why == "refused":
        state.budget.refused["other"] = "choragos: spent"
    elif why == "over budget":
        Guardrails(RecordingPort(state), state).mark("other", OVER, True)
    elif why == "orchestrator":
        other.view = replace(other.view, status=RoleStatus.WORKING, ready=False)
    _limit(limits)
    assert state.board.get(queued.id).role == "coder"  # the lead (idle, claude) is never it


_CHECKED = {"worktree": True, "verify": "make test", "judge": "critic", "owns_files": ("api/*",)}


@pytest.mark.parametrize(("coder", "other", "taker"), [
    ({"worktree": True}, {}, "coder"),
    ({"worktree": True, "merge": "gate"}, {"worktree": True, "merge": "auto"}, "coder"),
    ({"host": "box"}, {}, "coder"),
    ({"verify": "make test"}, {}, "coder"),
    ({"verify": "make test"}, {"verify": "true"}, "coder"),
    ({"judge": "critic"}, {}, "coder"),
    ({"owns_files": ("api/*",)}, {"owns_files": ("web/*",)}, "coder"),
    (_CHECKED, _CHECKED, "other"),
], ids=["worktree to main", "merge gate to auto", "host to main", "verify to none",
        "another verify", "judged to unjudged", "owned files", "the same checks"])
def test_reroute_never_drops_a_check_the_operator_set_on_the_work(tmp_path, coder, other,
                                                                   taker):
    spec = RoleSpec(name="coder", command="x", limit_action="reroute", **coder)
    state, _, limits, _, queued = _crew(tmp_path, (RoleSpec(name="other", command="y", **other),
                                                   "codex"), coder=spec)
    _limit(limits)
    assert state.board.get(queued.id).role == taker


def test_a_readers_work_may_go_to_a_writer(tmp_path):
    coder = RoleSpec(name="coder", command="x", limit_action="reroute", writes=False)
    state, _, limits, _, queued = _crew(tmp_path, (RoleSpec(name="other", command="y"),
                                                   "codex"), coder=coder)
    _limit(limits)
    assert state.board.get(queued.id).role == "other"


def test_a_role_coming_to_rest_takes_the_limited_roles_queued_work(tmp_path):
    """Nobody was free at the limit; the work does not wait for the reset once
    a role is: it goes then, and the orchestrator is told of it once."""
    state, port, limits, _, queued = _crew(tmp_path, (RoleSpec(name="helper", command="y"),
                                                      "codex"))
    helper = state.seats["helper"]
    helper.view = replace(helper.view, status=RoleStatus.WORKING, ready=False)
    _limit(limits)
    assert state.board.get(queued.id).role == "coder"
    assert state.limit.rerouting(state.config)
    port.calls.clear()
    helper.view = replace(helper.view, status=RoleStatus.IDLE, ready=True)
    limits.freed(helper)
    assert state.board.get(queued.id).role == "helper"
    assert list(state.seats["coder"].queue) == []
    assert [t.split(":")[0] for t in _told_lead(port)] == ["Rerouted"]


def test_the_operator_lifts_a_limit_hold_before_its_reset(tmp_path):
    state, port, limits, _, _ = _crew(tmp_path)
    held = state.board.open_for("coder")[0]
    _limit(limits)
    assert state.board.get(held.id).note.startswith(LIMIT_NOTE)
    (_, wake), _ = port.named("later")[-1]
    port.calls.clear()
    answer = limits.lift("coder")
    assert answer["status"] == "ok" and "set going now" in answer["message"]
    assert state.seats["coder"].handle.told[-1] == m.Limited(None)
    assert [f["by"] for a, f in port.named("event") if a[0] == "limit over"] == ["operator"]
    assert state.board.get(held.id).note == "" and "coder" in state.limit.going
    assert limits.lift("coder")["status"] == "error"  # nothing held any more
    # The wake-up timer of the lifted hold finds nothing; the same limit again is news.
    port.calls.clear()
    limits.wake(wake)
    assert port.calls == []
    _limit(limits)
    assert "event:role limited" in port.kinds() and "ring" in port.kinds()


def _limited_crew(tmp_path, until: float):
    state = core_state(tmp_path)
    state.timers = object()  # armed: the idle check is asked for
    delivered(state)
    port = RecordingPort(state)
    guard = Guardrails(port, state)
    state.seats["coder"].view = m.RoleView("coder", RoleStatus.LIMITED, ready=False,
                                           limited_until=until)
    return state, port, guard


def test_a_crew_held_up_only_by_limits_says_so_once_naming_the_earliest_reset(tmp_path,
                                                                               caplog):
    until = time.time() + 7200
    state, port, guard = _limited_crew(tmp_path, until)
    guard.check_idle()
    [((_, check), _)] = port.named("later")
    port.calls.clear()
    guard.idle_check(check)
    [(args, fields)] = port.named("event")
    assert args == ("team limited",) and fields["until"] == pytest.approx(until, abs=0.01)
    assert fields["roles"] == ["coder"] and "event:team idle" not in port.kinds()
    [(ring, _)] = port.named("ring")
    assert ring[0] == "on_idle" and time.strftime("%H:%M:%S", time.localtime(until)) in ring[2]
    assert "THE CREW IS STUCK ON PROVIDER LIMITS" in caplog.text
    port.calls.clear()
    guard.check_idle()  # the same situation: no new alarm armed, none rung
    guard.idle_check(check)
    assert port.kinds() == []
    # The limit lifts and the role works: the situation changed, re-armed.
    state.seats["coder"].view = m.RoleView("coder", RoleStatus.WORKING)
    guard.check_idle()
    state.seats["coder"].view = m.RoleView("coder", RoleStatus.LIMITED, limited_until=until)
    guard.check_idle()
    assert isinstance(port.named("later")[-1][0][1], IdleCheck)


def test_a_working_role_beside_a_limited_one_is_no_stuck_crew(tmp_path):
    state, port, guard = _limited_crew(tmp_path, time.time() + 60)
    state.seats["lead"].view = m.RoleView("lead", RoleStatus.WORKING)
    guard.check_idle()
    assert port.named("later") == []


def test_budget_alarms_that_rang_are_kept_and_taken_over_by_a_resume(tmp_path):
    """Rung before a kill: journaled with the counts, read back into the image
    (a valid record), and a resumed session does not ring them again; the
    pause they made is owed to the new process."""
    spec = RoleSpec(name="coder", command="x", budget_tokens=1000, budget_action="pause")
    state = core_state(tmp_path, spec, status="starting",
                       budget=BudgetSettings(session=0.01, action="pause"))
    state.tokens = {"coder": {"claude-x": {"input": 5000}}}
    port = RecordingPort(state)
    Guardrails(port, state).check_budgets()
    assert port.kinds().count("ring") == 1  # the role's; the session has no price for it
    (_, kept), = [(a, f) for a, f in port.named("journal") if a[0] == "tokens"][-1:]
    record = {"kind": "tokens", "seq": 1, "t": time.time(), **kept}
    assert record_problem(record) is None
    image = Image()
    apply(image, record)
    assert image.rang == {"coder": [None, 1000]}
    apply(image, {"kind": "tokens", "seq": 2, "t": time.time(), "totals": {}})
    assert image.rang == {"coder": [None, 1000]}  # a flush keeps what rang

    again = core_state(tmp_path, spec, status="starting")
    again.tokens = state.tokens
    rang(again, image.rang | {SESSION: [0.01]})
    port = RecordingPort(again)
    Guardrails(port, again).check_budgets()
    assert "ring" not in port.kinds() and "event:over budget" not in port.kinds()
    assert OVER in again.guard.marks["coder"] and "coder" in again.guard.pause_pending
