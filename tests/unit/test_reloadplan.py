from dataclasses import fields, replace

from choragos.config.model import CheckpointSettings, Config, MetricsSettings, RoleSpec
from choragos.session.reloadplan import SECTIONS, plan_reload

ORCH = RoleSpec(name="orchestrator", command="claude", start=True)
CODER = RoleSpec(name="coder", command="claude", model="opus")
REVIEWER = RoleSpec(name="reviewer", command="gemini")


def config(*roles, **kw):
    return Config(roles=tuple(roles), **kw)


def test_added_removed_respawned_updated():
    old = config(ORCH, CODER, REVIEWER)
    new = config(ORCH, replace(CODER, model="sonnet"),
                 RoleSpec(name="auditor", command="claude"))
    plan = plan_reload(old, new, busy=set())
    assert [r.name for r in plan.add] == ["auditor"]
    assert plan.remove == ["reviewer"]
    assert [r.name for r in plan.respawn] == ["coder"]
    assert [r.name for r in plan.config.roles] == ["orchestrator", "coder", "auditor"]


def test_prompt_and_approve_apply_in_place():
    new_coder = replace(CODER, prompt_template="new words", approve=True, restart="always")
    plan = plan_reload(config(ORCH, CODER), config(ORCH, new_coder), busy=set())
    assert [r.name for r in plan.update] == ["coder"] and not plan.respawn
    assert plan.config.role("coder").approve


def test_busy_role_is_not_respawned():
    plan = plan_reload(config(ORCH, CODER), config(ORCH, replace(CODER, args=("-x",))),
                       busy={"coder"})
    assert not plan.respawn and "coder" in plan.refused[0]
    assert plan.config.role("coder") == CODER


def test_start_role_is_never_touched():
    new_orch = replace(ORCH, model="haiku")
    plan = plan_reload(config(ORCH, CODER), config(new_orch, CODER), busy=set())
    assert plan.config.start_role == ORCH
    assert not plan.changed and "never changed" in plan.notes[0]


def test_moving_start_keeps_the_old_orchestrator():
    new = config(replace(ORCH, start=False), replace(CODER, start=True))
    plan = plan_reload(config(ORCH, CODER), new, busy=set())
    assert plan.config.start_role.name == "orchestrator"
    assert "coder" in plan.remove


def test_other_sections_need_a_restart():
    plan = plan_reload(config(ORCH), config(ORCH, checkpoints=CheckpointSettings(keep=3)),
                       busy=set())
    assert plan.notes == ["[checkpoints] changed; it applies after a restart"]


def test_a_changed_metrics_listener_is_not_passed_over_in_silence():
    new = config(ORCH, metrics=MetricsSettings(listen="127.0.0.1:9464"))
    plan = plan_reload(config(ORCH), new, busy=set())
    assert plan.notes == ["[metrics] changed; it applies after a restart"]


def test_every_section_of_the_config_is_either_reloaded_or_said_to_need_a_restart():
    """A section added to the config later cannot be left out of the reload's notes."""
    converged = {"roles", "budget", "source", "user_source", "warnings"}  # files, not sections
    assert {f.name for f in fields(Config)} - converged == set(SECTIONS)
