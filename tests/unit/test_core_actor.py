"""The session core as a real pykka actor under the real supervisor."""

from __future__ import annotations

from types import SimpleNamespace

import pykka
import pytest

from choragos.actors import messages as m
from choragos.actors.core import CoreActor, CoreState, Seat
from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
from choragos.board.events import EventLog, read_events
from choragos.config.model import Config, RoleSpec
from tests.conftest import Told, wait_until


@pytest.fixture
def start_core(tmp_path):
    """``start_core(coder=RoleSpec keys)``: a supervised core, an orchestrator
    and a coder whose role actors only record what they are told."""
    started = []

    def start(**coder: object) -> SimpleNamespace:
        config = Config(roles=(RoleSpec(name="orchestrator", command="x", start=True),
                               RoleSpec(name="coder", command="x", **coder)))
        events = EventLog(tmp_path / "events.jsonl")
        state = CoreState(config=config, workdir=tmp_path, events=events)
        roles = {name: Told() for name in ("orchestrator", "coder")}
        for name, role in roles.items():
            state.seats[name] = Seat(name, role, m.RoleView(name, "idle", ready=True))
        sup = Supervisor.start(on_event=events.write)
        started.append((sup, events))
        handle = sup.ask(StartChild(ChildSpec("core", lambda h: CoreActor.start(state, sup))))
        return SimpleNamespace(handle=handle, roles=roles, log=tmp_path / "events.jsonl",
                               state=state)

    yield start
    for sup, events in started:
        sup.ask(StopAll())
        sup.stop()
        events.close()
    assert not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()]


@pytest.fixture
def core(start_core):
    return start_core()


def dispatch(handle, **request):
    return handle.ask(m.Dispatch(request), timeout=5)


def test_a_crash_in_the_core_is_survived_with_the_board_intact(core):
    handle, _roles, log = core.handle, core.roles, core.log
    ack = dispatch(handle, cmd="delegate", to=["coder"], task="keep me", brief=None)
    assert ack["tasks"][0]["id"] == "T1"
    handle.tell(m.CheckpointDone("T99"))  # no such task: the handler raises
    wait_until(lambda: any(r["event"] == "actor restarted" for r in read_events(log)), 5,
               message="the supervisor to replace the core")
    board = dispatch(handle, cmd="board")["tasks"]
    assert [t["id"] for t in board] == ["T1"]
    ack = dispatch(handle, cmd="delegate", to=["coder"], task="after the crash", brief=None)
    assert ack["tasks"][0]["id"] == "T2"
    restarted = next(r for r in read_events(log) if r["event"] == "actor restarted")
    assert restarted["actor"] == "core" and "T99" in restarted["error"]


def test_one_injection_in_flight_per_role_in_order(core):
    handle, roles, _log = core.handle, core.roles, core.log
    for n in range(3):
        dispatch(handle, cmd="delegate", to=["coder"], task=f"job {n}", brief=None)
    wait_until(lambda: len(roles["coder"].told) == 1, 5, message="the first injection")
    first = roles["coder"].told[0].injection
    assert first.task_id == "T1"
    handle.tell(m.InjectionOutcome("coder", first, True, "ok"))
    wait_until(lambda: len(roles["coder"].told) == 2, 5, message="the second injection")
    assert roles["coder"].told[1].injection.task_id == "T2"
    assert dispatch(handle, cmd="board")["tasks"][0]["state"] == "delivered"


def test_a_role_that_is_not_ready_gets_nothing(core):
    handle, roles, _log = core.handle, core.roles, core.log
    handle.tell(m.RoleReported(m.RoleView("coder", "waiting", ready=False)))
    dispatch(handle, cmd="delegate", to=["coder"], task="wait for me", brief=None)
    assert dispatch(handle, cmd="status")["roles"][1]["queued"] == 1
    assert roles["coder"].told == []
    handle.tell(m.RoleReported(m.RoleView("coder", "idle", ready=True)))
    wait_until(lambda: roles["coder"].told, 5, message="delivery once idle")


