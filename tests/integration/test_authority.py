"""Who may do what, decided by the caller's process ancestry, never its word."""

from __future__ import annotations

import json
import shlex
import sys

from tests.integration.harness import role_toml

TEAM = (role_toml("orchestrator", "--shell", start=True)
        + role_toml("coder", "--shell", approve=True)
        + role_toml("reviewer", "--shell"))
CLI = f"{shlex.quote(sys.executable)} -m choragos"


def run_inside(s, role: str, args: str, through: str = "") -> dict:
    """Have ``role``'s agent run ``choragos ARGS`` from its own pane (``through``
    another command line, if given); its result."""
    before = len(s.agents("ran", role))
    out = s.cli("keys", role, "--text", f"run: {through}{CLI} {args}", "enter")
    assert out.returncode == 0, out.stderr
    s.wait(lambda: len(s.agents("ran", role)) > before, 20, message=f"{role} to run {args}")
    return json.loads(s.agents("ran", role)[before]["text"])


def test_gate_approve_from_inside_a_role_is_refused_and_from_outside_accepted(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    assert s.cli("delegate", "--to", "coder", "--task", "gated work").returncode == 0
    ran = run_inside(s, "orchestrator", "gate approve T1")
    assert ran["rc"] == 1, ran
    assert "operator command" in ran["out"] and "orchestrator" in ran["out"], ran
    assert s.board()["T1"]["state"] == "gated"
    # A claimed CHORAGOS_ROLE changes nothing either way: the kernel decides.
    ran = run_inside(s, "orchestrator", "gate reject T1")
    assert ran["rc"] == 1 and s.board()["T1"]["state"] == "gated", ran
    out = s.cli("gate", "approve", "T1")
    assert out.returncode == 0, out.stderr
    s.wait(lambda: s.board()["T1"]["state"] in ("queued", "delivered"), message="approved")


def test_operator_verbs_are_refused_from_inside_a_role(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    token = s.workdir / ".choragos" / "state" / "web-token"
    before = token.read_bytes() if token.exists() else None
    # An agent raising its own budget, or the session's, decides what only
    # the operator may: it is refused like the rest.
    for args in ("pause reviewer", "restart reviewer", "reload", "reload --loosen", "shutdown",
                 "keys reviewer --text hi enter", "kill", "budget orchestrator 1000",
                 "budget --session 1000", "resume orchestrator", "cancel T9",
                 "web --rotate"):
        ran = run_inside(s, "orchestrator", args)
        assert ran["rc"] != 0, (args, ran)
        assert "operator command" in ran["out"], (args, ran)
    assert ran["out"] == ("choragos web: web --rotate is an operator command and was sent "
                          "from inside the orchestrator role's process tree; run it from your "
                          "own terminal; the token was not changed\n")
    assert (token.read_bytes() if token.exists() else None) == before  # nobody locked out
    assert s.cli("ping").returncode == 0
    assert not [e for e in s.events() if e["event"] in ("role pause", "role restart", "reload",
                                                          "shutdown requested", "budget set")]


def test_work_done_only_for_the_callers_own_task(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    assert s.cli("delegate", "--to", "reviewer", "--task", "review it").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", message="T1 delivered")
    assert s.cli("delegate", "--to", "coder", "--task", "code it").returncode == 0
    ran = run_inside(s, "coder", "work-done --id T1 --done --task 'stolen'")
    assert ran["rc"] == 1 and "belongs to reviewer" in ran["out"], ran
    assert s.board()["T1"]["state"] == "delivered"
    ran = run_inside(s, "reviewer", "work-done --id T1 --done --task 'reviewed'")
    assert ran["rc"] == 0, ran
    assert s.board()["T1"]["state"] == "done"
    # The orchestrator may close any task, and the log says it did.
    assert s.cli("gate", "approve", "T2").returncode == 0
    s.wait(lambda: s.board()["T2"]["state"] == "delivered", message="T2 delivered")
    ran = run_inside(s, "orchestrator", "work-done --id T2 --done --task 'closed it'")
    assert ran["rc"] == 0, ran
    done = s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T2")
    assert done["by"] == "orchestrator" and done["role"] == "coder"


def test_only_roles_that_can_delegate_may(serve):
    team = (role_toml("orchestrator", "--shell", start=True) + role_toml("coder", "--shell")
            + role_toml("lead", "--shell", can_delegate=True))
    s = serve(team)
    s.wait_booted(["orchestrator", "coder", "lead"])
    ran = run_inside(s, "coder", "delegate --to orchestrator --task 'do my work'")
    assert ran["rc"] == 1 and "may not delegate" in ran["out"], ran
    assert s.board() == {}
    ran = run_inside(s, "lead", "delegate --to coder --task 'from the lead'")
    assert ran["rc"] == 0, ran
    ran = run_inside(s, "orchestrator", "delegate --to coder --task 'from the top'")
    assert ran["rc"] == 0, ran
    assert [t["role"] for t in s.board().values()] == ["coder", "coder"]


def test_gate_approve_from_the_bottom_of_a_deep_chain_inside_a_role_is_refused(serve):
    """Seventy nested shells between the agent and the verb: the old walk gave
    up after 64 ancestors and took the caller for the operator."""
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    assert s.cli("delegate", "--to", "coder", "--task", "gated work").returncode == 0
    (s.workdir / "deep.sh").write_text(
        'n=$1; shift\nif [ "$n" -gt 0 ]; then /bin/sh "$0" $((n - 1)) "$@"; exit $?; fi\n'
        'exec "$@"\n')
    ran = run_inside(s, "orchestrator", "gate approve T1", through="/bin/sh deep.sh 70 ")
    assert ran["rc"] == 1 and "operator command" in ran["out"], ran
    assert s.board()["T1"]["state"] == "gated"
