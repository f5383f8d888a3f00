"""What a reload changes that only the operator may decide, and which of it loosens."""

from dataclasses import replace

from choragos.config.model import (
    BudgetSettings,
    CheckpointSettings,
    Config,
    ProxySettings,
    RoleSpec,
    SphragisSettings,
    UISettings,
    Upstreams,
    WebSettings,
)
from choragos.session.reloadguard import OperatorChange, operator_changes
from choragos.session.reloadplan import plan_reload

ORCH = RoleSpec(name="orchestrator", command="claude", start=True)
CODER = RoleSpec(name="coder", command="claude", approve=True, budget=5.0,
                 budget_action="pause", verify="make test")


def config(*roles, **kw):
    return Config(roles=tuple(roles), **kw)


def changes(old, new):
    return [(c.text, c.loosens) for c in operator_changes(old, new)]


def test_gates_removed_and_budgets_raised_loosen():
    new = replace(CODER, approve=False, budget=50.0, budget_action="notify", verify="")
    assert changes(config(ORCH, CODER), config(ORCH, new)) == [
        ("coder approve true -> false", True), ("coder budget 5 -> 50", True),
        ("coder budget_action 'pause' -> 'notify'", True),
        ("coder verify 'make test' -> ''", True)]


def test_tightening_is_named_but_does_not_loosen():
    new = replace(CODER, budget=2.0, budget_action="block", merge="never")
    assert changes(config(ORCH, CODER), config(ORCH, new)) == [
        ("coder merge 'gate' -> 'never'", False), ("coder budget 5 -> 2", False),
        ("coder budget_action 'pause' -> 'block'", False)]


def test_a_budget_removed_is_raised():
    new = replace(CODER, budget=None)
    assert changes(config(ORCH, CODER), config(ORCH, new)) == [("coder budget 5 -> none", True)]


def test_env_authority_and_host_always_count():
    new = replace(CODER, env_allow=("AWS_*",), can_delegate=True, host="box")
    assert changes(config(ORCH, CODER), config(ORCH, new)) == [
        ("coder can_delegate none -> true", True), ("coder env_allow [] -> [AWS_*]", True),
        ("coder host '' -> 'box'", True)]


def test_an_added_role_says_what_it_runs_and_any_room_beyond_a_worker_s():
    """A role added runs a program with what its env policy lets through: an
    agent that wrote one into the file would reach beyond its own env."""
    added = RoleSpec(name="helper", command="claude", can_delegate=True, env_allow=("*",))
    assert changes(config(ORCH), config(ORCH, added)) == [
        ("helper (added) runs 'claude'", True), ("helper (added) can_delegate true", True),
        ("helper (added) env_allow [*]", True)]
    plain = RoleSpec(name="plain", command="sh", args=("-c", "env"))
    assert changes(config(ORCH), config(ORCH, plain)) == [("plain (added) runs 'sh -c env'", True)]


def test_what_a_role_runs_is_the_operator_s():
    """Its flags hold an agent's permission mode."""
    new = replace(CODER, args=("--dangerously-skip-permissions",))
    assert changes(config(ORCH, CODER), config(ORCH, new)) == [
        ("coder args [] -> [--dangerously-skip-permissions]", True)]


def test_session_budget_and_hooks():
    new = config(ORCH, budget=BudgetSettings(session=None, action="block"),
                 ui=UISettings(on_done="curl http://x"))
    old = config(ORCH, budget=BudgetSettings(session=20.0))
    assert changes(old, new) == [
        ("[budget] session 20 -> none", True), ("[budget] action 'pause' -> 'block'", False),
        ("[ui] on_done '' -> 'curl http://x' (applies after a restart)", True)]


def test_the_start_role_s_changes_are_named_as_waiting_for_a_restart():
    new_orch = replace(ORCH, env_allow=("GITHUB_TOKEN",))
    assert changes(config(ORCH), config(new_orch)) == [
        ("orchestrator env_allow [] -> [GITHUB_TOKEN] (applies after a restart)", True)]


def test_the_plan_carries_them_and_lists_the_loosened():
    new = replace(CODER, approve=False, budget=1.0)
    plan = plan_reload(config(ORCH, CODER), config(ORCH, new), busy=set())
    assert plan.operator == [OperatorChange("coder approve true -> false", True),
                             OperatorChange("coder budget 5 -> 1", False)]
    assert plan.loosened == ["coder approve true -> false"]
    assert plan.summary()["operator"] == ["coder approve true -> false", "coder budget 5 -> 1"]
    assert plan.summary()["loosened"] == ["coder approve true -> false"]


def test_an_unchanged_file_changes_nothing_of_the_operator_s():
    assert changes(config(ORCH, CODER), config(ORCH, CODER)) == []


def test_what_a_restart_would_apply_is_named_too():
    """Checkpoints off, the gateway's upstream moved, the web view opened:
    read at the start only, but the next start applies them."""
    new = config(ORCH, checkpoints=CheckpointSettings(enabled=False),
                 sphragis=SphragisSettings(enabled=True, fail_closed=True),
                 web=WebSettings(listen="0.0.0.0:80"),
                 gateway=ProxySettings(upstream=Upstreams(anthropic="http://elsewhere")))
    assert changes(config(ORCH), new) == [
        ("[sphragis] enabled none -> true (applies after a restart)", False),
        ("[checkpoints] enabled true -> false (applies after a restart)", True),
        ("[web] listen '' -> '0.0.0.0:80' (applies after a restart)", True),
        ("[gateway] upstream changed (applies after a restart)", True)]


def test_a_new_start_role_is_named_as_waiting_for_a_restart():
    """A reload never changes the start role (the plan keeps the old one)."""
    lead = RoleSpec(name="lead", command="claude", start=True)
    assert changes(config(ORCH), config(lead)) == [
        ("lead (added) runs 'claude' (applies after a restart)", True)]
