"""The delegate/work-done loop with real Claude Code, all traffic through the built-in gateway.

Every claude's ``ANTHROPIC_BASE_URL`` is the session's own gateway, which
passes the requests on to the fake model.  The scenario checks that the
loop works exactly as it does direct, and that the tokens the gateway
counted are exactly the usage the fake model reported, attributed to the
role that spent them, in ``/metrics``, ``choragos status`` and ``choragos report``.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.fakemodel import FakeModel, text, tool
from tests.e2e.scenario import BRIEF, claude_role
from tests.e2e.test_scenarios import BOOT_TIMEOUT, bash, environ, tool_said
from tests.integration.gatewayfakes import free_port, tokens

pytestmark = [pytest.mark.claude, pytest.mark.timeout(150)]


def _sum(totals: dict) -> dict[str, int]:
    out = {"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0}
    for models in totals.values():
        for counts in models.values():
            for direction in out:
                out[direction] += counts.get(direction, 0)
    return out


def test_the_loop_through_the_builtin_gateway_counts_every_token(crew, fake_model: FakeModel):
    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude")
             + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
             + f'[gateway.upstream]\nanthropic = "{fake_model.base_url}"\n')
    work = s.workdir
    fake_model.on(BRIEF.format(role="orchestrator"),
                  bash('choragos delegate --to coder --task "Create hello.txt saying hello"',
                       "Delegate the task"))
    fake_model.on(tool_said("delegated T1 to coder"), text("Waiting for the coder."))
    fake_model.on("New task T1 from choragos",
                  tool("Write", {"file_path": str(work / "hello.txt"), "content": "hello\n"}))
    fake_model.on(tool_said("hello.txt"),
                  bash('choragos work-done --id T1 --done --task "Wrote hello.txt"',
                       "Report the task"))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    for role, view in s.status().items():
        # Each role's base URL carries its own key: only it can charge that role.
        url = environ(view["pid"])["ANTHROPIC_BASE_URL"]
        assert re.fullmatch(f"{gateway}/agent/{role}/[0-9a-f]{{32}}", url), url

    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 60, "work-done")
    s.wait_told("A worker reports: [T1 from coder] Wrote hello.txt")
    assert (work / "hello.txt").read_text() == "hello\n"

    # Every reply the fake model sent carried its usage (120 in, 12 out); once
    # the team is quiet, the gateway has counted each of them once.
    def settled() -> dict | None:
        answered = len(fake_model.message_requests(with_tools=False))
        counted = tokens(gateway)
        want = {"input": 120 * answered, "output": 12 * answered, "cache_read": 0,
                "cache_creation": 0}
        return counted if answered and _sum(counted) == want else None

    counted = s.wait(settled, 30, "the gateway's counts to match the fake model's replies")
    assert set(counted) == {"orchestrator", "coder"}, counted
    models = {r.body.get("model") for r in fake_model.message_requests(with_tools=False)}
    assert {m for per_role in counted.values() for m in per_role} == models
    # Each role's turns carry its own brief, so per-role counts can be checked too.
    for role in ("orchestrator", "coder"):
        turns = [r for r in fake_model.message_requests()
                 if BRIEF.format(role=role) in json.dumps(r.body)]
        assert _sum({role: counted[role]})["input"] >= 120 * len(turns) > 0

    # A turn may still be answered after the counts matched (the orchestrator
    # reads the worker's report): compare the status with the gateway's counts
    # as they are now, read again on every look.
    def status_matches() -> dict | None:
        now, view = tokens(gateway), s.status()
        return view if view and set(now) <= set(view) and all(
            _sum({r: now[r]}) == view[r]["tokens"] for r in now) else None

    status = s.wait(status_matches, 15, "status tokens")
    assert status["coder"]["tokens"]["output"] > 0
    log = (s.workdir / ".choragos" / "logs" / "gateway.log").read_text()
    assert metric_sum(gateway, "sphragis_errors_total") == 0, log
    s.finish()
    # The final snapshot at stop is what the report adds up: every reply, exactly.
    answered = len(fake_model.message_requests(with_tools=False))
    report = s.cli("report", "--json")
    by_role = {r["role"]: r["tokens"] for r in json.loads(report.stdout)["roles"]}
    assert sum(by_role[role]["total"] for role in counted) == 132 * answered


def metric_sum(url: str, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    from tests.integration.gatewayfakes import request

    body = request(f"{url}/metrics", "GET")[2].decode()
    return sum(sample.value for family in text_string_to_metric_families(body)
               for sample in family.samples if sample.name == name)
