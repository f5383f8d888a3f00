"""The gateway (routing, token counts, fail-closed) through a real
``serve --headless`` and a fake gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.harness import role_toml
from tests.integration.metricsserver import ScriptedGateway

MODEL = "claude-test-1"
METRICS = (
    "# HELP sphragis_tokens_total Tokens seen by the gateway.\n"
    "# TYPE sphragis_tokens_total counter\n"
    f'sphragis_tokens_total{{agent="coder",model="{MODEL}",direction="input"}} 1200\n'
    f'sphragis_tokens_total{{agent="coder",model="{MODEL}",direction="output"}} 300\n'
    f'sphragis_tokens_total{{agent="coder",model="{MODEL}",direction="cache_read"}} 50\n'
    "other_metric 7\n"
).encode()


@pytest.fixture
def gateway():
    fake = ScriptedGateway(METRICS)
    yield fake
    fake.down()


def _config(port: int) -> str:
    return (role_toml("orchestrator", start=True)
            + role_toml("coder", "--worker")
            + f'[sphragis]\nenabled = true\naddr = "127.0.0.1:{port}"\n'
            + f'[pricing."{MODEL}"]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\n')


def _status(s) -> dict:
    out = s.cli("status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _coder(s) -> dict:
    return next(r for r in _status(s)["roles"] if r["name"] == "coder")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_gateway_routes_counts_and_fails_closed(serve, gateway):
    s = serve(_config(gateway.port))
    s.wait_booted(["orchestrator", "coder"])
    env = _environ(_coder(s)["pid"])
    assert env["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{gateway.port}/agent/coder"
    s.wait_event(lambda e: e["event"] == "gateway up", message="gateway up")
    assert s.cli("delegate", "--to", "coder", "--task", "one").returncode == 0
    coder = s.wait(lambda: (c := _coder(s))["tokens"]["input"] and c, message="tokens")
    assert coder["tokens"] == {"input": 1200, "output": 300, "cache_read": 50,
                               "cache_creation": 0}
    assert coder["cost"] == pytest.approx((1200 * 3 + 300 * 15 + 50 * 0.3) / 1e6)
    assert _status(s)["gateway"] == "on"

    gateway.down()
    s.wait_event(lambda e: e["event"] == "gateway down", message="gateway down")
    out = s.cli("delegate", "--to", "coder", "--task", "two")
    assert out.returncode == 1
    assert "dispatch refused: gateway down" in out.stderr + out.stdout
    assert any(e["event"] == "dispatch refused: gateway down" for e in s.events())
    for verb in (["ping"], ["status"], ["board"]):
        assert s.cli(*verb).returncode == 0, verb
    assert _status(s)["gateway"] == "down"

    gateway.up()
    s.wait(lambda: _status(s)["gateway"] == "on", message="gateway back up")
    assert s.cli("delegate", "--to", "coder", "--task", "three").returncode == 0
    assert s.stop() == 0
    tokens = [e for e in s.events() if e["event"] == "tokens"]
    assert tokens and tokens[-1] == {**tokens[-1], "role": "coder", "model": MODEL,
                                     "input": 1200, "output": 300, "cache_read": 50,
                                     "cache_creation": 0}


def test_soft_default_without_a_gateway_is_off_with_a_warning(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
              + '[sphragis]\naddr = "127.0.0.1:9"\ncommand = "no-such-gateway-here"\n')
    s.wait_booted(["coder"])
    off = [e for e in s.events() if e["event"] == "gateway off"]
    assert off and "not on PATH" in off[0]["reason"]
    assert "ANTHROPIC_BASE_URL" not in _environ(_coder(s)["pid"])
    assert s.cli("delegate", "--to", "coder", "--task", "x").returncode == 0
