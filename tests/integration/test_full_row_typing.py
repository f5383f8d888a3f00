"""A line that fills the agent's input row to its last column is typed once.

The fixture agent runs in a real PTY of the role's width (120 columns) with
a prompt padded so that prompt and report together end exactly at the last
column, where the terminal leaves the cursor with its wrap pending.  The
echo check once missed that row, and the retry typed the report again: the
agent got it twice in one line.
"""

from __future__ import annotations

import sys

import pytest

from choragos.actors import messages as m
from choragos.roles import briefs
from choragos.terminal.ptyproc import PtyChild
from tests.conftest import wait_until
from tests.integration.harness import AGENT
from tests.integration.test_role_actor import Writes, start_role, stop_role, submitted

COLS = 120  # the role's terminal width (new_state's default)
REPORT = briefs.report_line("T100", "coder", "finished T100 in the fixture",
                            ".choragos/reports/T100.md")


def _prompt_for(end: int) -> str:
    """A prompt that makes prompt + REPORT end at column ``end`` of the input."""
    pad = end - len(REPORT) - len("> ")
    assert pad > 0
    return "." * pad + "> "


@pytest.mark.timeout(60)
@pytest.mark.parametrize("end", [COLS, 2 * COLS, COLS + 37],
                         ids=["fills-its-row", "fills-two-rows", "wraps-onto-a-second-row"])
def test_a_report_ending_at_the_rows_edge_is_typed_once(tmp_path, monkeypatch, end):
    writes = Writes()
    monkeypatch.setattr(PtyChild, "write", writes.spy(PtyChild.write))
    role = start_role(tmp_path, sys.executable, (str(AGENT),),
                      {"AGENT_PROMPT": _prompt_for(end)})
    try:
        wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
        assert role.core.outcomes()[0].ok
        role.handle.tell(m.Inject(m.Injection(7, "coder", REPORT, "report", task_id="T100")))
        wait_until(lambda: len(role.core.outcomes()) == 2, 20, message="the report's outcome")
        outcome = role.core.outcomes()[-1]
        assert outcome.ok, outcome.detail
        assert [line for line in submitted(role) if "T100" in line] == [REPORT]
        typed = [data for _, data in writes.log if REPORT.encode() in data]
        assert len(typed) == 1, typed
        retries = [x for x in role.core.told
                   if isinstance(x, m.InjectionOutcome) and not x.final]
        assert not retries, [x.detail for x in retries]
    finally:
        stop_role(role)
