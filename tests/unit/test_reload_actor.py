"""The reload actor (actors/reload.py): a plan in, the steps on the team out,
in order, with no PTY and no session: the team is a recording fake."""

from __future__ import annotations

from dataclasses import replace

import pykka
import pytest

from choragos.actors import messages as m
from choragos.actors.handle import Handle
from choragos.actors.reload import ReloadActor, Step, plan_from_file, steps
from choragos.config.model import Config, ConfigError, RoleSpec
from choragos.session.reloadplan import ReloadPlan, plan_reload
from tests.conftest import wait_until

ORCH = RoleSpec(name="orchestrator", command="claude", start=True)
CODER = RoleSpec(name="coder", command="claude", model="opus")
REVIEWER = RoleSpec(name="reviewer", command="gemini")
AUDITOR = RoleSpec(name="auditor", command="claude")


def config(*roles: RoleSpec) -> Config:
    return Config(roles=roles)


class FakeTeam:
    """Records every call a reload makes on the team."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, action: str):
        return lambda *args: self.calls.append((action, *args))


def test_a_plan_becomes_its_steps_in_order():
    plan = plan_reload(config(ORCH, CODER, REVIEWER),
                       config(ORCH, replace(CODER, model="sonnet"), AUDITOR,
                              replace(REVIEWER, prompt_template="Be strict.")), busy=set())
    handle = Handle("role:auditor")
    assert steps(plan, {"auditor": handle}) == [
        Step("use_config", (plan.config,)),
        Step("write_briefs", (plan.config,)),  # before the added role boots and reads it
        Step("add", (AUDITOR, handle)),
        Step("respawn", (replace(CODER, model="sonnet"),)),
        Step("update", (replace(REVIEWER, prompt_template="Be strict."),)),
        Step("announce", (["auditor"], [])),  # last: the briefs name the new team
    ]


def test_a_removal_stops_the_role_and_tells_the_team_after_the_briefs():
    plan = plan_reload(config(ORCH, CODER, REVIEWER), config(ORCH, CODER), busy=set())
    assert [step.action for step in steps(plan)] == [
        "use_config", "write_briefs", "remove", "announce"]
    assert steps(plan)[2] == Step("remove", (["reviewer"],))
    assert steps(plan)[-1] == Step("announce", ([], ["reviewer"]))


def test_a_change_in_place_rewrites_the_briefs_and_tells_nobody():
    """The brief holds the whole prompt (the boot line only its first 600
    characters) and the orchestrator's lists each worker's approve: before,
    a changed prompt left the brief on disk saying the old one."""
    plan = plan_reload(config(ORCH, CODER), config(ORCH, replace(CODER, approve=True)),
                       busy=set())
    assert steps(plan) == [Step("use_config", (plan.config,)),
                           Step("write_briefs", (plan.config,)),
                           Step("update", (plan.update[0],))]


def test_an_empty_plan_only_carries_the_config():
    plan = ReloadPlan(config=config(ORCH))
    assert steps(plan) == [Step("use_config", (plan.config,))]


def test_every_step_names_a_method_of_the_team():
    from choragos.actors.crew import Crew
    from choragos.actors.reload import Team

    plan = plan_reload(config(ORCH, CODER, REVIEWER), config(ORCH, AUDITOR,
                                                            replace(CODER, model="x")),
                       busy=set())
    for step in steps(plan):
        assert callable(getattr(Crew, step.action)), step.action
        assert hasattr(Team, step.action), step.action


@pytest.mark.timeout(30)
def test_the_actor_takes_the_steps_on_its_team_as_told():
    team = FakeTeam()
    plan = plan_reload(config(ORCH, CODER), config(ORCH, CODER, AUDITOR), busy=set())
    handle = Handle("role:auditor")
    ref = ReloadActor.start(team)
    try:
        ref.tell(m.ApplyReload(plan, {"auditor": handle}))
        wait_until(lambda: len(team.calls) == 4, 10, message="the four steps")
    finally:
        ref.stop()
    assert team.calls == [("use_config", plan.config), ("write_briefs", plan.config),
                          ("add", AUDITOR, handle), ("announce", ["auditor"], [])]
    assert not pykka.ActorRegistry.get_all()


def test_the_plan_is_read_from_the_running_configs_file(tmp_path):
    source = tmp_path / ".choragos.toml"
    source.write_text('[[roles]]\nname = "orchestrator"\ncommand = "claude"\nstart = true\n'
                      '[[roles]]\nname = "coder"\ncommand = "claude"\n')
    from choragos.config.model import load_config

    running = load_config(None, tmp_path)
    source.write_text(source.read_text() + '[[roles]]\nname = "auditor"\ncommand = "claude"\n')
    plan = plan_from_file(running, tmp_path, busy=set())
    assert [spec.name for spec in plan.add] == ["auditor"]
    source.write_text(source.read_text() + 'timeout = "45x"\n')
    with pytest.raises(ConfigError):
        plan_from_file(running, tmp_path, busy=set())


def test_an_updated_remote_role_s_ssh_gets_no_more_of_the_role_s_env(tmp_path):
    """At its start a remote role's local process (ssh) gets only what ssh
    needs; before, a reload's update handed it the role's whole env (its
    gateway key, CHORAGOS_SOCK, what env_allow let through)."""
    from types import SimpleNamespace

    from choragos.actors.crew import Crew
    from choragos.remote.seat import SSH_ENV

    told: list = []
    roles = SimpleNamespace(tell=lambda name, message: told.append((name, message)))
    crew = Crew(config(ORCH, CODER), tmp_path, tmp_path / "s.sock", (80, 24), roles,
                lambda *a, **k: None)
    remote = replace(CODER, host="box")
    crew.remote = SimpleNamespace(seats={"coder": object()})
    crew.update(remote)
    crew.update(REVIEWER)  # a local role keeps its whole env
    (name, update), (_, local) = told
    assert name == "coder" and update.spec.host == "box"
    assert set(update.env) <= set(SSH_ENV) and "PATH" in update.env
    assert "CHORAGOS_SOCK" in local.env
