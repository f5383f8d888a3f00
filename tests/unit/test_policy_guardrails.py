"""The guardrails policy, table-driven: a state and an event in, effects out."""

from __future__ import annotations

from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors.guardrails import INPUT_HELD, OVER, SESSION, STALLED, Guardrails
from choragos.config.model import BudgetSettings, RoleSpec, UISettings
from choragos.roles.rolestatus import RoleStatus
from choragos.terminal.restartpolicy import ExitStatus
from tests.unit.policyport import RecordingPort, core_state, delivered

USED = {"claude-x": {"input": 1000, "output": 1000}}  # 2000 tokens


def policy(tmp_path, *workers, **config):
    state = core_state(tmp_path, *workers, **config)
    port = RecordingPort(state)
    return Guardrails(port, state), port, state


@pytest.mark.parametrize(("spec", "effects", "over"), [
    (RoleSpec(name="coder", command="x"), [], False),
    (RoleSpec(name="coder", command="x", budget_tokens=5000), [], False),
    (RoleSpec(name="coder", command="x", budget_tokens=2000),
     ["publish", "journal", "event:over budget", "ring", "enqueue"], True),
    (RoleSpec(name="coder", command="x", budget_tokens=1000, budget_action="pause"),
     ["publish", "journal", "event:over budget", "ring", "event:role pause", "enqueue"], True),
], ids=["no budget", "under", "at its cap", "over, pausing"])
def test_a_role_budget_fires_once_at_its_cap(tmp_path, spec, effects, over):
    guard, port, state = policy(tmp_path, spec)
    state.tokens = {"coder": USED}
    guard.check_budgets()
    assert port.kinds() == effects  # the card's mark is published first
    assert (guard.budget_of("coder") or {}).get("over", False) is over
    port.calls.clear()
    guard.check_budgets()  # the same reading again: each alarm fires once
    assert port.kinds() == []
    paused = [msg for msg in state.seats["coder"].handle.told if isinstance(msg, m.Pause)]
    assert bool(paused) == (over and spec.budget_action == "pause")


@pytest.mark.parametrize(("action", "held"), [("block", True), ("cut", True),
                                              ("pause", False), ("notify", False)])
def test_a_blocking_budget_holds_the_roles_lines_from_its_crossing(tmp_path, action, held):
    """Crossed with a blocking action, the role is held at once (nothing more
    is typed into it), not only when the gateway first refuses a call: a task
    typed in between would start a turn whose calls are refused."""
    spec = RoleSpec(name="coder", command="x", budget_tokens=1000, budget_action=action)
    guard, _, state = policy(tmp_path, spec)
    state.tokens = {"coder": USED}
    guard.check_budgets()
    assert ("coder" in state.budget.refused) is held


def test_a_new_cap_re_arms_the_budget_alarm(tmp_path):
    spec = RoleSpec(name="coder", command="x", budget_tokens=1000)
    guard, port, state = policy(tmp_path, spec)
    state.tokens = {"coder": USED}
    guard.check_budgets()
    state.config = replace(state.config, roles=(state.config.roles[0],
                                                replace(spec, budget_tokens=10_000)))
    port.calls.clear()
    guard.check_budgets()  # under the new cap: cleared
    assert OVER not in guard.state.marks["coder"] and port.kinds() == ["publish", "journal"]
    state.config = replace(state.config, roles=(state.config.roles[0],
                                                replace(spec, budget_tokens=1500)))
    port.calls.clear()
    guard.check_budgets()  # over the next: fires again
    assert "event:over budget" in port.kinds()


@pytest.mark.parametrize(("action", "told"), [("pause", [m.Pause, m.Pause]), ("block", [])])
def test_the_session_budget_pauses_every_role_or_leaves_it_to_the_gateway(tmp_path, action,
                                                                          told):
    guard, port, state = policy(tmp_path, budget=BudgetSettings(session=0.0, action=action))
    state.tokens = {"coder": USED}
    guard.check_budgets()
    assert port.kinds().count("event:over budget") == 1
    assert port.named("ring")[0][0][:2] == ("on_budget", "session")
    sent = [type(msg) for seat in state.seats.values() for msg in seat.handle.told]
    assert sent == told
    assert guard.session_budget()["over"] is True and SESSION in guard.state.budget_fired


