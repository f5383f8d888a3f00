"""A blocking budget across a server killed outright and ``serve --resume``.

What the gateway counted before the kill was spent: the resumed session
must not forget it and let the role spend its budget again.
"""

from __future__ import annotations

import pytest

from tests.e2e.fakemodel import FakeModel, Usage
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
