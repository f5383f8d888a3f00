"""A remote role's model calls go through the built-in gateway, over the
port its host's connection forwards, and count for that role."""

from __future__ import annotations

import json

import pytest

from tests.e2e.fakemodel import FakeModel, Usage
from tests.integration.gatewayfakes import free_port, tokens
from tests.remote.conftest import remote_role

pytestmark = pytest.mark.timeout(180)

USAGE = Usage(input_tokens=1200, output_tokens=300, cache_creation_input_tokens=40,
              cache_read_input_tokens=50)
# What the agent there runs: one Messages call to the base URL its seat was given.
CALL = """\
import json, os, urllib.request
url = os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages"
body = {"model": "claude-test-1", "max_tokens": 50, "stream": True,
        "messages": [{"role": "user", "content": "hi"}]}
request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
    "content-type": "application/json", "x-api-key": "sk-ant-test-000"})
with urllib.request.urlopen(request, timeout=20) as answer:
    print(answer.status, os.environ["ANTHROPIC_BASE_URL"], answer.read().decode()[-40:])
"""


def test_a_remote_roles_model_calls_go_through_the_forwarded_gateway_and_count_for_it(
        remote_session, ssh_server, shared_log):
    port = free_port()
    call = ssh_server.home / "call.py"
    assert ssh_server.run("sh", "-c", f"cat > {call}", stdin=CALL).returncode == 0
    with FakeModel(usage=USAGE) as model:
        s = remote_session(
            remote_role(ssh_server, "coder", "--shell")
            + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
            f'[gateway.upstream]\nanthropic = "{model.base_url}"\n'
            '[pricing."claude-test"]\ninput = 3.0\noutput = 15.0\n')
        s.wait_booted(["orchestrator", "coder"], timeout=60)
        s.wait_event(lambda e: e["event"] == "gateway up", message="gateway up")
        assert s.cli("keys", "coder", "--text", f"run: python3 {call}").returncode == 0
        assert s.cli("keys", "coder", "enter").returncode == 0
        ran = s.wait(lambda: s.agents("ran", "coder"), 60, message="the call there")
        out = json.loads(ran[0]["text"])
        assert out["rc"] == 0, out
        status, url = out["out"].split()[:2]
        assert status == "200"
        # The seat's URL is the host's end of the forward, not the gateway's own port.
        assert url.startswith("http://127.0.0.1:") and f":{port}/" not in url
        assert "/agent/coder/" in url
        assert len(model.requests) == 1
        counted = {"input": 1200, "output": 300, "cache_read": 50, "cache_creation": 40}
        assert tokens(f"http://127.0.0.1:{port}")["coder"] == {"claude-test-1": counted}
        roles = s.wait(lambda: (r := _roles(s))["coder"]["tokens"]["input"] and r, 30,
                       message="the tokens in status")
        assert roles["coder"]["tokens"] == counted
        assert roles["orchestrator"]["tokens"]["input"] == 0
        assert roles["coder"]["cost"] == pytest.approx((1200 * 3 + 300 * 15) / 1e6)


def _roles(s) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(s.cli("status", "--json").stdout)["roles"]}
