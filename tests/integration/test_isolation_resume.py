"""Merge gates and work held for a person survive a kill -9 and `serve --resume`."""

from __future__ import annotations

import json

from tests.integration.harness import role_toml


def test_a_merge_gate_and_a_judge_hold_survive_a_resume(serve):
    s = serve(role_toml("lead", start=True)
              + role_toml("alice", "--worker", "--edit", worktree=True)
              + role_toml("coder", "--worker", "--edit", judge="rev")
              + role_toml("rev", "--worker", "--verdict", "x"))
    s.wait_booted(["lead", "alice", "coder", "rev"])
    assert s.cli("delegate", "--to", "alice", "--task", "write a.txt A").returncode == 0
    gated = s.wait_event(lambda e: e["event"] == "merge gated", 30, "the merge gate")
    assert s.cli("delegate", "--to", "coder", "--task", "write b.txt B").returncode == 0
    s.wait_event(lambda e: e["event"] == "work held", 30, "the judge hold")
    s.kill9()

    s.start(args=("--resume",))
    gates = json.loads(s.cli("gate", "list", "--json").stdout)["gates"]
    assert [(g["id"], g["kind"]) for g in gates] == [("T1", "merge"), ("T2", "judge")]
    assert gates[0]["commit"] == gated["commit"]  # still pinned to the diff it shows
    assert s.board()["T2"]["waiting"]["kind"] == "judge"
    assert s.cli("gate", "approve", "T1").returncode == 0
    s.wait(lambda: (s.workdir / "a.txt").exists(), 20, message="the merge after the resume")
    assert (s.workdir / "a.txt").read_text() == "A\n"
    assert s.cli("gate", "approve", "T2").returncode == 0
    line = s.wait(lambda: next((x for x in s.submitted("lead") if "[T2 from coder]" in x
                                and "approved it at the judge gate" in x), None), 30,
                  message="the held report after the resume")
    assert "(1 file changed (+1 -0))" in line
    assert s.board()["T2"]["state"] == "done" and s.board()["T2"]["waiting"] is None
    # the held work was not handed back to its worker as if it were still open
    assert not any("session restarted" in x and "T2" in x for x in s.submitted("coder"))