def test_a_request_the_listener_stopped_waiting_for_changes_nothing(core):
    import time

    request = {"cmd": "delegate", "to": ["coder"], "task": "too late", "brief": None}
    ack = core.handle.ask(m.Dispatch(request, time.monotonic() - 0.1), timeout=5)
    assert ack["status"] == "error" and ack["busy"] is True
    assert "nothing was changed" in ack["error"]
    assert dispatch(core.handle, cmd="board")["tasks"] == []
    ack = dispatch(core.handle, cmd="delegate", to=["coder"], task="in time", brief=None)
    assert ack["tasks"][0]["id"] == "T1"


def test_a_failed_task_file_write_refuses_the_delegation_and_forgets_the_task(core, tmp_path):
    state = tmp_path / ".choragos"
    state.mkdir(exist_ok=True)
    (state / "tasks").write_text("not a directory")
    ack = dispatch(core.handle, cmd="delegate", to=["orchestrator", "coder"], task="x",
                   brief=None)
    assert ack["status"] == "error" and ack["error"].endswith("the delegation was not recorded")
    assert dispatch(core.handle, cmd="board")["tasks"] == []
    (state / "tasks").unlink()
    ack = dispatch(core.handle, cmd="delegate", to=["coder"], task="again", brief=None)
    assert ack["tasks"][0]["id"] == "T1"


def test_a_line_the_role_refused_untyped_is_held_not_failed(core):
    # The view said ready, but by the time the line arrived a turn had begun.
    handle, roles, log = core.handle, core.roles, core.log
    dispatch(handle, cmd="delegate", to=["coder"], task="hold me", brief=None)
    wait_until(lambda: roles["coder"].told, 5, message="the first attempt")
    first = roles["coder"].told[0].injection
    handle.tell(m.RoleReported(m.RoleView("coder", "working", ready=False)))
    handle.tell(m.InjectionOutcome("coder", first, False, "coder is working, not ready",
                                   untouched=True))
    wait_until(lambda: any(r["event"] == "injection held" for r in read_events(log)), 5,
               message="the hold")
    assert dispatch(handle, cmd="board")["tasks"][0]["state"] == "queued"
    assert dispatch(handle, cmd="status")["roles"][1]["queued"] == 1
    handle.tell(m.RoleReported(m.RoleView("coder", "idle", ready=True)))
    wait_until(lambda: len(roles["coder"].told) == 2, 5, message="the second attempt")
    assert roles["coder"].told[1].injection == first


def test_a_task_cut_off_by_an_exit_is_typed_again_only_if_never_submitted(core):
    """The role died while the task was being typed: text never submitted is
    delivered to the next process; text after its Enter may have been taken
    by the dead one, so the task fails rather than run twice."""
    handle, roles, log = core.handle, core.roles, core.log
    for task in ("unsent", "sent"):
        dispatch(handle, cmd="delegate", to=["coder"], task=task, brief=None)
    wait_until(lambda: roles["coder"].told, 5, message="the first task typed")
    first = roles["coder"].told[0].injection
    handle.tell(m.RoleReported(m.RoleView("coder", "exited", ready=False)))
    handle.tell(m.InjectionOutcome("coder", first, False, "coder exited (exit code 3)"))
    handle.tell(m.RoleReported(m.RoleView("coder", "idle", ready=True)))
    wait_until(lambda: len(roles["coder"].told) == 2, 5, message="T1 typed into the new process")
    assert roles["coder"].told[1].injection == first
    handle.tell(m.RoleReported(m.RoleView("coder", "exited", ready=False)))
    handle.tell(m.InjectionOutcome("coder", first, False, "coder exited (exit code 3)",
                                   submitted=True))
    wait_until(lambda: dispatch(handle, cmd="board")["tasks"][0]["state"] == "failed", 5,
               message="T1 failed")
    handle.tell(m.RoleReported(m.RoleView("coder", "idle", ready=True)))
    wait_until(lambda: len(roles["coder"].told) == 3, 5, message="T2 typed next")
    assert [x.injection.task_id for x in roles["coder"].told] == ["T1", "T1", "T2"]
    failed = next(r for r in read_events(log) if r["event"] == "task failed")
    assert failed["task"] == "T1" and "not typed again" in failed["reason"]


