"""What a stranger on the gateway's port can do to the counts: nothing that grows them.

Every request goes through a real :class:`~choragos.proxy.GatewayServer` on a
loopback port and the page is read as the session's prober reads it.
"""

from __future__ import annotations

import http.client

import pytest

from choragos.actors.gateway import fetch_metrics
from choragos.gateway import parse_metrics
from choragos.gatewaylabels import MAX_AGENTS, UNKNOWN
from tests.integration.gatewayfakes import base_url, metric, running_gateway

pytestmark = pytest.mark.timeout(120)


def _flood(server, paths) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=20)
    try:
        for path in paths:
            conn.request("POST", path, body=b"{}")
            response = conn.getresponse()
            response.read()
            assert response.status == 404
    finally:
        conn.close()


def test_thousands_of_made_up_roles_leave_metrics_small_and_readable():
    """The attack: one request per made-up role name, each a 404; before, each
    made a series of its own and ~7,000 pushed /metrics past what the prober reads."""
    with running_gateway({}) as gw:
        _flood(gw, (f"/agent/x{n}/v1/nothing" for n in range(7_000)))
        page = fetch_metrics(f"{base_url(gw)}/metrics")
        assert len(page) < 64 << 10
        assert parse_metrics(page) == {}
        assert metric(gw, "sphragis_requests_total", agent=UNKNOWN) == 7_000 - MAX_AGENTS
        assert metric(gw, "sphragis_requests_total", agent="x0") == 1
