"""The core's small policies, table-driven with no actor: admission by
memory, blocking budgets, provider limits and the judge's verdicts."""

from __future__ import annotations

import time

import pytest

from choragos.actors import messages as m
from choragos.actors.admission import Admission, MemoryCheck, RoleHeld
from choragos.actors.budgetflow import BLOCKED_NOTE, BudgetFlow
from choragos.actors.gatewayprober import TokenTotals
from choragos.actors.guardrails import Guardrails
from choragos.actors.holds import Holds
from choragos.actors.judging import JudgeLoop, Judging
from choragos.actors.limitflow import LIMIT_NOTE, LimitFlow
from choragos.actors.mergeflow import MergeFlow
from choragos.actors.tokenusage import TokenUsage
from choragos.board.tasks import TaskState
from choragos.config.memfloor import HELD_MARK, MemoryGate
from choragos.config.model import Price, RoleSpec
from choragos.gateway.limits import REPEAT_WINDOW, Limit
from choragos.roles import briefs
from choragos.roles.rolestatus import RoleStatus
from tests.unit.policyport import RecordingPort, core_state, delivered

GIB = 1 << 30


@pytest.mark.parametrize(("new", "effects"), [
    (True, ["mark", "event:role held", "alert", "later"]),
    (False, ["mark", "later"]),
], ids=["a new hold", "the same hold asked again"])
def test_a_held_role_is_marked_and_memory_is_read_again(tmp_path, new, effects):
    state = core_state(tmp_path)
    free = [0]
    state.memory_gate = MemoryGate(GIB, read=lambda: free[0])
    state.memory_gate.ask("coder")
    port = RecordingPort(state)
    Admission(port, state).role_held(RoleHeld("coder", "memory: 0 B free", new))
    assert port.kinds() == effects


def test_one_held_role_is_let_in_per_memory_reading(tmp_path):
    state = core_state(tmp_path)
    free = [0]
    state.memory_gate = MemoryGate(GIB, read=lambda: free[0])
    state.memory_gate.ask("coder")
    state.memory_gate.ask("lead")
    port = RecordingPort(state)
    admission = Admission(port, state)
    admission.role_held(RoleHeld("coder", "low", True))
    assert len(port.named("later")) == 1
    admission.role_held(RoleHeld("lead", "low", True))
    assert len(port.named("later")) == 1  # one reading pending at a time
    free[0] = 4 * GIB
    admission.memory_check(MemoryCheck())
    assert [type(msg) for msg in state.seats["coder"].handle.told] == [m.Spawn]
    assert state.seats["lead"].handle.told == []
    assert ("coder", HELD_MARK, False) in [args for args, _ in port.named("mark")]
    assert len(port.named("later")) == 2  # lead still waits: read again


class Pumps:
    """The delivery as the budgets use it: the roles whose queues were pumped."""

    def __init__(self) -> None:
        self.pumped: list[str] = []

    def pump(self, seat) -> None:
        self.pumped.append(seat.name)


@pytest.mark.parametrize(("budget", "continued"), [(5.0, True), (0.5, False)],
                         ids=["raised past the spend", "changed, still spent"])
def test_a_raise_continues_a_blocked_role_only_when_it_ends_the_block(tmp_path, budget,
                                                                       continued):
    spec = RoleSpec(name="coder", command="x", budget=1.0, budget_action="block")
    state = core_state(tmp_path, spec, pricing={"claude-test": Price(input=1.0)})
    state.tokens = {"coder": {"claude-test-1": {"input": 800_000}}}
    task = delivered(state)
    port, pumps = RecordingPort(state), Pumps()
    budgets = BudgetFlow(port, state, Guardrails(port, state), pumps)
    budgets.refused(m.BudgetRefused("coder", "choragos: spent ($0.80 of $0.50); wait"))
    assert "coder" in state.budget.refused
    port.calls.clear()
    answer = budgets.command({"amount": str(budget), "role": "coder"})
    assert answer["status"] == "ok"
    # The operator is told when the change does not end the block, and why.
    assert ("coder's model calls are still refused: the budget of role coder is spent "
            "($0.80 of $0.50)" in answer["message"]) is not continued
    lines = [args for args, fields in port.named("enqueue") if fields.get("front")]
    assert ("coder" in state.budget.refused) is not continued
    if continued:
        assert lines == [("coder", briefs.budget_continue_line(task.id), "notice", task.id)]
        assert state.board.get(task.id).note == ""
        # Its agent went on by itself (a call let through) before the line was
        # typed: the line is taken back, not typed after all.
        line = m.Injection(7, "coder", briefs.budget_continue_line(task.id), "notice", task.id)
        state.seats["coder"].queue.append(line)
        budgets.refused(m.BudgetRefused("coder", ""))
        assert list(state.seats["coder"].queue) == []
        assert port.named("journal")[-1][0] == ("injected",)
    else:
        assert lines == [] and pumps.pumped == []
        assert state.board.get(task.id).note == BLOCKED_NOTE + "the budget of role coder is " \
            "spent ($0.80 of $0.50)"


