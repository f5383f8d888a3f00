"""A role that has not run yet is ``starting``, never ``exited``: the state a
role's actor, the core's seat, the start's wait and the deck begin from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from choragos.actors import messages as m
from choragos.actors.role import RoleActor, new_state, spec_profile
from choragos.actors.rolehost import RoleHost
from choragos.actors.startwatch import outcome
from choragos.config.model import RoleSpec
from choragos.roles.launch import Launch
from choragos.roles.rolestatus import ALLOWED, IllegalTransition, RoleStatus, check
from choragos.session.news import RoleView
from choragos.terminal.ptyproc import SpawnError
from tests.fakehost import Core, FakeClock, FakeTimers, Inbox
from ui.deckstate import RoleInfo
from ui.theme import STATE_DOT, STATE_STYLE


def _cannot_spawn(*args: Any, **kwargs: Any) -> Any:
    raise SpawnError("agent: command not found")


def test_a_new_role_is_starting_and_a_failed_first_spawn_says_failed(tmp_path: Path) -> None:
    spec = RoleSpec(name="coder", command="agent", args=())
    state = new_state(Launch(spec, {}, tmp_path, spec_profile(spec)), tmp_path)
    assert state.status is RoleStatus.STARTING
    core = Core()
    host = RoleHost(now=FakeClock().now, spawn=_cannot_spawn, reader=_cannot_spawn)
    actor = RoleActor(state, core, FakeTimers(FakeClock()), None, Inbox(), host)
    actor.handle(m.Spawn())
    view = core.view()
    assert view is not None and view.status is RoleStatus.FAILED
    assert "command not found" in view.detail


def test_starting_leads_only_forward_and_nothing_leads_back_to_it() -> None:
    for later in (RoleStatus.BOOTING, RoleStatus.FAILED, RoleStatus.EXITED):
        check(RoleStatus.STARTING, later)
    for state in RoleStatus:
        if state is not RoleStatus.STARTING:
            assert RoleStatus.STARTING not in ALLOWED[state]
    with pytest.raises(IllegalTransition):
        check(RoleStatus.STARTING, RoleStatus.IDLE)


def test_the_start_waits_on_a_starting_role_rather_than_calling_it_failed() -> None:
    assert outcome(RoleView(name="lead", status=RoleStatus.STARTING)) == "booting"


def test_the_deck_begins_from_starting_and_draws_it() -> None:
    assert RoleInfo("coder").status is RoleStatus.STARTING
    assert set(STATE_STYLE) == set(RoleStatus) == set(STATE_DOT)
