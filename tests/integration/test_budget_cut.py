"""``budget_action = "cut"``: a streamed answer ended where it crosses the budget.

A real gateway (in this process) in front of a scripted upstream that
streams one event per chunk; the gateway is given the role's policy as a
session would give it.  The agent's side is read as its SDK would read it:
the events before the cut, then one error event in the API's own format.
"""

from __future__ import annotations

import contextlib
import json

import pytest

from choragos.gateway.budgetgate import BudgetGate
from choragos.gateway.metrics import Tally
from choragos.gateway.watch import AnswerWatch
from tests.e2e.fakemodel import read_sse
from tests.integration.gatewayfakes import (
    ScriptedUpstream,
    base_url,
    metric,
    request,
    running_gateway,
    tokens,
)

pytestmark = pytest.mark.timeout(60)

PRICES = {"claude-": {"input": 1.0, "output": 5.0, "cache_read": 0.0, "cache_creation": 0.0},
          "gemini-": {"input": 1.0, "output": 5.0, "cache_read": 0.0, "cache_creation": 0.0}}


def _sse(event: str | None, data: dict) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(data).encode() + b"\n\n"


def _anthropic(input_tokens: int) -> list[bytes]:
    start = {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
        "content": [], "stop_reason": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}
    return [_sse("message_start", start),
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": "hello"}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                   "usage": {"output_tokens": 40}}),
            _sse("message_stop", {"type": "message_stop"})]


def _gemini_chunk(n: int) -> bytes:
    body = {"candidates": [{"content": {"parts": [{"text": f"part {n} "}], "role": "model"}}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 100 * n,
                              "totalTokenCount": 100 + 100 * n},
            "modelVersion": "gemini-test"}
    return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"


class Gateway:
    """The real gateway with a budget gate over ``upstream``, until ``stack`` closes."""

    def __init__(self, stack: contextlib.ExitStack, upstream: ScriptedUpstream,
                 roles: dict) -> None:
        self.tally, self.news = Tally(), []
        self.gate = BudgetGate(lambda: self.tally.counts()["tokens"])
        self.gate.update({"budgets": {"roles": roles, "session": None, "pricing": PRICES}})
        server = stack.enter_context(running_gateway(
            {"anthropic": upstream.url, "gemini": upstream.url}, tally=self.tally,
            watch=AnswerWatch(self.news.append), gate=self.gate))
        self.url = base_url(server)


@pytest.fixture
def scripted():
    with contextlib.ExitStack() as stack:

        def make(pieces: list[bytes], roles: dict) -> tuple[ScriptedUpstream, Gateway]:
            upstream = ScriptedUpstream(pieces)
            stack.callback(upstream.close)
            return upstream, Gateway(stack, upstream, roles)

        yield make


def test_an_answer_whose_input_crosses_the_budget_is_cut_before_its_text(scripted):
    upstream, gateway = scripted(_anthropic(600_000), {"coder": {
        "usd": 0.5, "tokens": None, "action": "cut"}})
    status, _, raw = request(f"{gateway.url}/agent/coder/v1/messages",
                             body={"model": "claude-test-1", "stream": True, "messages": []})
    events = read_sse(raw)
    assert status == 200
    assert [name for name, _ in events] == ["message_start", "error"]
    error = events[-1][1]["error"]
    assert error["type"] == "budget_exceeded"
    assert "the budget of role coder is spent ($0.60 of $0.50)" in error["message"]
    assert "cut where it crossed the budget" in error["message"]
    # Counted exactly as far as the stream said: its input, the one output token so far.
    assert tokens(gateway.url) == {"coder": {"claude-test-1": {
        "input": 600_000, "output": 1, "cache_read": 0, "cache_creation": 0}}}
    assert gateway.news[-1]["blocked"]["role"] == "coder"
    assert metric(gateway.url, "sphragis_errors_total", agent="coder",
                  kind="budget_cut") == 1
    # The next call never reaches the upstream.
    status, _, raw = request(f"{gateway.url}/agent/coder/v1/messages",
                             body={"model": "claude-test-1", "stream": True, "messages": []})
    assert status == 402 and len(upstream.seen) == 1


def test_a_stream_reporting_as_it_goes_is_cut_at_the_chunk_that_crosses(scripted):
    upstream, gateway = scripted([_gemini_chunk(n) for n in range(1, 6)], {"coder": {
        "usd": None, "tokens": 300, "action": "cut"}})
    status, _, raw = request(f"{gateway.url}/agent/coder/v1beta/models/gemini-test:"
                             "streamGenerateContent?alt=sse", body={"contents": []})
    datas = [json.loads(line[5:]) for line in raw.decode().splitlines()
             if line.startswith("data:")]
    assert status == 200
    assert [d["candidates"][0]["content"]["parts"][0]["text"] for d in datas[:-1]] == \
        ["part 1 ", "part 2 "]
    assert datas[-1]["error"]["status"] == "BUDGET_EXCEEDED"
    assert "300 tokens of 300" in datas[-1]["error"]["message"]
    assert tokens(gateway.url) == {"coder": {"gemini-test": {
        "input": 100, "output": 200, "cache_read": 0, "cache_creation": 0}}}
    status, _, _ = request(f"{gateway.url}/agent/coder/v1beta/models/gemini-test:"
                           "streamGenerateContent?alt=sse", body={"contents": []})
    assert status == 402 and len(upstream.seen) == 1


def test_a_role_whose_budget_blocks_has_its_answer_finished_and_counted(scripted):
    upstream, gateway = scripted(_anthropic(600_000), {"coder": {
        "usd": 0.5, "tokens": None, "action": "block"}})
    status, _, raw = request(f"{gateway.url}/agent/coder/v1/messages",
                             body={"model": "claude-test-1", "stream": True, "messages": []})
    assert [name for name, _ in read_sse(raw)][-1] == "message_stop"
    assert tokens(gateway.url)["coder"]["claude-test-1"]["output"] == 40
    status, _, _ = request(f"{gateway.url}/agent/coder/v1/messages",
                           body={"model": "claude-test-1", "stream": True, "messages": []})
    assert status == 402 and len(upstream.seen) == 1
