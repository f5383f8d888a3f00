"""Honest outcomes: a worker reports --failed or --blocked, and everyone sees it."""

from __future__ import annotations

import json

from tests.integration.harness import role_toml


def test_failed_and_blocked_reach_the_board_the_orchestrator_and_the_report(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", "--outcome", "failed")
              + role_toml("tester", "--worker", "--outcome", "blocked")
              + role_toml("writer", "--worker"))
    s.wait_booted(["orchestrator", "coder", "tester", "writer"])
    for role in ("coder", "tester", "writer"):
        assert s.cli("delegate", "--to", role, "--task", f"job for {role}").returncode == 0
    board = s.wait(lambda: (b := s.board()) and all(
        b[t]["state"] in ("failed", "blocked", "done") for t in ("T1", "T2", "T3")) and b,
        30, message="three reports")
    assert [board[t]["state"] for t in ("T1", "T2", "T3")] == ["failed", "blocked", "done"]
    assert board["T1"]["summary"] == "failed T1 in the fixture"
    assert board["T1"]["note"] == "" and board["T3"]["note"] == ""
    acks = s.wait(lambda: len(got := {r["role"]: r["text"] for r in s.agents("ack")}) == 3
                  and got, 10, message="three acks")
    assert acks["coder"].startswith("0 reported T1 (failed)")
    assert acks["tester"].startswith("0 reported T2 (blocked)")
    lines = s.wait(lambda: (got := [x for x in s.submitted("orchestrator")
                                    if x.startswith("A worker reports")])
                   and len(got) == 3 and got, 20, message="the orchestrator told")
    assert "[T1 from coder] FAILED: failed T1 in the fixture" in "\n".join(lines)
    assert "[T2 from tester] BLOCKED, needs: blocked T2 in the fixture" in "\n".join(lines)
    assert "[T3 from writer] finished T3 in the fixture" in "\n".join(lines)
    out = s.cli("report", "--json")
    assert out.returncode == 0, out.stderr
    roles = {r["role"]: r for r in json.loads(out.stdout)["roles"]}
    assert [(roles[n]["done"], roles[n]["failed"], roles[n]["blocked"])
            for n in ("coder", "tester", "writer")] == [(0, 1, 0), (0, 0, 1), (1, 0, 0)]
    text = s.cli("report").stdout.splitlines()
    assert text[2].split()[:5] == ["ROLE", "TASKS", "DONE", "FAILED", "BLOCKED"]
