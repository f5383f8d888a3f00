"""A line for an agent at a dialog waits, whatever put it in its queue.

Every line the session types (a brief, a task, a worker's report, a
"continue" after a limit or a budget raise, a rerouted task, a line typed
again after a restart) goes through one gate: typed only into an agent
that is idle at its prompt, on a screen that is not behind its output.
Here the report path, with the real Claude Code: the orchestrator's model
answers its brief with a command no rule allows, so Claude Code shows its
permission prompt; a worker's report then stays queued, untyped, however
long the prompt is up, and goes in once the operator has answered it.
"""

from __future__ import annotations

import pytest

from tests.e2e.fakemodel import FakeModel, text
from tests.e2e.scenario import BRIEF, claude_role, holds_for
from tests.e2e.seats import BOOT_TIMEOUT
from tests.e2e.test_scenarios import bash
from tests.integration.harness import role_toml

REPORT = "A worker reports: [T1 from coder]"


@pytest.mark.claude
@pytest.mark.timeout(180)
def test_a_report_waits_out_claude_codes_permission_prompt(crew, fake_model: FakeModel) -> None:
    s = crew(claude_role("orchestrator", "claude", start=True) + role_toml("coder"))
    fake_model.on(BRIEF.format(role="orchestrator"), bash("ls /", "List the root"))
    fake_model.default = text("Noted.")
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    view = s.wait_state("orchestrator", "waiting", 40)
    assert any("ls /" in line for line in view["preview"]), view["preview"]
    assert s.cli("delegate", "--to", "coder", "--task", "Say done").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 20, "T1 typed into the coder")
    assert s.cli("work-done", "--id", "T1", "--done", "--task", "Said done").returncode == 0
    s.wait(lambda: s.status()["orchestrator"]["queued"] == 1, 15, "the report queued")
    assert holds_for(lambda: (v := s.status()["orchestrator"])["state"] == "waiting"
                     and v["queued"] == 1, 4)
    assert s.times_told(REPORT) == 0 and not s.injections("orchestrator", "report")
    # The operator answers (Esc: no); at its prompt again, the report goes in, once.
    assert s.cli("keys", "orchestrator", "esc").returncode == 0
    s.wait_told(REPORT, 60)
    s.wait(lambda: s.injections("orchestrator", "report"), 10, "the report's injection event")
    (typed,) = s.injections("orchestrator", "report")
    assert typed["ok"], typed
    assert s.times_told(REPORT) == 1
