"""Live reload through a real session: converge [[roles]] by name."""

from __future__ import annotations

import json

from tests.conftest import pid_alive
from tests.integration.harness import Serve, role_toml


def states(s: Serve) -> dict[str, str]:
    out = s.cli("status", "--json")
    return {r["name"]: r["state"] for r in json.loads(out.stdout)["roles"]}


def test_reload_adds_removes_and_updates(serve):
    orch = role_toml("orchestrator", start=True)
    s = serve(orch + role_toml("coder") + role_toml("reviewer"))
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    coder_pid = s.agents("start", "coder")[0]["text"]
    (s.workdir / ".choragos.toml").write_text(
        orch + role_toml("reviewer", prompt_template="Be strict.") + role_toml("auditor"))
    out = s.cli("reload")  # a role added runs a program: the operator's to confirm
    assert out.returncode == 1 and "auditor (added) runs" in out.stderr, out.stderr
    out = s.cli("reload", "--loosen")
    assert out.returncode == 0, out.stderr
    assert "added auditor" in out.stdout and "removed coder" in out.stdout
    assert "updated reviewer" in out.stdout
    s.wait_booted(["auditor"])
    s.wait(lambda: "coder" not in states(s), 10, "coder to leave the roster")
    s.wait(lambda: any(e["event"] == "role removed" and e["role"] == "coder"
                       for e in s.events()), 15, "coder stopped")
    s.wait(lambda: any("The team changed (added auditor; removed coder)" in line
                       for line in s.submitted("orchestrator")), 15, "the team notice")
    assert "| auditor |" in (s.workdir / ".choragos/briefs/orchestrator.md").read_text()
    assert "| coder |" not in (s.workdir / ".choragos/briefs/orchestrator.md").read_text()
    assert len(s.agents("start", "reviewer")) == 1  # updated in place, not respawned
    assert not pid_alive(int(coder_pid))


def test_reload_respawns_on_changed_args_but_not_with_work_in_flight(serve):
    orch = role_toml("orchestrator", start=True)
    s = serve(orch + role_toml("coder"))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "long job")
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 15, "delivery")
    (s.workdir / ".choragos.toml").write_text(orch + role_toml("coder", "--boot", "0.1"))
    out = s.cli("reload", "--loosen")  # what a role runs is the operator's
    assert out.returncode == 0 and "unresolved delegation" in out.stdout
    assert len(s.agents("start", "coder")) == 1
    s.cli("work-done", "--id", "T1", "--task", "done")
    s.wait(lambda: s.board()["T1"]["state"] == "done", 10, "T1 done")
    out = s.cli("reload", "--loosen")
    assert "respawned coder" in out.stdout, out.stdout
    s.wait(lambda: len(s.agents("start", "coder")) == 2, 15, "the respawn")


def test_reload_with_a_broken_config_changes_nothing(serve):
    orch = role_toml("orchestrator", start=True)
    s = serve(orch + role_toml("coder"))
    s.wait_booted(["orchestrator", "coder"])
    (s.workdir / ".choragos.toml").write_text(orch + role_toml("coder", timeout="45x"))
    out = s.cli("reload")
    assert out.returncode == 1
    assert "nothing changed" in out.stderr and "roles[2].timeout" in out.stderr
    assert states(s) == {"orchestrator": "idle", "coder": "idle"}


def test_reload_with_a_user_config_it_cannot_look_at_changes_nothing(short_tmp):
    """The user's file turned unreadable under a running session (here: its
    folder a link to a name too long to look up; a folder chmod 000 is the
    everyday case): the reload is refused in a sentence.  Before, stat's
    OSError came out of the loader and crashed the session's core."""
    work, xdg = short_tmp / "work", short_tmp / "xdg"
    work.mkdir()
    xdg.mkdir()
    s = Serve(work, role_toml("orchestrator", start=True) + role_toml("coder"),
              sock=short_tmp / "s.sock")
    s.env["XDG_CONFIG_HOME"] = str(xdg)
    s.start()
    try:
        s.wait_booted(["orchestrator", "coder"])
        (xdg / "choragos").symlink_to("/" + "x" * 300)
        out = s.cli("reload")
        assert out.returncode == 1
        assert out.stderr == ("choragos reload: the session refused: the config has errors, "
                              f"nothing changed: {xdg}/choragos/config.toml: cannot read: File "
                              "name too long\n")
        assert states(s) == {"orchestrator": "idle", "coder": "idle"}
        assert [e["errors"] for e in s.events() if e["event"] == "reload refused"] == [
            [f"{xdg}/choragos/config.toml: cannot read: File name too long"]]
    finally:
        assert s.stop() == 0


def test_builtin_team_without_binaries(short_tmp):
    """No config and no claude on PATH: roles fail with a reason, the session lives."""
    work = short_tmp / "work"
    work.mkdir()
    s = Serve(work, "", sock=short_tmp / "s.sock")
    (work / ".choragos.toml").unlink()
    s.start()
    try:
        s.wait(lambda: set(states(s).values()) == {"failed"}, 15, "every role failed")
        status = json.loads(s.cli("status", "--json").stdout)["roles"]
        assert "not found on PATH" in status[0]["detail"]
        out = s.cli("reload")
        assert out.returncode == 1 and "built-in team" in out.stderr
        assert s.cli("ping").returncode == 0
    finally:
        assert s.stop() == 0


def test_a_role_a_reload_adds_takes_work_sent_before_its_actor_runs(serve):
    """The core hands out the new role's address at once; what is sent to it
    before the reload actor has started it waits in that address."""
    orch = role_toml("orchestrator", start=True)
    s = serve(orch)
    s.wait_booted(["orchestrator"])
    (s.workdir / ".choragos.toml").write_text(orch + role_toml("auditor"))
    assert s.cli("reload", "--loosen").returncode == 0
    out = s.cli("delegate", "--to", "auditor", "--task", "audit the change")
    assert out.returncode == 0, out.stderr
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 20,
           "the task delivered to the added role")
    assert any("New task T1" in line for line in s.submitted("auditor"))
