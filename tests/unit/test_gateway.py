"""The gateway's pure parts and the prober actor, with a fake fetch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from choragos.actors.gatewayprober import (
    GatewayHealth,
    GatewayProber,
    Probe,
    ProberState,
    TokenTotals,
)
from choragos.actors.handle import Handle
from choragos.actors.timers import Timers
from choragos.config.model import Config, Price, SphragisSettings, builtin_config
from choragos.gateway.client import (
    MAX_BODY,
    MetricsError,
    decide,
    parse_metrics,
    role_cost,
    role_estimated,
)
from tests.conftest import wait_until

LINES = (
    '# TYPE sphragis_tokens_total counter\n'
    'sphragis_tokens_total{agent="coder",model="m-1",direction="input"} 10\n'
    'sphragis_tokens_total{agent="coder",model="m-1",direction="output"} 4\n'
    'sphragis_tokens_total{agent="coder",model="m-2",direction="cache_read"} 7\n'
    'sphragis_tokens_total{agent="coder",model="m-1",direction="sideways"} 99\n'
    'sphragis_requests_total{agent="coder"} 3\n'
    'process_cpu_seconds_total 1.5\n'
)


# ---- the soft default ------------------------------------------------------------------

def _decide(enabled: bool | None, on_path: bool = False, listening: bool = False,
            fail_closed: bool = True):
    settings = SphragisSettings(enabled=enabled, fail_closed=fail_closed)
    return decide(settings, lambda _: on_path, lambda _: listening)


@pytest.mark.parametrize(("enabled", "on_path", "listening", "on"), [
    (True, False, False, True),
    (False, True, True, False),
    (None, True, False, True),
    (None, False, True, True),
    (None, False, False, False),
])
def test_soft_default(enabled, on_path, listening, on) -> None:
    mode = _decide(enabled, on_path, listening)
    assert (mode.on, mode.enforced) == (on, on)


def test_off_by_default_says_why() -> None:
    assert "not on PATH and nothing listens on 127.0.0.1:8787" in _decide(None).reason


def test_fail_open_is_on_but_not_enforced() -> None:
    mode = _decide(True, fail_closed=False)
    assert mode.on and not mode.enforced


# ---- parsing ---------------------------------------------------------------------------

def test_the_port_probe_answers_without_loading_the_idna_codec() -> None:
    """Every session probes the gateway's port before its agents spawn: as
    text, the host would load the IDNA codec and stringprep (about 1 ms)."""
    code = """
import json, socket, sys
from choragos.gateway.client import is_listening
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
port = server.getsockname()[1]
up = is_listening(f"127.0.0.1:{port}")
server.close()
down = is_listening(f"127.0.0.1:{port}")
named = is_listening(f"localhost:{port}")
print(json.dumps([up, down, named, "encodings.idna" in sys.modules]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=30)
    assert json.loads(out.stdout) == [True, False, False, False]


def test_parse_keeps_token_lines_only() -> None:
    assert parse_metrics(LINES.encode()) == {"coder": {
        "m-1": {"input": 10, "output": 4, "cache_read": 0, "cache_creation": 0},
        "m-2": {"input": 0, "output": 0, "cache_read": 7, "cache_creation": 0}}}


@pytest.mark.parametrize("body", [b"sphragis_tokens_total{agent=\n", b"\xff\xfe\x00",
                                  b"x" * (MAX_BODY + 1)])
def test_garbage_is_a_metrics_error(body: bytes) -> None:
    with pytest.raises(MetricsError):
        parse_metrics(body)


def test_cost_uses_the_longest_prefix_and_an_unpriced_model_the_highest_prices() -> None:
    config = Config(roles=builtin_config().roles,
                    pricing={"m": Price(input=1.0, cache_read=0.5),
                             "m-1": Price(input=2.0, output=10.0)})
    counts = {"input": 1000, "output": 100, "cache_read": 1000, "cache_creation": 0}
    assert role_cost(config, {"m-1": counts}) == pytest.approx(0.003)
    assert role_estimated(config, {"m-1": counts}) == []
    # Not in [pricing]: each direction at the highest price the table has, and said so.
    assert role_cost(config, {"other": counts, "m-1": counts}) == pytest.approx(0.0065)
    assert role_estimated(config, {"other": counts, "m-1": counts}) == ["other"]
    assert role_cost(config, {}) is None
    # Without a table nothing can be priced (the config warns about a USD budget then).
    assert role_cost(Config(roles=builtin_config().roles), {"other": counts}) is None


# ---- the prober ------------------------------------------------------------------------

class Core:
    def __init__(self) -> None:
        self.told: list = []

    def tell(self, message) -> None:
        self.told.append(message)


def _prober(fetch):
    core, timers, me = Core(), Timers(), Handle("gateway")
    state = ProberState("http://127.0.0.1:1/metrics")
    me.attach(GatewayProber.start(state, core, timers, me, fetch=fetch))
    return core, timers, me, state


@pytest.mark.parametrize(("result", "reason"), [
    (OSError("connection refused"), "connection refused"),
    (b"y" * (MAX_BODY + 1), "over"),
    (b"{{{ not metrics", "unreadable"),
])
def test_bad_answers_mark_the_gateway_down(result, reason) -> None:
    def fetch(url: str) -> bytes:
        if isinstance(result, Exception):
            raise result
        return result

    core, timers, me, state = _prober(fetch)
    try:
        me.tell(Probe())
        health = wait_until(lambda: [t for t in core.told if isinstance(t, GatewayHealth)])
        assert not health[0].up and reason in health[0].reason
        assert not state.health.up and me.alive
    finally:
        me.current().stop()
        timers.stop()


def test_changes_are_told_once_and_totals_every_time() -> None:
    answers = [LINES.encode(), LINES.encode(), OSError("gone")]
    core, timers, me, _ = _prober(lambda url: _next(answers))
    try:
        for _ in range(3):
            me.tell(Probe())
        wait_until(lambda: len([t for t in core.told if isinstance(t, GatewayHealth)]) == 2)
        health = [t.up for t in core.told if isinstance(t, GatewayHealth)]
        assert health == [True, False]
        assert len([t for t in core.told if isinstance(t, TokenTotals)]) == 2
    finally:
        me.current().stop()
        timers.stop()


def _next(answers: list):
    answer = answers.pop(0) if answers else OSError("gone")
    if isinstance(answer, Exception):
        raise answer
    return answer


def test_a_big_page_of_other_series_is_read_not_refused() -> None:
    """The prober reads the token lines of a page past the old 1 MiB limit; the
    other series on it (another exporter's, a flood of request counts) are
    skipped, not a reason to call the gateway down."""
    from choragos.actors.gatewayprober import fetch_metrics
    from tests.integration.metricsserver import ScriptedGateway

    noise = "".join(f'sphragis_requests_total{{agent="r{n}",api="anthropic",code="404"}} 1\n'
                    for n in range(40_000))
    gateway = ScriptedGateway()
    try:
        gateway.set("coder", "m-1", input=10)
        gateway.body = noise.encode() + gateway.body
        assert len(gateway.body) > 2 << 20
        got = parse_metrics(fetch_metrics(f"http://127.0.0.1:{gateway.port}/metrics"))
        assert got == {"coder": {"m-1": {"input": 10, "output": 0, "cache_read": 0,
                                          "cache_creation": 0}}}
    finally:
        gateway.down()