@pytest.mark.parametrize(("whys", "events", "note"), [
    (["choragos: over budget; wait"], 1, BLOCKED_NOTE + "over budget"),
    (["choragos: over budget; wait"] * 3, 1, BLOCKED_NOTE + "over budget"),
    (["choragos: over budget; wait", ""], 1, ""),
], ids=["refused", "refused again: not news", "let through again"])
def test_a_refused_call_is_said_once_and_noted_on_the_board(tmp_path, whys, events, note):
    state = core_state(tmp_path)
    task = delivered(state)
    port = RecordingPort(state)
    budgets = BudgetFlow(port, state, Guardrails(port, state), Pumps())
    for why in whys:
        budgets.refused(m.BudgetRefused("coder", why))
    assert port.kinds().count("event:model call refused") == events
    assert state.board.get(task.id).note == note


def test_the_budget_verb_refuses_a_bad_amount_and_an_unknown_role(tmp_path):
    state = core_state(tmp_path)
    port = RecordingPort(state)
    budgets = BudgetFlow(port, state, Guardrails(port, state), Pumps())
    assert "no budget was changed" in budgets.command({"amount": "lots", "role": "coder"})[
        "error"]
    assert "unknown role ghost" in budgets.command({"amount": "1", "role": "ghost"})["error"]
    assert port.calls == [] and state.config.role("coder").budget is None
    assert budgets.command({"amount": "2.50", "role": "coder"})["status"] == "ok"
    assert state.config.role("coder").budget == 2.5


@pytest.mark.parametrize(("action", "moved_to"), [("wait", "coder"), ("reroute", "twin")])
def test_a_limited_role_waits_and_its_queued_tasks_may_go_to_an_idle_twin(tmp_path, action,
                                                                          moved_to):
    state = core_state(tmp_path, RoleSpec(name="coder", command="x", limit_action=action),
                       RoleSpec(name="twin", command="x"))
    held = delivered(state)
    port = RecordingPort(state)
    limits = LimitFlow(port, state, Guardrails(port, state))
    queued = state.board.create("coder", "next")
    state.seats["coder"].queue.append(m.Injection(1, "coder", "next", "task", queued.id))
    limits.seen("coder", Limit("rate limit", "anthropic", time.time() + 60))
    coder = state.seats["coder"]
    assert [type(msg) for msg in coder.handle.told] == [m.Limited] and not coder.view.ready
    assert state.board.get(held.id).note.startswith(LIMIT_NOTE)
    assert "event:role limited" in port.kinds() and port.named("later")
    assert state.board.get(queued.id).role == moved_to
    assert [args[0] for args, _ in port.named("enqueue")][-1] == "lead"  # the notice
    port.calls.clear()
    limits.seen("coder", Limit("rate limit", "anthropic", time.time() + 60))
    assert "event:role limited" not in port.kinds()  # the same limit is not news


def test_a_queued_task_never_goes_to_an_idle_twin_that_is_not_briefed(tmp_path):
    """A twin whose program never drew a prompt is shown idle once its boot
    has waited its longest, but it takes no line: a task rerouted to it
    would wait there for good."""
    state = core_state(tmp_path, RoleSpec(name="coder", command="x", limit_action="reroute"),
                       RoleSpec(name="twin", command="x"))
    state.seats["twin"].view = m.RoleView("twin", RoleStatus.IDLE, ready=False,
                                          detail="not briefed: it has drawn nothing")
    delivered(state)
    port = RecordingPort(state)
    limits = LimitFlow(port, state, Guardrails(port, state))
    queued = state.board.create("coder", "next")
    state.seats["coder"].queue.append(m.Injection(1, "coder", "next", "task", queued.id))
    limits.seen("coder", Limit("rate limit", "anthropic", time.time() + 60))
    assert state.board.get(queued.id).role == "coder"


