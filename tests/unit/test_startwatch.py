"""What a start waits for and reports, from role views alone (no actor, no PTY)."""

from __future__ import annotations

import threading

from choragos.actors.startwatch import outcome, watch_start, why
from choragos.roles.rolestatus import RoleStatus
from choragos.session.news import RoleView


def view(name: str, status: RoleStatus, **more: object) -> RoleView:
    return RoleView(name=name, status=status, **more)


def test_each_state_is_booting_failed_waiting_or_up():
    assert outcome(view("o", RoleStatus.BOOTING)) == "booting"
    assert outcome(view("o", RoleStatus.FAILED)) == "failed"
    assert outcome(view("o", RoleStatus.EXITED)) == "failed"
    assert outcome(view("o", RoleStatus.WAITING)) == "waiting"
    assert outcome(view("o", RoleStatus.IDLE)) == "up"
    assert outcome(view("o", RoleStatus.WORKING)) == "up"


def test_a_role_up_but_never_briefed_is_reported_with_why():
    """A start role that draws nothing leaves ``booting`` once the boot's
    longest wait has passed: the start said nothing of it, as if it were
    up and briefed."""
    detail = "not briefed: it has drawn nothing in the 20s since its start"
    lead = view("lead", RoleStatus.IDLE, detail=detail)
    assert outcome(lead) == "unbriefed"
    report = watch_start(lambda name: lead, "lead", ["lead"], threading.Event(), 10)
    assert report.unbriefed == {"lead": detail} and report.booting == []


def test_an_exit_points_at_the_transcript():
    gone = view("lead", RoleStatus.EXITED, detail="exit status 2")
    assert why(gone) == ("it exited (exit status 2); what it printed is in "
                         ".choragos/logs/lead.log")
    assert why(view("lead", RoleStatus.FAILED, detail="not on PATH")) == "not on PATH"


def test_the_wait_ends_when_the_start_role_is_up_and_reports_every_role():
    looks = iter([view("lead", RoleStatus.BOOTING), view("lead", RoleStatus.IDLE)])
    views = {"w1": view("w1", RoleStatus.FAILED, detail="no such command"),
             "w2": view("w2", RoleStatus.BOOTING)}

    def look(name: str) -> RoleView | None:
        if name == "lead":
            return next(looks, view("lead", RoleStatus.IDLE))
        return views.get(name)
    report = watch_start(look, "lead", ["lead", "w1", "w2", "w3"], threading.Event(), 10)
    assert report.failed == {"w1": "no such command"}
    assert report.booting == ["w2", "w3"] and report.waiting == []


def test_a_stop_ends_the_wait_at_once():
    stopped = threading.Event()
    stopped.set()
    report = watch_start(lambda name: view(name, RoleStatus.BOOTING), "lead", ["lead"],
                         stopped, 60)
    assert report.booting == ["lead"]
