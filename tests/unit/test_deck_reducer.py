"""The deck's reducer: typed news -> a new deck state and effects, without urwid."""

from __future__ import annotations

import subprocess
import sys

import pytest

from choragos.board.tasks import Task, TaskState
from choragos.config.model import Config, RoleSpec
from choragos.roles.rolestatus import RoleStatus
from choragos.session import news
from choragos.session.news import RoleView
from choragos.ui import reducer as r
from choragos.ui.deckstate import initial_state


def state():
    config = Config(roles=(RoleSpec("orchestrator", "sh", start=True),
                           RoleSpec("coder", "sh", model="m1")))
    return initial_state(config, True)


def test_the_reducer_and_the_news_import_no_urwid_and_no_pykka():
    code = ("import sys; import choragos.ui.reducer, choragos.session.news; "
            "print('urwid' in sys.modules, 'pykka' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.split() == ["False", "False"]


def test_a_role_view_makes_a_new_state_and_leaves_the_old_one_alone():
    before = state()
    after, effects = r.reduce(before, news.RoleChanged(RoleView("coder", RoleStatus.WORKING,
                                                                pid=7, restarts=1)))
    assert before.roles["coder"].status is RoleStatus.STARTING and before.roles["coder"].news == 0
    info = after.roles["coder"]
    assert (info.status, info.pid, info.restarts, info.news, info.model) == (
        RoleStatus.WORKING, 7, 1, 1, "m1")
    assert effects == []


def test_a_role_starting_to_wait_asks_for_focus_once():
    s, effects = r.reduce(state(), news.RoleChanged(RoleView("coder", "waiting")))
    assert effects == [r.AutoFocus("coder")] and s.roles["coder"].status is RoleStatus.WAITING
    s, effects = r.reduce(s, news.RoleChanged(RoleView("coder", "waiting", detail="still")))
    assert effects == []


def test_a_role_the_deck_never_saw_joins_the_roster():
    s, effects = r.reduce(state(), news.RoleChanged(RoleView("tester", "idle")))
    assert "tester" in s.roles
    assert effects == [r.FollowRoster(("orchestrator", "coder", "tester"))]


def task(task_id: str, state: TaskState, role: str = "coder") -> Task:
    return Task(task_id, role, "x", state=state)


def test_a_gate_opens_and_its_task_news_closes_it():
    gate = news.GateView(task("T1", TaskState.GATED))
    s, effects = r.reduce(state(), news.GateOpened(gate))
    assert list(s.gates) == ["T1"]
    assert {key: s.tasks["T1"][key] for key in ("id", "role", "state", "label")} == {
        "id": "T1", "role": "coder", "state": "gated", "label": "x"}
    assert effects == [r.RefreshBoard(), r.ShowGate()]
    s = s.__class__(**{**vars(s), "dismissed": {"T1"}})
    s, effects = r.reduce(s, news.TaskChanged(task("T1", TaskState.QUEUED)))
    assert not s.gates and not s.dismissed
    assert effects == [r.RefreshBoard(), r.CloseGate("T1")]


def test_a_merge_gate_stays_until_it_is_closed_and_keeps_the_task_off_the_board():
    gate = news.GateView(task("T2", TaskState.DONE), "merge", diff="d", branch="b")
    s, _ = r.reduce(state(), news.GateOpened(gate))
    assert "T2" not in s.tasks
    assert (s.gates["T2"]["kind"], s.gates["T2"]["branch"]) == ("merge", "b")
    s, _ = r.reduce(s, news.TaskChanged(task("T2", TaskState.DONE)))
    assert list(s.gates) == ["T2"]
    s, effects = r.reduce(s, news.GateClosed("T2"))
    assert not s.gates and effects == [r.CloseGate("T2")]


def test_a_delivered_task_focuses_its_role():
    _, effects = r.reduce(state(), news.TaskChanged(task("T3", TaskState.DELIVERED)))
    assert r.AutoFocus("coder") in effects


def test_events_bell_gateway_tokens_and_marks():
    s = state()
    assert r.reduce(s, news.EventLogged("reload"))[1] == [r.Resync()]
    assert r.reduce(s, news.EventLogged("work-done"))[1] == [
        r.AutoFocus("orchestrator")]
    assert r.reduce(s, news.EventLogged("delegate"))[1] == []
    assert r.reduce(s, news.Bell("coder", "on_gate"))[1] == [r.Ring()]
    assert r.reduce(s, news.GatewayChanged("down"))[0].gateway == "down"
    usage = news.RoleUsage({"input": 5}, 0.1)
    quiet = news.RoleUsage({"input": 0})
    after = r.reduce(s, news.TokensChanged({"coder": usage, "orchestrator": quiet}))[0]
    assert after.roles["coder"].usage == {"tokens": {"input": 5}, "cost": 0.1, "estimated": [],
                                          "budget": None}
    assert after.roles["orchestrator"].usage is None
    marked = r.reduce(s, news.MarksChanged({"coder": ("stalled",)}))[0]
    assert marked.roles["coder"].extra["marks"] == ("stalled",)
    assert marked.roles["orchestrator"].extra["marks"] == ()
    assert s.roles["coder"].extra == {}  # the old state is untouched


def test_anything_else_is_refused():
    try:
        r.reduce(state(), ("role", None))
    except TypeError as exc:
        assert "tuple" in str(exc)
    else:
        raise AssertionError("an untyped item was accepted")


def test_a_full_status_fills_in_roles_but_never_overwrites_a_fresher_view():
    s, _ = r.reduce(state(), news.RoleChanged(RoleView("coder", "working", pid=7)))
    asked = {"orchestrator": 0, "coder": 0}  # asked before coder's view arrived
    rows = [{"name": "orchestrator", "state": "idle", "pid": 3, "model": "big"},
            {"name": "coder", "state": "booting", "pid": None, "model": "m2"}]
    after, effects = r.merge_status(s, rows, asked)
    assert after.roles["orchestrator"].status is RoleStatus.IDLE
    assert after.roles["orchestrator"].pid == 3 and after.roles["orchestrator"].model == "big"
    coder = after.roles["coder"]
    assert (coder.status, coder.pid, coder.model) == (RoleStatus.WORKING, 7, "m2")
    assert effects == [r.FollowRoster(("orchestrator", "coder"))]


def test_a_full_status_drops_roles_the_session_no_longer_has():
    after, effects = r.merge_status(state(), [{"name": "coder", "state": "idle"}], {})
    assert list(after.roles) == ["coder"] and effects == [r.FollowRoster(("coder",))]
    same, none = r.merge_status(state(), [], {})
    assert none == [] and list(same.roles) == ["orchestrator", "coder"]


def test_the_decks_board_keeps_as_many_resolved_tasks_as_the_cores():
    from choragos.board.tasks import KEEP_RESOLVED

    s = state()
    s, _ = r.reduce(s, news.TaskChanged(task("T1", TaskState.DELIVERED)))
    for n in range(2, KEEP_RESOLVED + 32):
        s, _ = r.reduce(s, news.TaskChanged(task(f"T{n}", TaskState.DONE)))
    resolved = sorted((tid for tid, t in s.tasks.items() if t["state"] == "done"),
                      key=lambda tid: int(tid[1:]))
    assert len(resolved) == KEEP_RESOLVED
    assert resolved[0] == "T32" and resolved[-1] == f"T{KEEP_RESOLVED + 31}"
    assert s.tasks["T1"]["state"] == "delivered"  # work in hand is never dropped


def test_a_remote_roles_card_names_its_host_from_the_config_and_the_status():
    from choragos.ui.sidebar import card

    config = Config(roles=(RoleSpec("coder", "sh", host="box"), RoleSpec("local", "sh")))
    s = initial_state(config, True)
    assert s.roles["coder"].host == "box" and s.roles["local"].host == ""
    after, _ = r.merge_status(s, [{"name": "coder", "state": "idle", "host": "gpu"},
                                  {"name": "local", "state": "idle", "host": ""}], {})

    def text(name: str) -> str:
        lines = card(after.roles[name], 1, 60, focused=False, shown=True, task=None,
                     preview_lines=0)
        return "\n".join("".join(str(piece) for piece in line) for line in lines)

    assert "@gpu" in text("coder")
    assert "@" not in text("local")


# -- what the deck itself learnt, as a table: (before, item) -> (after, effects) ----------

_GATE = {"id": "T1", "role": "coder", "state": "gated", "label": "x"}
_TASK = {"id": "T1", "role": "coder", "state": "gated", "brief": "b.md"}


def _with(**fields):
    """The test state with ``fields`` replaced."""
    from collections import OrderedDict
    from dataclasses import replace

    if "gates" in fields:
        fields["gates"] = OrderedDict(fields["gates"])
    return replace(state(), **fields)


@pytest.mark.parametrize(("before", "item", "expect", "effects"), [
    (_with(), r.BoardRead(({"id": "T1", "role": "coder"}, {"id": "T2", "role": "coder"})),
     {"tasks": ["T1", "T2"]}, []),
    (_with(tasks={"T1": {"id": "T1", "state": "queued"}}),
     r.BoardRead(({"id": "T1", "state": "done"},)), {"task T1": "done"}, []),
    (_with(), r.BoardRead(()), {"tasks": []}, []),
    (_with(tasks={"T1": _TASK}), r.GatesRead((_GATE,)),
     {"gates": ["T1"], "gate T1 brief": "b.md"}, [r.ShowGate()]),
    (_with(), r.GatesRead(()), {"gates": []}, [r.ShowGate()]),
    (_with(gates={"T1": _GATE}), r.GateDismissed("T1"),
     {"gates": ["T1"], "dismissed": {"T1"}}, []),
    (_with(gates={"T1": _GATE, "T2": {**_GATE, "id": "T2"}}, dismissed={"T1"}),
     r.GateDecided("T2"), {"gates": ["T1"], "dismissed": {"T1"}}, []),
    (_with(), r.GateDecided("T9"), {"gates": []}, []),
    (_with(), r.StatusRead(({"name": "coder", "state": "idle", "pid": 4},), {"coder": 0}),
     {"roles": ["coder"], "coder": ("idle", 4)}, [r.FollowRoster(("coder",))]),
    (_with(), r.StatusRead((), {}), {"roles": ["orchestrator", "coder"]}, []),
], ids=["board-adds", "board-replaces", "board-empty", "gates-take-their-task",
        "gates-none-still-show", "dismissed", "decided", "decided-unknown", "status",
        "status-empty"])
def test_what_the_deck_learnt_goes_through_the_reducer(before, item, expect, effects):
    frozen = (dict(before.tasks), dict(before.gates), set(before.dismissed))
    after, got = r.reduce(before, item)
    assert got == effects
    seen = {"tasks": list(after.tasks), "gates": list(after.gates),
            "dismissed": after.dismissed, "roles": list(after.roles)}
    for key, value in expect.items():
        if key.startswith("task "):
            assert after.tasks[key[5:]]["state"] == value
        elif key.startswith("gate "):
            assert after.gates["T1"]["brief"] == value
        elif key in seen:
            assert seen[key] == value, key
        else:
            info = after.roles[key]
            assert (info.status, info.pid) == value
    assert (before.tasks, dict(before.gates), before.dismissed) == frozen  # untouched


def test_the_model_is_the_one_writer_and_saves_a_changed_layout_once():
    from choragos.ui.deckmodel import DeckModel

    model = DeckModel(state())
    first = model.state
    opened = news.GateOpened(news.GateView(task("T1", TaskState.GATED)))
    assert model.apply(opened) == [r.RefreshBoard(), r.ShowGate()]
    assert model.state is not first and list(model.state.gates) == ["T1"]
    assert model.apply(r.GateDismissed("T1")) == [] and model.state.dismissed == {"T1"}
    assert model.layout_to_save() is None  # nothing changed since the start
    model.state.layout.toggle_zoom()
    saved = model.layout_to_save()
    assert saved is not None and saved["zoomed"]
    assert model.layout_to_save() is None


def test_the_model_starts_with_a_saved_layout_or_the_default_when_it_is_bad():
    from choragos.ui.deckmodel import DeckModel

    zoomed = DeckModel(state())
    zoomed.state.layout.toggle_zoom()
    saved = zoomed.state.layout.to_dict()
    assert DeckModel(state(), saved).state.layout.zoomed
    assert not DeckModel(state(), {"tree": "nonsense"}).state.layout.zoomed
