"""A blocking budget across a server killed outright and ``serve --resume``.

What the gateway counted before the kill was spent: the resumed session
must not forget it and let the role spend its budget again.
"""

from __future__ import annotations

import pytest

from choragos.board import journal as statedir
from choragos.board.journal import JOURNAL
from tests.e2e.fakemodel import FakeModel, Usage
from tests.e2e.scenario import holds_for
from tests.integration.test_budget_block import _blocked, _call, _coder_url, _roles, _started

pytestmark = pytest.mark.timeout(150)


def test_spend_counted_before_a_kill9_still_counts_after_resume(serve, short_tmp):
    with FakeModel(usage=Usage(input_tokens=400_000, output_tokens=0)) as claude:
        s, url = _started(serve, claude, {"budget": "1.00", "budget_action": "block"},
                          short_tmp / "hooks.txt")
        assert _call(url)[0] == 200 and _call(url)[0] == 200  # $0.80 spent
        s.kill9()  # before any "tokens" record: the spend is only in the gateway's counts
        s.start(args=("--resume",))
        s.wait_booted(["orchestrator", "coder"])
        url = _coder_url(s)
        s.wait(lambda: _roles(s)["coder"]["tokens"].get("input") == 800_000, 15,
               "the spend before the kill on the card")
        assert _call(url)[0] == 200  # $1.20: crosses the budget
        _blocked(s, claude, url, calls=3)
        assert s.stop() == 0


@pytest.mark.parametrize("action", ["block", "pause"])
def test_a_budget_alarm_that_rang_before_a_kill9_does_not_ring_again(serve, short_tmp, action):
    """Each budget alarm rings once per cap, whatever kills the server; the
    pause it made is owed to the resumed role's new process."""
    hook_file = short_tmp / "hooks.txt"
    with FakeModel(usage=Usage(input_tokens=400_000, output_tokens=0)) as claude:
        s, url = _started(serve, claude, {"budget": "1.00", "budget_action": action}, hook_file)
        for _ in range(3):
            assert _call(url)[0] == 200  # $1.20: over
        s.wait(lambda: hook_file.exists() and hook_file.read_text().count("coder|") == 1, 15,
               "on_budget")
        journal = statedir.state_dir(s.workdir) / JOURNAL
        s.wait(lambda: b'"rang"' in journal.read_bytes(), 10, "what rang journaled")
        s.kill9()
        s.start(args=("--resume",))
        s.wait_booted(["orchestrator"])  # (a coder paused again is paused before its brief)
        s.wait(lambda: _roles(s)["coder"]["tokens"].get("input") == 1_200_000, 15,
               "the spend on the card")
        assert _roles(s)["coder"]["budget"]["over"] is True
        if action == "pause":
            s.wait(lambda: _roles(s)["coder"]["state"] == "paused", 15, "paused again")
        assert holds_for(lambda: hook_file.read_text().count("coder|") == 1, 3)
        assert [e for e in s.events() if e["event"] == "over budget"] == []
        assert s.stop() == 0
