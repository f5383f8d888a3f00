"""A brief is typed only into an agent at rest, not into one merely quiet.

Gemini CLI started in an untrusted folder draws an idle-looking prompt a
moment before its folder-trust dialog.  Starved of CPU in between (a crew
starting on two busy cores), it prints nothing for longer than the boot's
quiet wait, and a brief typed then is read by the dialog: a digit of it
picks an answer.  The fixture agent here draws its prompt, wants the CPU
for longer than the quiet wait, then shows a numbered dialog and records
every key it reads while the dialog is up: busy (spinning on a CPU of its
own), or starved (spinning pinned to one CPU beside three spinners of
other sessions, so that it mostly waits on the run queue, as a starved
agent does).  Through a real ``serve --headless`` with the agent in a real
PTY.  Both fail on a boot check that asks only for a quiet idle screen.
"""

from __future__ import annotations

import pytest

from tests.e2e.scenario import holds_for
from tests.integration.harness import role_toml
from tests.integration.test_roles import hooks_toml, read_env
from tests.integration.test_seat_safety import status

SPIN = 4.0  # wanting the CPU with nothing drawn: over three times the boot's quiet wait


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", [(), ("--starved",)], ids=["busy", "starved"])
def test_a_brief_waits_out_an_agent_on_its_way_to_a_dialog(serve, short_tmp, how):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--spin-then-menu", *how, "--starve", str(SPIN))
              + hooks_toml(short_tmp))
    s.wait(lambda: s.agents("menu", "coder"), 30, "the dialog after the busy spell")
    # A brief typed while it ran is read now, by the dialog.
    assert holds_for(lambda: not s.agents("answer", "coder"), 1.5), s.agents("answer", "coder")
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 10, "the dialog read as waiting")
    # Loud: the dialog holds the role, the operator's hook hears of it.
    s.wait(lambda: (short_tmp / "on_input.env").exists(), 10, "the on_input hook")
    assert read_env(short_tmp / "on_input.env")["CHORAGOS_ROLE"] == "coder"
    assert holds_for(lambda: status(s)["coder"]["state"] == "waiting", 2.0)
    assert not s.agents("answer", "coder"), "the brief was typed into the dialog"
    assert not [e for e in s.events() if e["event"] == "boot injection" and e["role"] == "coder"]
    # The operator answers; only then, at its prompt, is the role briefed.
    assert s.cli("keys", "coder", "esc").returncode == 0
    s.wait_booted(["coder"], timeout=20)
    assert [a["text"] for a in s.agents("answer", "coder")] == ["\x1b"]
    assert len(s.submitted("coder")) == 1 and "You are the coder role" in s.submitted("coder")[0]
