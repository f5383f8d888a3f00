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


def test_a_changed_host_or_worktree_waits_for_a_restart():
    """A role's seat and tree are made when it starts: before, the change was
    'updated' in place and the role went on where it was."""
    for key, value in (("host", "box"), ("worktree", True)):
        new = replace(CODER, prompt_template="x", **{key: value})
        plan = plan_reload(config(ORCH, CODER), config(ORCH, new), busy=set())
        assert not plan.changed and plan.config.role("coder") == CODER
        assert plan.refused == ["coder: a changed host or worktree applies after a restart "
                                "of the session; coder kept running as it was"]


def test_a_remote_role_s_process_change_waits_for_a_restart():
    """A remote role's command on its host is made with its seat: before, a
    changed model was 'respawned' while the host ran the old command line."""
    remote = replace(CODER, host="box", worktree=False)
    plan = plan_reload(config(ORCH, remote), config(ORCH, replace(remote, model="sonnet")),
                       busy=set())
    assert not plan.respawn and plan.config.role("coder") == remote
    assert plan.refused[0].startswith("coder runs on box: a changed command, args, model")
    prompt = plan_reload(config(ORCH, remote),
                         config(ORCH, replace(remote, prompt_template="new")), busy=set())
    assert [r.name for r in prompt.update] == ["coder"]  # what is typed still applies


def test_a_paused_role_is_not_respawned():
    """A respawn starts a running process: before, a role the operator paused
    came back running from a reload, its journal still saying paused."""
    new = replace(CODER, args=("-x",))
    plan = plan_reload(config(ORCH, CODER), config(ORCH, new), busy=set(), paused=["coder"])
    assert not plan.respawn and plan.config.role("coder") == CODER
    assert plan.refused == ["coder is paused: a respawn would resume it; "
                            "`choragos resume coder`, then reload again"]
    in_place = plan_reload(config(ORCH, CODER), config(ORCH, replace(CODER, approve=True)),
                           busy=set(), paused=["coder"])
    assert [r.name for r in in_place.update] == ["coder"]  # nothing restarts


def test_the_limit_waits_apply_now_and_the_rest_of_ui_after_a_restart():
    """The core reads the limit waits at each limit (LimitFlow.reconfigured):
    before, the plan kept the running [ui] whole, so a reload said nothing
    applied while the core's re-read of them found the old values."""
    old = config(ORCH)
    waits = replace(old.ui, limit_wait=5.0)
    plan = plan_reload(old, config(ORCH, ui=waits), busy=set())
    assert plan.config.ui.limit_wait == 5.0
    assert plan.notes == ["[ui] limit_wait changed; the next provider limit uses it"]
    both = replace(waits, idle_after=30.0)
    plan = plan_reload(old, config(ORCH, ui=both), busy=set())
    assert plan.config.ui == waits  # idle_after waits for a restart
    assert plan.notes == ["[ui] limit_wait changed; the next provider limit uses it",
                          "[ui] changed; it applies after a restart"]
