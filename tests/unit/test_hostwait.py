"""A remote role's hold through its host's outage, the role actor's side, alone.

The seat, its link and the timers are stand-ins; the hold's bookkeeping
(what the core hears, when, and what is probed) is the real one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from choragos.actors import messages as m
from choragos.actors.hostwait import HostWait
from choragos.remote import reach
from choragos.remote.reach import Probe, Reach
from choragos.roles.rolestatus import RoleStatus
from choragos.terminal.restartpolicy import ExitStatus


@dataclass
class Recorder:
    told: list = field(default_factory=list)

    def tell(self, message) -> None:
        self.told.append(message)


class Timers:
    def __init__(self) -> None:
        self.set: list[tuple[float, object]] = []

    def after(self, delay, target, message):
        self.set.append((delay, message))
        return SimpleNamespace(cancel=lambda: None)


def _wait(restart: str = "on-failure"):
    link = SimpleNamespace(reach=Reach(), answers=lambda: False)
    seat = SimpleNamespace(link=link, host="box (me@box)", lost=lambda status: True,
                           fault=lambda status: reach.UNREACHABLE)
    state = SimpleNamespace(seat=seat, stopping=False, spec=SimpleNamespace(name="coder",
                            restart=restart), status=RoleStatus.EXITED, detail="",
                            host_held=None, pending_restart=None)
    core, me, timers = Recorder(), Recorder(), Timers()
    return HostWait(state, timers, me, core.tell, lambda: None), state, core, me, timers


LOST = ExitStatus(code=255, cause="the connection to box (me@box) was lost")


def test_an_unreachable_host_holds_the_role_once_per_outage_and_probes_it():
    wait, state, core, _me, timers = _wait()
    assert wait.fault(m.Exited(1, LOST)) == reach.UNREACHABLE
    wait.hold(LOST, reach.UNREACHABLE)
    held, exited = core.told  # the hold, and the exit (its task typed again when back)
    assert exited == m.RoleExited("coder", LOST, True, state.detail, redeliver=True)
    core.told.remove(exited)
    assert held.new and not held.refused and held.why == "the connection was lost"
    assert state.detail.startswith("held: host unreachable: box (me@box): the connection")
    assert "next try at" in state.detail
    [(delay, due)] = timers.set
    assert 0 < delay <= reach.FIRST_DELAY and isinstance(due, m.ProbeDue)
    # The probe found nothing: still held, probed later, nothing said again.
    state.seat.link.reach.probed(Probe(reach.UNREACHABLE, "Connection refused", due.due))
    wait.heard(m.Probed(due.token, Probe(reach.UNREACHABLE, "Connection refused", due.due)))
    assert [msg.new for msg in core.told] == [True, False]
    assert len(timers.set) == 2 and timers.set[1][1].token != due.token
    # A start the hold tried that failed too: no second exit for the core.
    wait.hold(ExitStatus(code=255, cause="cannot reach box (me@box): Connection refused"),
              reach.UNREACHABLE)
    assert [msg.new for msg in core.told] == [True, False, False]


def test_the_host_answering_starts_the_role_and_ends_the_hold():
    wait, state, core, me, timers = _wait()
    wait.hold(LOST, reach.UNREACHABLE)
    due = timers.set[0][1]
    wait.heard(m.Probed(due.token - 1, Probe(reach.ANSWERED, "", 1.0)))
    assert me.told == []  # a stale round's answer starts nothing
    wait.heard(m.Probed(due.token, Probe(reach.ANSWERED, "", 1.0)))
    assert me.told == [m.Spawn()]
    wait.over()
    assert isinstance(core.told[-1], m.HostBack) and state.host_held is None
    assert state.seat.link.reach.current is None


def test_a_refused_login_is_held_without_a_probe():
    wait, state, core, _me, timers = _wait()
    refused = ExitStatus(code=255, cause="cannot reach box (me@box): me@box: Permission "
                         "denied (publickey).")
    wait.hold(refused, reach.REFUSED)
    held, _ = core.told
    assert held.refused and held.new and held.next_try == ""
    assert "fix the login, then `choragos restart coder`" in state.detail
    assert timers.set == []


def test_a_role_nothing_restarts_or_a_stop_is_not_held():
    wait, state, *_ = _wait(restart="")
    assert wait.fault(m.Exited(1, LOST)) == reach.ANSWERED
    wait, state, *_ = _wait()
    state.stopping = True
    assert wait.fault(m.Exited(1, LOST)) == reach.ANSWERED


def test_a_start_the_host_answered_that_failed_ends_the_hold():
    # The host is back but the start fails for a reason of its own (a
    # program missing there): the crash policy takes over, the mark goes.
    wait, state, core, *_ = _wait()
    wait.hold(LOST, reach.UNREACHABLE)
    state.seat.fault = lambda status: reach.ANSWERED
    missing = ExitStatus(code=255, cause="claude is not on the PATH of box (me@box)")
    assert wait.fault(m.Exited(2, missing)) == reach.ANSWERED
    assert isinstance(core.told[-1], m.HostBack) and state.host_held is None
