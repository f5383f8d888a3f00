"""The judge loop: a pass, a critique then a pass, and no usable verdict -> a human gate."""

from __future__ import annotations

import json

from tests.integration.harness import role_toml

ORCH = role_toml("orchestrator", start=True)


def _team(verdicts: str, orch: str = ORCH) -> str:
    return (orch + role_toml("coder", "--worker", "--edit", judge="reviewer")
            + role_toml("reviewer", "--worker", "--verdict", verdicts))


def _reports(s) -> list[str]:
    return [x for x in s.submitted("orchestrator") if x.startswith("A worker reports")]


def test_a_verdict_at_the_pass_mark_passes(serve):
    # A team with an owned file: every done is checked, the judge's own
    # verdict aside (it once stayed delivered, marked verifying, for good).
    s = serve(_team("8", role_toml("orchestrator", start=True, owns_files=["plan.md"])))
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt done").returncode == 0
    line = s.wait(lambda: next(iter(_reports(s)), None), 40, message="the report")
    assert "[T1 from coder] finished T1 in the fixture (1 file changed (+1 -0))" in line
    assert line.endswith("The judge reviewer scored it 8/10.")
    judged = s.wait(lambda: [x for x in s.submitted("reviewer") if "T2" in x], 5,
                    message="the judge's task")
    assert "read .choragos/tasks/T2.md" in judged[0]
    brief = (s.workdir / ".choragos" / "reports" / "T1.judge-brief.md").read_text()
    assert "write a.txt done" in brief and "+done" in brief and "VERDICT: n/10" in brief
    board = s.board()
    assert board["T1"]["state"] == "done" and board["T1"]["checks"] == "judged 8/10 (pass 7)"
    assert board["T2"]["state"] == "done" and board["T2"]["checks"] == ""
    assert len(_reports(s)) == 1  # the judge's own work-done never reaches the orchestrator


def test_a_low_verdict_sends_the_critique_back_then_a_pass(serve):
    s = serve(_team("3,9"))
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    task = "write@1 a.txt rough\nwrite@2 a.txt polished"
    assert s.cli("delegate", "--to", "coder", "--task", task).returncode == 0
    again = s.wait(lambda: next((x for x in s.submitted("coder") if "judged 3/10" in x), None),
                   40, message="the critique line")
    assert "read .choragos/tasks/T1.md again" in again
    assert "critique: verdict 1 says 3" in (s.workdir / ".choragos" / "tasks" / "T1.md"
                                             ).read_text()
    line = s.wait(lambda: next(iter(_reports(s)), None), 40, message="the report")
    assert line.endswith("The judge reviewer scored it 9/10.")
    assert (s.workdir / "a.txt").read_text() == "polished\n"
    assert [e["score"] for e in s.events() if e["event"] == "verdict"] == [3, 9]
    assert s.board()["T1"]["state"] == "done"


def test_no_usable_verdict_falls_closed_to_a_human_gate(serve):
    s = serve(_team("x"))
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt done").returncode == 0
    s.wait_event(lambda e: e["event"] == "work held", 40, "the hold")
    gates = json.loads(s.cli("gate", "list", "--json").stdout)["gates"]
    assert [(g["id"], g["kind"]) for g in gates] == [("T1", "judge")]
    assert "no first line `VERDICT: n/10`" in gates[0]["label"]
    assert _reports(s) == [] and s.board()["T1"]["state"] != "done"  # never a silent pass
    assert s.cli("gate", "approve", "T1").returncode == 0
    line = s.wait(lambda: next(iter(_reports(s)), None), 20, message="the report")
    assert "(The operator approved it at the judge gate" in line
    assert s.board()["T1"]["state"] == "done"


def test_a_judge_that_times_out_falls_closed_to_a_human_gate(serve):
    s = serve(ORCH + role_toml("coder", "--worker", "--edit", judge="reviewer")
              + role_toml("reviewer", timeout="2s"))  # never answers
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt done").returncode == 0
    held = s.wait_event(lambda e: e["event"] == "work held", 40, "the hold")
    assert held["why"] == "the judge reviewer timed out after 2s"
    assert _reports(s) == [] and s.board()["T1"]["state"] != "done"
    assert s.cli("gate", "reject", "T1").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "failed", 10, message="T1 failed")