def test_a_line_for_the_orchestrator_cut_off_by_its_exit_reaches_the_next_one(core):
    """Whatever the orchestrator was being told when it died is told to its
    next process, marked as a repeat once its Enter had gone in."""
    handle, roles = core.handle, core.roles
    dispatch(handle, cmd="delegate", to=["coder"], task="dies on it", brief=None)
    wait_until(lambda: roles["coder"].told, 5, message="T1 typed")
    handle.tell(m.RoleReported(m.RoleView("coder", "exited", ready=False)))
    handle.tell(m.InjectionOutcome("coder", roles["coder"].told[0].injection, False,
                                   "coder exited (exit code 3)", submitted=True))
    lead = roles["orchestrator"]
    wait_until(lambda: lead.told, 5, message="the failure told to the orchestrator")
    notice = lead.told[0].injection
    assert notice.task_id == "T1" and "T1" in notice.text
    for submitted, told in ((False, 2), (True, 3), (True, 4)):
        handle.tell(m.RoleReported(m.RoleView("orchestrator", "exited", ready=False)))
        handle.tell(m.InjectionOutcome("orchestrator", lead.told[-1].injection, False,
                                       "orchestrator exited (exit code 1)",
                                       submitted=submitted))
        handle.tell(m.RoleReported(m.RoleView("orchestrator", "idle", ready=True)))
        wait_until(lambda n=told: len(lead.told) == n, 5, message="the line typed again")
    unsent, sent = lead.told[1].injection, lead.told[2].injection
    assert unsent == notice
    assert sent.id == notice.id and sent.text == (
        "(Repeated after orchestrator restarted while it was typed; ignore it if you had "
        "it) " + notice.text)
    # Cut off again once its Enter went in: still one mark, not one per exit.
    assert lead.told[3].injection.text == sent.text


def test_a_settled_task_leaves_no_fingerprint_of_owned_files_behind(start_core, tmp_path):
    """The owned files are fingerprinted when a task goes out; once it is
    settled nothing checks them again, and a long session must not keep one
    per task."""
    (tmp_path / "OWNED.md").write_text("mine\n")
    core = start_core(owns_files=("OWNED.md",))
    dispatch(core.handle, cmd="delegate", to=["coder"], task="one", brief=None)
    assert core.state.board.get("T1").owned is not None
    ack = dispatch(core.handle, cmd="work-done", id="T1", task="finished", done=True)
    assert ack["status"] == "ok", ack
    assert dispatch(core.handle, cmd="board")["tasks"][0]["state"] == "done"
    assert core.state.board.get("T1").owned is None


def test_every_task_settled_counts_the_archived_ones_too(start_core, monkeypatch):
    """A long session's board keeps only the latest resolved tasks live; the
    "every task is settled" counts are still the whole session's."""
    monkeypatch.setattr("choragos.board.tasks.KEEP_RESOLVED", 2)
    core = start_core()
    for n in range(1, 6):
        dispatch(core.handle, cmd="delegate", to=["coder"], task=f"task {n}", brief=None)
        ack = dispatch(core.handle, cmd="work-done", id=f"T{n}", task="finished", done=True)
        assert ack["status"] == "ok", ack
    assert len(core.state.board.archive) == 3
    settled = [r for r in read_events(core.log) if r["event"] == "all tasks settled"]
    assert [(r["done"], r["failed"], r["rejected"]) for r in settled] == [
        (n, 0, 0) for n in range(1, 6)]


def test_a_line_a_live_orchestrator_never_shows_gets_one_more_round_then_is_loud(core):
    handle, roles, log = core.handle, core.roles, core.log
    dispatch(handle, cmd="delegate", to=["coder"], task="reported", brief=None)
    ack = dispatch(handle, cmd="work-done", id="T1", task="all done", done=True)
    assert ack["status"] == "ok", ack
    lead = roles["orchestrator"]
    wait_until(lambda: lead.told, 5, message="the report typed")
    report = lead.told[0].injection
    unshown = m.InjectionOutcome("orchestrator", report, False,
                                 "the text did not appear on the agent's screen")
    handle.tell(unshown)
    wait_until(lambda: len(lead.told) == 2, 5, message="the report's second round")
    handle.tell(unshown)
    wait_until(lambda: any(r["event"] == "line not taken" for r in read_events(log)), 5,
               message="the report given up on")
    assert [x.injection for x in lead.told] == [report, report]
    lost = next(r for r in read_events(log) if r["event"] == "line not taken")
    assert (lost["kind"], lost["task"], lost["text"]) == ("report", "T1", report.text)
    assert core.state.rounds == {}