def test_an_agent_started_again_while_its_role_waits_out_a_limit_is_held_again(tmp_path):
    """Its new process comes up not limited; the same limit reported again is no
    news (no event, no hook), but it holds the role again until the reset."""
    state = core_state(tmp_path)
    port = RecordingPort(state)
    limits = LimitFlow(port, state, Guardrails(port, state))
    limits._limits().rng = lambda: 0.0  # no jitter: the same reset is the same wake
    limit = Limit("rate limit", "anthropic", time.time() + 600)
    limits.seen("coder", limit)
    coder = state.seats["coder"]
    until = coder.handle.told[-1].until
    coder.view = m.RoleView("coder", RoleStatus.IDLE, ready=True)  # restarted: not limited
    port.calls.clear()
    limits.seen("coder", limit)
    assert [type(msg) for msg in coder.handle.told] == [m.Limited, m.Limited]
    assert coder.handle.told[-1].until == pytest.approx(until, abs=1)
    assert not coder.view.ready and port.kinds() == []  # held again, no more noise
    coder.view = m.RoleView("coder", RoleStatus.LIMITED, ready=False, limited_until=until)
    limits.seen("coder", limit)
    assert len(coder.handle.told) == 2  # still shown limited: nothing to tell


@pytest.mark.parametrize("jump", [9 * 3600.0, -3600.0], ids=["set forward 9 h", "set back 1 h"])
def test_a_wall_clock_that_jumps_neither_gives_up_a_limit_nor_backs_it_off(tmp_path,
                                                                           monkeypatch, jump):
    """The reset the provider gave is waited out; the 8 h give-up and the
    straight-back window count time that passed, not the wall clock's steps."""
    state = core_state(tmp_path)
    task = delivered(state)
    port = RecordingPort(state)
    limits = LimitFlow(port, state, Guardrails(port, state))
    start = time.time()
    limits.seen("coder", Limit("rate limit", "anthropic", start + 60))
    (seconds, wake), _ = port.named("later")[-1]
    assert seconds == pytest.approx(60, abs=5)
    assert state.seats["coder"].handle.told[-1].until == pytest.approx(start + 60, abs=5)
    monkeypatch.setattr(time, "time", lambda: start + 60 + jump)
    limits.wake(wake)
    assert "event:limit given up" not in port.kinds() and "event:limit over" in port.kinds()
    assert state.board.get(task.id).state is TaskState.DELIVERED
    port.calls.clear()
    monkeypatch.setattr(time, "time", lambda: start + 60 + jump + REPEAT_WINDOW + 60)
    limits.seen("coder", Limit("rate limit", "anthropic", None))
    # The wall clock says it came back past the straight-back window; it came
    # back at once: a repeat, which waits twice as long.
    (seconds, _), _ = port.named("later")[-1]
    assert seconds >= 2 * state.config.ui.limit_wait
    assert [f["repeats"] for a, f in port.named("event") if a[0] == "role limited"] == [1]


@pytest.mark.parametrize(("report", "outcome", "effect", "state_after"), [
    ("VERDICT: 8/10\nfine", "done", "event:verdict", TaskState.DONE),
    ("VERDICT: 3/10\nno tests", "done", "event:verdict", TaskState.FAILED),
    ("looks fine", "done", "event:verdict unusable", TaskState.DELIVERED),
    ("VERDICT: 9/10", "failed", "event:verdict unusable", TaskState.DELIVERED),
], ids=["pass", "below: retried", "no verdict line: held", "judge failed: held"])
def test_a_judges_report_decides_the_work(tmp_path, report, outcome, effect, state_after):
    state = core_state(tmp_path, RoleSpec(name="coder", command="x", judge="lead"))
    (tmp_path / ".choragos" / "tasks").mkdir(parents=True)
    work = delivered(state)
    judge_task = delivered(state, "lead", "judge it")
    path = tmp_path / "verdict.md"
    path.write_text(report)
    state.verdicts[judge_task.id] = Judging(work.id, f"{work.id} done.", False)
    port = RecordingPort(state)
    merges = MergeFlow(port, state)
    holds = Holds(port, state, merges)
    JudgeLoop(port, state, holds, merges).verdict(judge_task, str(path), outcome)
    assert effect in port.kinds() and state.verdicts == {}
    assert state.board.get(work.id).state is state_after
    assert (work.id in state.holds) is (state_after is TaskState.DELIVERED)


def test_new_token_totals_are_published_typed_per_role(tmp_path):
    """The gateway's counts changed: the news carries each role's usage (a
    missed rename left this path raising inside the core, crashing it)."""
    state = core_state(tmp_path)
    port = RecordingPort(state)
    usage = TokenUsage(port, state, Guardrails(port, state))
    counts = {"input": 1000, "output": 10, "cache_read": 0, "cache_creation": 0}
    usage.totals(TokenTotals({"coder": {"claude-x": counts}}))
    [(news_item,), _] = port.named("publish")[-1]
    assert news_item.usages["coder"].tokens == usage.of("coder")["tokens"]
    usage.totals(TokenTotals({"coder": {"claude-x": counts}}))  # the same: not published again
    assert len(port.named("publish")) == 1
