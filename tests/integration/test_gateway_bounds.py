"""What a stranger on the gateway's port can do to the counts: nothing that grows them.

Every request goes through a real :class:`~choragos.gateway.proxy.ProxyServer` on a
loopback port and the page is read as the session's prober reads it.
"""

from __future__ import annotations

import http.client
import json

import pytest

from choragos.actors.gatewayprober import fetch_metrics
from choragos.gateway.client import parse_metrics
from choragos.gateway.labels import MAX_AGENTS, UNKNOWN
from choragos.gateway.roles import KEY_HEADER, Roles, role_key
from tests.conftest import wait_until
from tests.e2e.fakemodel import FakeModel, Usage
from tests.integration.gatewayfakes import base_url, metric, request, running_gateway, tokens

pytestmark = pytest.mark.timeout(120)


def _flood(server, paths, status: int = 404) -> None:
    """A POST to each of ``paths`` on one connection, each answered ``status``."""
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=20)
    try:
        for path in paths:
            conn.request("POST", path, body=b"{}")
            response = conn.getresponse()
            response.read()
            assert response.status == status
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


# ---- a session's gateway: a request is charged to a role only with that role's key ----

SESSION_KEY = bytes(range(32))
CODER, REVIEWER = role_key(SESSION_KEY, "coder"), role_key(SESSION_KEY, "reviewer")
MESSAGES = {"model": "claude-test-1", "max_tokens": 10, "stream": False,
            "messages": [{"role": "user", "content": "hi"}]}


def test_a_role_cannot_charge_another_role_or_a_made_up_one():
    lines: list[str] = []
    with (FakeModel(usage=Usage(input_tokens=100, output_tokens=5)) as fake,
          running_gateway({"anthropic": fake.base_url}, roles=Roles(SESSION_KEY),
                          record=lines.append) as gw):
        url = base_url(gw)
        assert request(f"{url}/agent/coder/{CODER}/v1/messages", body=MESSAGES)[0] == 200
        for path, header in ((f"/agent/reviewer/{CODER}", None),   # another role's key
                             ("/agent/reviewer", CODER),             # ... as a header
                             (f"/agent/ghost/{CODER}", None),        # a made-up role
                             ("/agent/reviewer", None),              # no key at all
                             (f"/agent/reviewer/{'0' * 32}", None)):
            status, headers, body = request(f"{url}{path}/v1/messages", body=MESSAGES,
                                            headers={KEY_HEADER: header} if header else {})
            error = json.loads(body)["error"]
            assert status == 403 and headers["content-type"] == "application/json", path
            assert "role key" in error["message"] and "nothing was sent" in error["message"]
        # Claude Code's HEAD of its base URL: answered for the right key only.
        assert request(f"{url}/agent/reviewer/{REVIEWER}", "HEAD")[0] == 200
        assert request(f"{url}/agent/reviewer/{CODER}", "HEAD")[0] == 403
        # Codex's way: the key in a header, which never goes upstream.
        status, _, _ = request(f"{url}/agent/reviewer/v1/messages", body=MESSAGES,
                               headers={KEY_HEADER: REVIEWER})
        assert status == 200
        assert len([r for r in fake.requests if r.method == "POST"]) == 2
        assert all(KEY_HEADER.lower() not in r.headers for r in fake.requests)
        assert set(tokens(gw)) == {"coder", "reviewer"}
        assert tokens(gw)["reviewer"]["claude-test-1"]["input"] == 100
        assert metric(gw, "sphragis_errors_total", agent=UNKNOWN, kind="permission_error") == 6
        assert metric(gw, "sphragis_requests_total", agent="ghost") == 0
        # Each answer is logged once the agent has its end: the last one too.
        wait_until(lambda: sum(" -> 200 " in line for line in lines) == 2, 10,
                   message="both answers logged")
    logged = "\n".join(lines)
    assert CODER not in logged and REVIEWER not in logged
    assert "coder anthropic POST /agent/coder/…/v1/messages -> 200" in logged


def test_a_flood_of_made_up_roles_on_a_sessions_gateway_is_one_line():
    with running_gateway({}, roles=Roles(SESSION_KEY)) as gw:
        _flood(gw, (f"/agent/x{n}/{'0' * 32}/v1/messages" for n in range(3_000)), 403)
        page = fetch_metrics(f"{base_url(gw)}/metrics")
        assert page.count(b"\n") < 10
        assert metric(gw, "sphragis_requests_total", agent=UNKNOWN, code="403") == 3_000
