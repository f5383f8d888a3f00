"""What the built-in gateway does with strange input from the wire: paths, usage, bodies.

Real :class:`~choragos.gateway.proxy.ProxyServer` on a loopback port, real
upstream servers answering with canned bytes.
"""

from __future__ import annotations

import gzip
import http.client
import json
import time

import pytest

from choragos.gateway.usage import MAX_TOKENS
from tests.conftest import wait_until
from tests.integration.gatewayfakes import (
    Canned,
    CannedUpstream,
    base_url,
    metric,
    request,
    running_gateway,
    tokens,
)

pytestmark = pytest.mark.timeout(60)


def _response(status: str, usage: dict | None) -> bytes:
    return json.dumps({"id": "resp_bg1", "object": "response", "model": "gpt-bg",
                       "status": status, "usage": usage}).encode()


def test_an_openai_background_response_is_counted_when_read_and_only_once():
    """Background mode: the POST answers "queued" with no usage; the usage comes with
    the result, read later by its id. Before, that read was never counted."""
    done = _response("completed", {"input_tokens": 500, "output_tokens": 20})
    upstream = CannedUpstream({("POST", "/v1/responses"): Canned(_response("queued", None)),
                               ("GET", "/v1/responses/resp_bg1"): Canned(done)})
    lines: list[str] = []
    try:
        with running_gateway({"openai": upstream.url}, record=lines.append) as gw:
            url = f"{base_url(gw)}/agent/coder/v1/responses"
            assert request(url, body={"background": True, "input": "hi"})[0] == 200
            assert tokens(gw) == {}
            for _ in range(2):  # read twice: counted once
                assert request(f"{url}/resp_bg1", "GET")[0] == 200
            assert tokens(gw) == {"coder": {"gpt-bg": {
                "input": 500, "output": 20, "cache_read": 0, "cache_creation": 0}}}
            assert metric(gw, "sphragis_errors_total") == 0  # "queued" is no missing usage
            # Logged once the agent has the end of its answer.
            wait_until(lambda: any("(counted before)" in line for line in lines), 10,
                       message="logged")
            assert sum("(counted before)" in line for line in lines) == 1, lines
    finally:
        upstream.close()


@pytest.mark.parametrize("path", ["/v1/responses/..", "/v1/responses/%2e%2E",
                                  "/v1/responses/x/../../responses",
                                  "/v1/responses/x%2F..%2F..%2Fresponses",
                                  "/v1/messages/count_tokens/..\\..", "/v1/./messages"])
def test_a_path_with_dot_segments_is_refused_not_forwarded(path):
    """``/v1/responses/..`` looked like an uncounted read of a response here, and an
    upstream that resolves it answers as /v1/responses: tokens nobody counted."""
    upstream = CannedUpstream({})
    try:
        with running_gateway({"openai": upstream.url, "anthropic": upstream.url}) as gw:
            status, _, body = request(f"{base_url(gw)}/agent/coder{path}", body={})
            assert status == 400, path
            assert "'.' or '..' segments" in json.loads(body)["error"]["message"]
            assert metric(gw, "sphragis_errors_total", agent="coder", kind="bad_request") == 1
        assert upstream.seen == []
    finally:
        upstream.close()


def test_an_absurd_usage_count_is_taken_as_the_bound_and_said_so():
    forged = json.dumps({"id": "c1", "object": "chat.completion", "model": "gpt-x",
                         "usage": {"prompt_tokens": 10**40, "completion_tokens": 7}}).encode()
    upstream = CannedUpstream({("POST", "/v1/chat/completions"): Canned(forged)})
    lines: list[str] = []
    try:
        with running_gateway({"openai": upstream.url}, record=lines.append) as gw:
            url = f"{base_url(gw)}/agent/coder/v1/chat/completions"
            assert request(url, body={})[0] == 200
            assert tokens(gw)["coder"]["gpt-x"] == {
                "input": MAX_TOKENS, "output": 7, "cache_read": 0, "cache_creation": 0}
            assert metric(gw, "sphragis_errors_total", agent="coder",
                          kind="usage_clamped") == 1
            said = f"a usage count above {MAX_TOKENS} was taken as {MAX_TOKENS}"
            wait_until(lambda: any(said in line for line in lines), 10, message="logged")
    finally:
        upstream.close()


def test_an_upstream_that_closes_before_its_content_length_ends_the_agents_answer():
    body = json.dumps({"type": "message", "model": "claude-x",
                       "usage": {"input_tokens": 5, "output_tokens": 1}}).encode()
    upstream = CannedUpstream({("POST", "/v1/messages"): Canned(body, short_by=10)})
    try:
        with running_gateway({"anthropic": upstream.url}) as gw:
            conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=15)
            began = time.monotonic()
            conn.request("POST", "/agent/coder/v1/messages", body=b"{}")
            response = conn.getresponse()
            assert response.status == 200
            with pytest.raises(http.client.IncompleteRead):
                response.read()  # before: a wait for 10 bytes that never came
            assert time.monotonic() - began < 10
            conn.close()
            assert metric(gw, "sphragis_errors_total", agent="coder",
                          kind="upstream_broken") == 1
    finally:
        upstream.close()


def test_a_compressed_answer_that_inflates_hugely_is_passed_on_and_not_inflated_whole():
    bomb = gzip.compress(b"{" + b" " * (32 << 20), compresslevel=9)
    upstream = CannedUpstream({("POST", "/v1/messages"): Canned(
        bomb, headers={"Content-Encoding": "gzip"})})
    try:
        with running_gateway({"anthropic": upstream.url}) as gw:
            status, _, got = request(f"{base_url(gw)}/agent/coder/v1/messages", body={},
                                     headers={"Accept-Encoding": "gzip"})
            assert status == 200 and got == bomb  # passed on untouched
            assert metric(gw, "sphragis_errors_total", agent="coder",
                          kind="usage_unreadable") == 1
    finally:
        upstream.close()