def test_a_subscriber_whose_actor_has_stopped_is_told_no_more(core, caplog):
    from choragos.actors.handle import Handle

    gone, heard = Handle("ui"), []
    gone.close("the session ended")
    core.handle.tell(m.Subscribe(lambda item: gone.tell(item)))
    core.handle.tell(m.Subscribe(heard.append))
    for _ in range(3):
        dispatch(core.handle, cmd="delegate", to=["coder"], task="news", brief=None)
    wait_until(lambda: len(heard) >= 3, 5, message="the live subscriber's news")
    assert len(core.state.subscribers) == 1  # the live one alone
    refusals = [r for r in caplog.records if "not delivered" in r.getMessage()]
    assert len(refusals) == 1  # refused once, then no longer told
    assert not [r for r in caplog.records if r.getMessage() == "subscriber failed"]


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_a_dead_role_is_not_paused_nor_journaled_paused(start_core, action):
    """Pause or resume of an exited role is refused in words and changes
    nothing: told to no role, journaled nowhere (a role journaled as paused
    would come back paused at its next start)."""
    core = start_core()
    core.handle.tell(m.RoleReported(m.RoleView("coder", "exited", ready=False)))
    wait_until(lambda: core.state.seats["coder"].view.status == "exited", 5,
               message="the core sees the coder exited")
    answer = dispatch(core.handle, cmd=action, role="coder")
    assert answer["status"] == "error"
    assert answer["error"] == (f"coder is exited: nothing to {action}; "
                               "`choragos restart coder` starts it again")
    assert core.roles["coder"].told == []
    assert not [r for r in read_events(core.log) if r["event"] == f"role {action}"]
    assert dispatch(core.handle, cmd="restart", role="coder")["status"] == "ok"


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_a_role_not_spawned_yet_is_not_paused_nor_called_exited(start_core, action):
    core = start_core()
    core.handle.tell(m.RoleReported(m.RoleView("coder", "starting", ready=False)))
    wait_until(lambda: core.state.seats["coder"].view.status == "starting", 5,
               message="the core sees the coder starting")
    answer = dispatch(core.handle, cmd=action, role="coder")
    assert answer["error"] == f"coder is starting: nothing to {action} yet; try again once " \
                              "it is booting"
    assert dispatch(core.handle, cmd="input", role="coder", text="y", keys=[])["error"] == (
        "coder is starting; nothing can be typed into it")
    assert core.roles["coder"].told == []


def test_restarting_the_gateway_of_a_session_without_one_is_one_sentence(start_core):
    core = start_core()
    answer = dispatch(core.handle, cmd="restart", gateway=True)
    assert answer["status"] == "error" and answer["error"] == (
        "this session has no built-in gateway ([gateway] builtin is not set): "
        "nothing to restart")
    assert core.roles["coder"].told == []


def test_a_held_role_reported_after_the_clocks_stopped_is_no_crash_of_the_core(core, caplog):
    # The clocks stop before the core as a session ends, and the roles' exits
    # arrive after: a role paused until then used to crash the core there.
    from choragos.actors.handle import Handle
    from choragos.session import news

    core.state.clocks = Handle("clocks")
    core.state.clocks.close()
    heard = []
    core.handle.tell(m.Subscribe(heard.append))
    for status in ("paused", "exited"):
        core.handle.tell(m.RoleReported(m.RoleView("coder", status, ready=False)))
    wait_until(lambda: [n.view.status for n in heard if isinstance(n, news.RoleChanged)]
               == ["paused", "exited"], 5, message="both changes published")
    assert not [r for r in read_events(core.log) if r["event"] == "actor restarted"]
    refusals = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert refusals == ["clocks is gone: it has stopped; PauseClocks not delivered",
                        "clocks is gone: it has stopped; ResumeClocks not delivered"]
