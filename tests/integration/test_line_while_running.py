"""A line after the brief is typed only into an agent at rest, not into one
merely quiet.

A screen nothing recognises reads idle once it has been quiet for a while.
An agent starved of CPU (or busy) on its way from such a screen to a dialog
is quiet too, and a task typed then waits unread in its terminal until the
dialog reads it: a digit of it picks an answer.  The fixture agent here takes
its brief, leaves a line no profile recognises, wants the CPU for longer than
the quiet wait (spinning on a CPU of its own, or pinned to one beside three
spinners of other sessions, so that it mostly waits on the run queue), then
shows a numbered dialog and records every key it reads while the dialog is
up.  A task waits for it from the start.  Through a real ``serve
--headless`` with the agents in real PTYs.  Both fail on the old check (a
quiet screen with no busy marker is idle) with the task's text as the
dialog's answer.
"""

from __future__ import annotations

import pytest

from tests.e2e.scenario import holds_for
from tests.integration.harness import role_toml
from tests.integration.test_roles import hooks_toml, read_env
from tests.integration.test_seat_safety import status

SPIN = 5.0  # wanting the CPU with nothing drawn: well over the 3 s that make quiet "idle"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", [(), ("--starved",)], ids=["busy", "starved"])
def test_a_task_waits_out_an_agent_on_its_way_to_a_dialog(serve, short_tmp, how):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--spin-then-menu", "--after-brief", *how,
                          "--starve", str(SPIN))
              + hooks_toml(short_tmp))
    assert s.cli("delegate", "--to", "coder", "--task", "the waiting task").returncode == 0
    s.wait(lambda: s.agents("menu", "coder"), 40, "the dialog after the busy spell")
    # A task typed while it spun is read now, by the dialog.
    assert holds_for(lambda: not s.agents("answer", "coder"), 1.5), s.agents("answer", "coder")
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 10, "the dialog read as waiting")
    s.wait(lambda: (short_tmp / "on_input.env").exists(), 10, "the on_input hook")
    assert read_env(short_tmp / "on_input.env")["CHORAGOS_ROLE"] == "coder"
    assert not s.agents("answer", "coder"), "the task was typed into the dialog"
    assert not [e for e in s.events() if e["event"] == "injection" and e["role"] == "coder"]
    assert len(s.submitted("coder")) == 1  # its brief, and nothing since
    # The operator answers; only then, at its prompt, does the task go in.
    assert s.cli("keys", "coder", "esc").returncode == 0
    s.wait(lambda: len(s.submitted("coder")) == 2, 20, "the task typed after the dialog")
    assert [a["text"] for a in s.agents("answer", "coder")] == ["\x1b"]
    assert ".choragos/tasks/" in s.submitted("coder")[1]