def test_a_role_over_budget_before_it_is_up_is_paused_once_it_is(tmp_path):
    spec = RoleSpec(name="coder", command="x", budget_tokens=1, budget_action="pause")
    guard, _port, state = policy(tmp_path, spec)
    seat = state.seats["coder"]
    seat.view = m.RoleView("coder", RoleStatus.EXITED)
    state.tokens = {"coder": USED}
    guard.check_budgets()
    assert seat.handle.told == [] and guard.state.pause_pending == {"coder"}
    before, seat.view = seat.view, m.RoleView("coder", RoleStatus.IDLE, ready=True)
    guard.view_changed(before, seat.view)  # as the core tells it, its seat updated first
    assert [type(msg) for msg in seat.handle.told] == [m.Pause]
    assert guard.state.pause_pending == set()


@pytest.mark.parametrize(("stalled", "holds", "action", "effects"), [
    (True, False, "notify", []),
    (True, True, "notify", ["publish", "event:role stalled", "alert"]),
    (True, True, "nudge", ["publish", "event:role stalled", "alert", "enqueue"]),
    (False, True, "notify", []),
], ids=["stalled, holding nothing", "stalled holding a task", "nudged", "moving again"])
def test_a_stall_is_an_alarm_only_while_the_role_holds_a_task(tmp_path, stalled, holds, action,
                                                              effects):
    guard, port, state = policy(tmp_path, RoleSpec(name="coder", command="x",
                                                   stall_action=action))
    if holds:
        delivered(state)
    before = m.RoleView("coder", RoleStatus.WORKING, stalled=not stalled)
    guard.view_changed(before, replace(before, stalled=stalled))
    assert port.kinds() == effects
    assert (STALLED in guard.state.marks.get("coder", ())) is bool(effects)


def test_a_held_input_marks_the_card_and_clears(tmp_path):
    guard, port, _state = policy(tmp_path)
    before = m.RoleView("coder", RoleStatus.IDLE)
    guard.view_changed(before, replace(before, held=True))
    assert guard.state.marks["coder"] == (INPUT_HELD,)
    guard.view_changed(replace(before, held=True), before)
    assert guard.state.marks["coder"] == () and port.kinds() == ["publish", "publish"]


def test_a_role_not_briefed_is_marked_until_its_detail_changes(tmp_path):
    """The deck's card and ``status``'s table show a live role's detail
    nowhere: a role whose brief never went in looked like any idle one."""
    guard, _port, _state = policy(tmp_path)
    before = m.RoleView("coder", RoleStatus.BOOTING)
    unbriefed = m.RoleView("coder", RoleStatus.IDLE, detail="not briefed: it has drawn nothing")
    guard.view_changed(before, unbriefed)
    assert guard.state.marks["coder"] == ("not briefed",)
    guard.view_changed(unbriefed, replace(unbriefed, detail=""))
    assert guard.state.marks["coder"] == ()


def test_the_team_idle_with_open_work_arms_one_check_and_rings_once(tmp_path):
    guard, port, state = policy(tmp_path, ui=UISettings(idle_after=5.0))
    state.timers = object()  # only its presence matters: the port sends the check
    delivered(state)
    guard.check_idle()
    guard.check_idle()
    (seconds, check), _ = port.named("later")[0]
    assert seconds == 5.0 and len(port.named("later")) == 1
    guard.idle_check(check)
    guard.idle_check(check)
    assert port.kinds().count("event:team idle") == 1
    assert port.named("ring")[0][0][0] == "on_idle"


def _host_held(tmp_path):
    """A guardrails policy whose port keeps the marks as the core's does,
    and the core's policy for remote roles held for their hosts."""
    from choragos.actors.roleexits import RoleExits

    guard, port, state = policy(tmp_path, ui=UISettings(idle_after=5.0))
    port.mark = guard.mark
    down = m.HostHeld("coder", "gpu (me@gpu-box)", False, "timed out", "12:00:00", True)
    return guard, port, state, RoleExits(port, state), down


