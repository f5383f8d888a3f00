"""A line whose echo never came is typed again only into an agent at rest,
not into one that a single look at its state finds asleep.

The fixture agent here reads its task's line without drawing it, wants the
CPU for 7 s (spinning on a CPU of its own, or pinned to one beside three
spinners of other sessions, so that it mostly waits on the run queue) with
a nap from 1.9 s to 2.6 s where the typist's one look came (at the end of
its 2 s echo wait), then shows a numbered dialog and records every key it
reads while the dialog is up.  Through a real ``serve --headless`` with the
agents in real PTYs.  On the old check (the text read, and the agent not
running at that one look) the text went in again 3 s later, unread until
the dialog read it as its answer.
"""

from __future__ import annotations

import pytest

from tests.e2e.scenario import holds_for
from tests.integration.harness import role_toml
from tests.integration.test_seat_safety import status

SPELL = 7.0  # wanting the CPU after reading the text: past the old retype (5 s in)


def _failed(s) -> list[dict]:
    return [e for e in s.events() if e["event"] == "injection" and e["role"] == "coder"
            and not e["ok"]]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", [(), ("--starved",)], ids=["busy", "starved"])
def test_no_text_typed_again_lands_in_the_dialog_a_starved_agent_draws(serve, short_tmp, how):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--read-then-menu", "tasks/T1.md", *how,
                          "--starve", str(SPELL)))
    assert s.cli("delegate", "--to", "coder", "--task", "the task").returncode == 0
    s.wait(lambda: s.agents("read text", "coder"), 40, "the task's text read")
    s.wait(lambda: s.agents("menu", "coder"), 20, "the dialog after the spell")
    # The text typed again meanwhile is read now, by the dialog.
    assert holds_for(lambda: not s.agents("answer", "coder"), 1.5), s.agents("answer", "coder")
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 10, "the dialog read as waiting")
    # Not typed again, and said: the task fails with the reason.
    s.wait(lambda: _failed(s), 30, "the line given up on")
    (failed,) = _failed(s)
    assert "a dialog is on the agent's screen; not typed again" in failed["detail"], failed
    s.wait(lambda: s.board()["T1"]["state"] == "failed", 10, "T1 failed")
    assert not s.agents("answer", "coder"), "the text typed again answered the dialog"
    assert len(s.agents("read text", "coder")) == 1 and len(s.submitted("coder")) == 1
    # The operator answers: the one key the dialog reads is the operator's.
    assert s.cli("keys", "coder", "esc").returncode == 0
    s.wait(lambda: s.agents("answer", "coder"), 10, "the operator's answer")
    assert [a["text"] for a in s.agents("answer", "coder")] == ["\x1b"]
