"""Durable sessions: a killed or stopped server is resumed with ``serve --resume``."""

from __future__ import annotations

import json
import stat

from choragos import journal
from tests.integration.harness import role_toml

TEAM = (role_toml("lead", start=True)
        + role_toml("coder", "--worker", "--work", "30")
        + role_toml("reviewer", approve=True)
        + role_toml("tester", "--worker", "--work", "0.2"))


def delegate(serve, role: str, text: str) -> str:
    out = serve.cli("delegate", "--to", role, "--task", text)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[1]  # "delegated T3 to coder"


def test_kill9_then_resume_keeps_board_gates_ids_and_hands_work_back(serve):
    s = serve(TEAM)
    s.wait_booted(["lead", "coder", "reviewer", "tester"])
    busy = delegate(s, "coder", "long job")
    gated = delegate(s, "reviewer", "needs a look")
    quick = delegate(s, "tester", "quick job")
    s.wait(lambda: s.board()[quick]["state"] == "done", 20, "the tester's work-done")
    s.wait(lambda: s.board()[busy]["state"] == "delivered", 20, "the coder's delivery")
    before = s.board()
    s.kill9()

    s.start(args=("--resume",))
    after = s.board()
    assert set(after) == set(before)
    for tid in (busy, gated, quick):
        assert after[tid]["state"] == before[tid]["state"]
        assert after[tid]["text"] == before[tid]["text"]
    gates = json.loads(s.cli("gate", "list", "--json").stdout)["gates"]
    assert [g["id"] for g in gates] == [gated]
    fresh = delegate(s, "tester", "after the restart")
    assert int(fresh[1:]) == max(int(t[1:]) for t in before) + 1
    s.wait(lambda: any("session restarted" in line and busy in line
                       for line in s.submitted("coder")), 30, "the coder's task handed back")
    brief = (s.workdir / ".choragos" / "briefs" / "lead.md").read_text()
    assert "This session was resumed" in brief and busy in brief
    assert "Do not re-delegate in-flight tasks" in brief
    assert any(e["event"] == "session resumed" for e in s.events())
    approve = s.cli("gate", "approve", gated)
    assert approve.returncode == 0, approve.stderr
    s.wait(lambda: s.board()[gated]["state"] == "delivered", 20, "the approved gate")
    home = journal.state_dir(s.workdir)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_serve_without_resume_keeps_the_old_state_aside_and_names_a_dead_server(serve):
    s = serve(TEAM)
    s.wait_booted(["lead"])
    delegate(s, "reviewer", "gated work")
    pid = s.proc.pid
    s.kill9()
    s.start()
    err = s.stderr()
    assert f"the session that ran as pid {pid} died at" in err
    assert "was kept in .choragos/state.kept-" in err
    assert "choragos serve --resume .choragos/state.kept-" in err
    assert s.board() == {}
    kept = [p for p in (s.workdir / ".choragos").iterdir() if p.name.startswith("state.kept-")]
    assert len(kept) == 1 and list(journal.load(kept[0]).tasks) == ["T1"]
