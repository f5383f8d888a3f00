"""A report the live orchestrator does not take is tried again or made loud, never dropped
in silence.  Through a real ``serve --headless`` with fixture agents in real PTYs."""

from __future__ import annotations

from tests.integration.harness import role_toml
from tests.integration.test_loud import fired, hook_toml, roles

REPORT = "A worker reports: [T1"


def test_a_report_that_never_showed_is_typed_again_in_another_round(serve):
    s = serve(role_toml("orchestrator", "--drop-typed", REPORT, "--drops", "2", start=True)
              + role_toml("coder", "--worker"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "report twice over").returncode == 0
    s.wait(lambda: any(REPORT in line for line in s.submitted("orchestrator")), 40,
           "the report submitted in its second round")
    assert len(s.agents("dropped", "orchestrator")) == 2  # both typings of the first round
    assert len([line for line in s.submitted("orchestrator") if REPORT in line]) == 1
    requeued = [e for e in s.events() if e["event"] == "injection requeued"]
    assert [(e["role"], e["kind"], e["task"]) for e in requeued] == [
        ("orchestrator", "report", "T1")]
    assert not [e for e in s.events() if e["event"] == "line not taken"]


def test_a_report_left_in_the_input_is_not_typed_again_and_rings(serve, short_tmp):
    s = serve(role_toml("orchestrator", "--deaf-on", REPORT, start=True)
              + role_toml("coder", "--worker") + hook_toml(short_tmp, "on_input"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "report into deaf ears").returncode == 0
    s.wait(lambda: [e for e in s.events() if e["event"] == "line not taken"], 30,
           "the report given up on")
    lost = next(e for e in s.events() if e["event"] == "line not taken")
    assert (lost["role"], lost["kind"], lost["task"]) == ("orchestrator", "report", "T1")
    assert lost["text"].startswith(REPORT) and "did not take the Enter" in lost["detail"]
    assert len(s.agents("deaf", "orchestrator")) == 2  # the Enter and its one retry
    assert not [line for line in s.submitted("orchestrator") if REPORT in line]
    assert "orchestrator did not take a report" in s.stderr()
    assert "is left in its input: press Enter in its pane or clear it" in s.stderr()
    s.wait(lambda: fired(short_tmp, "on_input"), 5, "the on_input hook")
    assert fired(short_tmp, "on_input")[0].startswith("orchestrator|")
    assert not [e for e in s.events() if e["event"] == "injection requeued"]


def test_nothing_is_typed_after_a_line_left_in_the_input_until_it_is_cleared(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", "--deaf-on", "tasks/T1.md"))
    s.wait_booted(["coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "stays in the box").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "failed", 30, "T1 failed: Enter not taken")
    assert s.cli("delegate", "--to", "coder", "--task", "waits its turn").returncode == 0
    # Acknowledged once journaled; queued at the role once its checkpoint is taken.
    s.wait(lambda: roles(s)["coder"]["queued"] == 1, 15, "T2 to queue")
    coder = roles(s)["coder"]
    assert (coder["ready"], coder["queued"]) == (False, 1)
    assert "input holds a line it did not take" in coder["detail"]
    assert coder["held"] and "input holds an untaken line" in coder["marks"]
    assert not [r for r in s.agents(role="coder") if "tasks/T2.md" in r["text"]]
    # The operator clears the input; the next line goes in on its own.
    keys = s.cli("keys", "coder", "ctrl+c")
    assert keys.returncode == 0, keys.stderr
    assert "tasks/T1.md" in s.wait(lambda: s.agents("cleared", "coder"), 5, "the clear")[0]["text"]
    s.wait(lambda: s.board()["T2"]["state"] == "done", 30, "T2 typed and done")
    coder = roles(s)["coder"]
    assert not coder["held"] and not coder["marks"] and not coder["detail"]
    [task_line] = [line for line in s.submitted("coder") if "tasks/" in line]
    assert "tasks/T2.md" in task_line  # T1 never went in, T2 went in alone
