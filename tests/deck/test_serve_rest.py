"""`choragos serve` in a terminal starts the session's clocks, aftercare and
reload actors once its client has attached (its first frame drawn), not on
the way to that frame; the other modes start them with the session."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck

REST = re.compile(r"clocks, aftercare and reload started (.*)")


@pytest.mark.timeout(120)
def test_serve_starts_the_clocks_aftercare_and_reload_after_its_client_attached(deck):
    d: TmuxDeck = deck()
    d.serve()
    wait_until(lambda: REST.search(d.server_log()), 15, message="the rest of the tree started")
    log = d.server_log()
    found = [(match.start(), match.group(1)) for match in REST.finditer(log)]
    assert [when for _, when in found] == ["after its client's first frame"]
    assert found[0][0] > log.index("session running")  # after the server said it is ready
    # The reload actor, started that late, answers a reload (nothing changed).
    out = d.cli("reload")
    assert out.returncode == 0, out.stdout + out.stderr