def test_a_probed_host_marks_held_host_and_a_refused_login_held_login(tmp_path):
    """The two holds tell apart by their marks (card, ``status``, web view),
    one at a time, both gone when the host is back."""
    guard, _port, state, exits, down = _host_held(tmp_path)
    state.seats["coder"].view = replace(state.seats["coder"].view, status=RoleStatus.EXITED,
                                        detail="held: …")
    exits.outage(down)
    assert guard.state.marks["coder"] == (m.HOST_MARK,)
    exits.outage(replace(down, refused=True, next_try=""))
    assert guard.state.marks["coder"] == (m.LOGIN_MARK,)
    assert guard.down_roles(["coder"]) == {"coder": "coder is held: …"}
    exits.outage(down)  # the login went through, the host then stopped answering
    assert guard.state.marks["coder"] == (m.HOST_MARK,)
    exits.outage(replace(down, refused=True, next_try=""))
    exits.outage(m.HostBack("coder", down.host, 30.0))
    assert guard.state.marks["coder"] == ()


def test_work_held_for_a_probed_host_is_no_idle_team_but_a_refused_login_is(tmp_path):
    """The crew waits on a host the session probes, as on a limit: no
    ``on_idle`` (the hold rang once itself).  A login the host turned away
    mends only by the operator's hand: that crew is stuck, and said so.
    Told by the marks, which come after the view that exited."""
    from choragos.actors.hostwait import said

    guard, port, state, exits, down = _host_held(tmp_path)
    state.timers = object()
    delivered(state)
    idle = state.seats["coder"].view
    held = replace(idle, status=RoleStatus.EXITED, ready=False, detail=said(down))
    state.seats["coder"].view = held
    guard.view_changed(idle, held)
    (_, first), _ = port.named("later")[0]  # exited, not marked yet: a check is armed
    exits.outage(down)
    guard.idle_check(first)  # ... and finds the crew waiting on the probed host
    assert port.named("later")[1:] == [] and "on_idle" not in _rung(port)
    refused = replace(down, refused=True, next_try="")
    state.seats["coder"].view = replace(held, detail=said(refused))
    exits.outage(refused)  # its detail no longer says which: the mark does
    (_, check), _ = port.named("later")[1]
    guard.idle_check(check)
    assert _rung(port).count("on_idle") == 1


def _rung(port) -> list[str]:
    return [args[0] for args, _ in port.named("ring")]


def test_an_exit_with_no_restart_coming_leaves_no_worker_alive(tmp_path):
    guard, port, _state = policy(tmp_path)
    guard.exited(m.RoleExited("coder", ExitStatus(code=1), restarting=False, reason="gone"))
    assert port.kinds() == ["ring", "event:no worker alive"]
    assert guard.down_roles(["coder"]) == {}  # its view still says idle: not down yet


def test_a_move_or_a_role_change_does_not_walk_the_board(tmp_path):
    """Counted: the guardrails' walks of the live board (its tasks listed)
    per move and per role change, with 100 settled tasks and open ones
    on it.  Each used to list every live task (two walks a move, one a
    role change); the board now counts its unsettled tasks as they move.
    The alarms still fire as before: idle with open work, done when all
    settle."""
    from choragos.board.tasks import TaskState

    guard, port, state = policy(tmp_path, ui=UISettings(idle_after=5.0))
    state.timers = object()
    board = state.board
    for _ in range(100):
        board.move(delivered(state).id, TaskState.DONE, summary="ok")
    walks = [0]

    class Counted(type(board.tasks)):
        def values(self):
            walks[0] += 1
            return super().values()

        def __iter__(self):
            walks[0] += 1
            return super().__iter__()

    board.tasks = Counted(board.tasks)
    a, b = delivered(state), delivered(state)
    guard.tasks_changed()
    before = m.RoleView("coder", RoleStatus.WORKING)
    guard.view_changed(before, replace(before, status=RoleStatus.IDLE))
    assert walks[0] == 0, f"{walks[0]} board walks for a move and a role change"
    assert len(port.named("later")) == 1  # idle with open work: its check armed
    board.move(a.id, TaskState.DONE, summary="ok")
    guard.tasks_changed()
    assert walks[0] == 0 and "event:all tasks settled" not in port.kinds()
    board.move(b.id, TaskState.FAILED, note="no")
    guard.tasks_changed()  # every task settled: the alarm counts them, once
    assert port.kinds().count("event:all tasks settled") == 1
