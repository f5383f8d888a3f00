"""The core's ``rollback`` command, over the real socket of a real session."""

from __future__ import annotations

import json
import shlex
import sys

from choragos import wire
from tests.integration.harness import role_toml

TEAM = role_toml("orchestrator", "--shell", start=True) + role_toml("coder", "--shell")


def ask(s, request: dict) -> dict:
    return wire.request(s.sock, request, 15.0, workdir=s.workdir)


def checkpointed_task(s) -> str:
    """T1 delegated (so checkpointed), then the files changed as a worker would."""
    assert s.cli("delegate", "--to", "coder", "--task", "Rewrite the README").returncode == 0
    s.wait(lambda: s.board()["T1"].get("checkpoint"), message="T1's checkpoint")
    (s.workdir / "README.md").write_text("wrecked\n")
    (s.workdir / "stray.txt").write_text("new\n")
    return s.board()["T1"]["checkpoint"]


def test_a_dry_run_plans_and_the_rollback_restores_and_is_logged(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    before = (s.workdir / "README.md").read_text()
    ref = checkpointed_task(s)
    plan = ask(s, {"cmd": "rollback", "target": "T1", "dry_run": True})
    assert plan["status"] == "ok" and plan["checkpoint"] == ref, plan
    assert plan["restore"] == ["README.md"] and plan["delete"] == ["stray.txt"], plan
    assert not plan["empty"] and not plan["conflicts"]
    assert (s.workdir / "README.md").read_text() == "wrecked\n"  # a dry run changes nothing
    assert not [e for e in s.events() if e["event"].startswith("rollback")]

    done = ask(s, {"cmd": "rollback", "target": plan["checkpoint"]})
    assert done["status"] == "ok", done
    assert (done["restored"], done["deleted"], done["saved"]) == (1, 1, "pre-rollback-T1")
    assert (s.workdir / "README.md").read_text() == before
    assert not (s.workdir / "stray.txt").exists()
    (logged,) = [e for e in s.events() if e["event"] == "rollback"]
    assert (logged["task"], logged["checkpoint"], logged["by"]) == ("T1", ref, "operator")


def test_bad_targets_get_a_clear_error_and_change_nothing(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    checkpointed_task(s)
    for request, words in (({"cmd": "rollback"}, 'needs "target"'),
                           ({"cmd": "rollback", "target": "T1 T2"}, "no checkpoint for 'T1 T2'"),
                           ({"cmd": "rollback", "target": "T1", "dry_run": "yes"},
                            '"dry_run" must be true or false'),
                           ({"cmd": "rollback", "target": "T99"}, "no checkpoint for")):
        ack = ask(s, request)
        assert ack["status"] == "error" and words in ack["error"], (request, ack)
    assert (s.workdir / "README.md").read_text() == "wrecked\n"
    assert (s.workdir / "stray.txt").exists()
    assert [e["target"] for e in s.events() if e["event"] == "rollback failed"] == ["T1 T2", "T99"]


def test_a_role_may_not_roll_back(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    checkpointed_task(s)
    code = ("import json,os; from pathlib import Path; from choragos import wire; "
            "print(json.dumps(wire.request(Path(os.environ['CHORAGOS_SOCK']), "
            "{'cmd': 'rollback', 'target': 'T1'}, 10.0)))")
    before = len(s.agents("ran", "orchestrator"))
    line = f"run: {shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    assert s.cli("keys", "orchestrator", "--text", line, "enter").returncode == 0
    s.wait(lambda: len(s.agents("ran", "orchestrator")) > before, 20, message="the run")
    ran = json.loads(s.agents("ran", "orchestrator")[before]["text"])
    assert "operator command" in ran["out"], ran
    assert (s.workdir / "README.md").read_text() == "wrecked\n"
    assert not [e for e in s.events() if e["event"] == "rollback"]
