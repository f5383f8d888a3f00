"""The built-in gateway proxying the three APIs to the project's fake model servers.

Each test streams real HTTP through a real :class:`ProxyServer` to a fake
upstream and checks what the agent got back, what the upstream was sent,
and the counters on ``/metrics`` as the session's prober reads them.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import struct
import threading
from urllib.parse import urlsplit

import pytest

from choragos.gateway.labels import UNKNOWN
from tests.conftest import wait_until
from tests.e2e.fakegemini import FakeGemini
from tests.e2e.fakemodel import FakeModel, Usage, read_sse, text
from tests.e2e.fakeopenai import FakeOpenAI
from tests.integration.gatewayfakes import (
    ScriptedUpstream,
    base_url,
    free_port,
    metric,
    request,
    running_gateway,
    self_signed,
    tokens,
)

pytestmark = pytest.mark.timeout(60)

KEY = "sk-ant-test-000"
USAGE = Usage(input_tokens=1000, output_tokens=50, cache_creation_input_tokens=30,
              cache_read_input_tokens=200)
TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


def _messages(stream: bool) -> dict:
    return {"model": "claude-test-1", "max_tokens": 100, "stream": stream, "tools": TOOLS,
            "messages": [{"role": "user", "content": "hello"}]}


def test_anthropic_messages_stream_json_and_count_tokens():
    with FakeModel(usage=USAGE) as fake, running_gateway({"anthropic": fake.base_url}) as gw:
        fake.default = text("streamed through the gateway")
        url = f"{base_url(gw)}/agent/coder/v1/messages?beta=true"
        headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "X-Custom": "kept"}
        status, got, body = request(url, body=_messages(True), headers=headers)
        assert status == 200 and got["content-type"] == "text/event-stream"
        # The fake closes its connection to end a stream: the agent gets it chunked.
        assert got["transfer-encoding"] == "chunked"
        events = read_sse(body)
        assert events[0][0] == "message_start"
        assert events[-1][0] == "message_stop"
        said = "".join(d["delta"].get("text", "") for n, d in events
                       if n == "content_block_delta")
        assert said == "streamed through the gateway"

        status, _, body = request(url, body=_messages(False), headers=headers)
        assert status == 200 and json.loads(body)["usage"]["input_tokens"] == 1000
        status, _, body = request(f"{base_url(gw)}/agent/coder/v1/messages/count_tokens",
                                  body={"model": "claude-test-1", "messages": []},
                                  headers=headers)
        assert status == 200 and json.loads(body) == {"input_tokens": 1000}

        seen = [r for r in fake.requests if r.method == "POST"]
        assert [(r.path, r.query) for r in seen] == [("/v1/messages", "beta=true")] * 2 + [
            ("/v1/messages/count_tokens", "")]
        for r in seen:  # the agent's own headers reach the upstream untouched
            assert r.headers["x-api-key"] == KEY and r.headers["x-custom"] == "kept"
            assert r.headers["anthropic-version"] == "2023-06-01"
            assert r.headers["host"] == urlsplit(fake.base_url).netloc
        # Two replies counted; count_tokens is a question, not usage.
        assert tokens(gw) == {"coder": {"claude-test-1": {
            "input": 2000, "output": 100, "cache_read": 400, "cache_creation": 60}}}
        assert metric(gw, "sphragis_requests_total", agent="coder", api="anthropic",
                      code="200") == 3
        assert metric(gw, "sphragis_errors_total") == 0


def test_openai_responses_stream_and_json():
    usage = Usage(input_tokens=700, output_tokens=40, cache_read_input_tokens=300)
    with FakeOpenAI(usage=usage) as fake, running_gateway({"openai": fake.base_url}) as gw:
        fake.default = text("hi from responses")
        url = f"{base_url(gw)}/agent/reviewer/v1/responses"
        body = {"model": "gpt-test", "stream": True, "tools": [{"type": "function",
                                                                "name": "shell"}],
                "input": [{"type": "message", "role": "user", "content": "hi"}]}
        auth = {"Authorization": "Bearer sk-openai-test"}
        status, _, raw = request(url, body=body, headers=auth)
        assert status == 200
        events = read_sse(raw)
        assert events[-1][0] == "response.completed"
        status, _, raw = request(url, body={**body, "stream": False}, headers=auth)
        assert status == 200 and json.loads(raw)["status"] == "completed"
        assert all(r.headers["authorization"] == "Bearer sk-openai-test"
                   for r in fake.message_requests(with_tools=False))
        # Responses counts cached tokens inside input_tokens: split out as cache_read.
        assert tokens(gw) == {"reviewer": {"gpt-test": {
            "input": 1400, "output": 80, "cache_read": 600, "cache_creation": 0}}}


def test_gemini_sse_stream_and_json_with_the_model_from_the_path():
    usage = Usage(input_tokens=500, output_tokens=25, cache_read_input_tokens=100)
    with FakeGemini(usage=usage) as fake, running_gateway({"gemini": fake.base_url}) as gw:
        fake.default = text("a gemini answer in several pieces of streamed text")
        base = f"{base_url(gw)}/agent/auditor/v1beta/models/gemini-test"
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "tools": [{"functionDeclarations": [{"name": "run"}]}]}
        key = {"x-goog-api-key": "gemini-test-key"}
        status, _, raw = request(f"{base}:streamGenerateContent?alt=sse", body=body,
                                 headers=key)
        assert status == 200
        chunks = [data for _, data in read_sse(raw)]
        assert len(chunks) > 1 and "".join(
            c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks
        ) == "a gemini answer in several pieces of streamed text"
        status, _, raw = request(f"{base}:generateContent", body=body, headers=key)
        assert status == 200 and json.loads(raw)["usageMetadata"]["promptTokenCount"] == 600
        status, _, raw = request(f"{base}:countTokens", body=body, headers=key)
        assert status == 200
        assert [r.query for r in fake.requests if r.method == "POST"] == ["alt=sse", "", ""]
        assert all(r.headers["x-goog-api-key"] == "gemini-test-key" for r in fake.requests)
        # Every streamed chunk repeats the prompt count: counted once per reply.
        assert tokens(gw) == {"auditor": {"gemini-test": {
            "input": 1000, "output": 50, "cache_read": 200, "cache_creation": 0}}}


CHAT = [
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-chat-test",'
    b'"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-chat-test",'
    b'"choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n',
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-chat-test","choices":[],'
    b'"usage":{"prompt_tokens":900,"completion_tokens":33,'
    b'"prompt_tokens_details":{"cached_tokens":400}}}\n\n',
    b"data: [DONE]\n\n",
]


def test_chat_completions_stream_byte_for_byte_and_unbuffered():
    upstream = ScriptedUpstream(CHAT)
    upstream.hold = threading.Event()
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=20)
            conn.request("POST", "/agent/coder/v1/chat/completions",
                         body=b'{"stream":true}', headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            # The upstream holds everything after its first piece until we have that one.
            first = response.read1(65536)
            assert first == CHAT[0]
            upstream.hold.set()
            rest = response.read()
            conn.close()
            assert first + rest == b"".join(CHAT)
            assert upstream.seen[0][1] == "/v1/chat/completions"
            assert tokens(gw) == {"coder": {"gpt-chat-test": {
                "input": 500, "output": 33, "cache_read": 400, "cache_creation": 0}}}
    finally:
        upstream.close()


def _chunk_sizes(raw: bytes) -> list[int]:
    """The chunk sizes of a whole chunked body, as framed on the wire."""
    sizes, pos = [], 0
    while True:
        eol = raw.index(b"\r\n", pos)
        size = int(raw[pos:eol], 16)
        sizes.append(size)
        if size == 0:
            return sizes
        pos = eol + 2 + size + 2


def test_the_agent_reads_the_upstreams_own_chunks_and_a_split_usage_is_counted():
    # Chunks bigger than a socket reader's buffer, and the usage key cut in two by the
    # framing: the agent must get each chunk as the upstream framed it (one write per
    # read, not one chunk per buffer-sized piece), and the meter the payload joined.
    big = [b'data: {"choices":[{"delta":{"content":"' + b"y" * 20000 + b'"}}]}\n\n'] * 3
    split = CHAT[2].index(b"usage") + 2
    pieces = [CHAT[0], *big, CHAT[2][:split], CHAT[2][split:], CHAT[3]]
    upstream = ScriptedUpstream(pieces)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            with socket.create_connection(gw.server_address[:2], timeout=20) as raw:
                raw.sendall(b"POST /agent/coder/v1/chat/completions HTTP/1.1\r\n"
                            b"Host: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                answer = b""
                while piece := raw.recv(65536):
                    answer += piece
            head, _, body = answer.partition(b"\r\n\r\n")
            assert b"Transfer-Encoding: chunked" in head
            assert _chunk_sizes(body) == [len(p) for p in pieces] + [0]
            assert tokens(gw) == {"coder": {"gpt-chat-test": {
                "input": 500, "output": 33, "cache_read": 400, "cache_creation": 0}}}
    finally:
        upstream.close()


def test_after_a_chunked_answer_passed_on_both_connections_serve_the_next_request():
    upstream = ScriptedUpstream(CHAT)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=20)
            for _ in range(3):
                conn.request("POST", "/agent/coder/v1/chat/completions", body=b"{}")
                assert conn.getresponse().read() == b"".join(CHAT)
            conn.close()
            assert len(upstream.peers) == 3
            assert len(set(upstream.peers)) == 1  # the gateway's upstream line kept alive
            assert tokens(gw)["coder"]["gpt-chat-test"]["output"] == 99
    finally:
        upstream.close()


def test_a_gzip_body_is_passed_on_compressed_and_still_counted():
    body = json.dumps({"id": "c2", "object": "chat.completion", "model": "gpt-zip",
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
    upstream = ScriptedUpstream([body], "application/json", gzipped=True)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=20)
            conn.request("POST", "/agent/coder/v1/chat/completions", body=b"{}",
                         headers={"Accept-Encoding": "br, gzip, zstd"})
            response = conn.getresponse()
            assert response.getheader("Content-Encoding") == "gzip"
            import gzip
            assert gzip.decompress(response.read()) == body
            conn.close()
            # Only encodings the gateway can read are asked of the upstream.
            assert upstream.seen[0][2]["accept-encoding"] == "gzip"
            assert tokens(gw)["coder"]["gpt-zip"]["input"] == 10
    finally:
        upstream.close()


def test_unknown_paths_get_a_clear_404_and_count_as_errors():
    with running_gateway({}) as gw:
        for path in ("/agent/coder/v2/whatever", "/v1/messages", "/agent/../v1/messages"):
            status, headers, body = request(base_url(gw) + path, body=b"{}")
            assert status == 404 and headers["content-type"] == "application/json"
            message = json.loads(body)["error"]["message"]
            assert "choragos gateway: no API at" in message and "/v1/messages" in message
        assert metric(gw, "sphragis_errors_total", agent="coder", kind="not_found") == 1
        assert metric(gw, "sphragis_errors_total", agent=UNKNOWN, kind="not_found") == 2
        assert request(base_url(gw) + "/healthz", "GET")[0] == 200
        # Claude Code checks its base URL with a HEAD before the first request.
        assert request(base_url(gw) + "/agent/coder", "HEAD")[0] == 200
        assert request(base_url(gw) + "/agent/coder/", "GET")[0] == 200
        assert metric(gw, "sphragis_errors_total", agent="coder") == 1


def test_an_upstream_that_refuses_is_a_502():
    with running_gateway({"anthropic": f"http://127.0.0.1:{free_port()}"}) as gw:
        status, _, body = request(f"{base_url(gw)}/agent/coder/v1/messages",
                                  body=_messages(True))
        assert status == 502
        error = json.loads(body)["error"]
        assert error["type"] == "upstream_unreachable" and "cannot reach" in error["message"]
        assert metric(gw, "sphragis_errors_total", agent="coder",
                      kind="upstream_unreachable") == 1
        assert metric(gw, "sphragis_requests_total", agent="coder", code="502") == 1


def test_an_upstream_that_never_answers_is_a_504():
    upstream = ScriptedUpstream([], silent=True)
    try:
        with running_gateway({"gemini": upstream.url}, timeout=0.5) as gw:
            status, _, body = request(
                f"{base_url(gw)}/agent/coder/v1beta/models/g:generateContent", body=b"{}")
            assert status == 504
            assert "did not answer within 0.5s" in json.loads(body)["error"]["message"]
            assert metric(gw, "sphragis_errors_total", kind="upstream_timeout") == 1
    finally:
        upstream.close()


def test_a_malformed_request_is_passed_through_and_the_upstream_answer_returned():
    with FakeModel() as fake, running_gateway({"anthropic": fake.base_url}) as gw:
        status, _, body = request(f"{base_url(gw)}/agent/coder/v1/messages",
                                  body=b"this is not json")
        assert status == 404 and b"not served by the fake model" in body
        assert fake.requests[-1].body == "this is not json"
        assert metric(gw, "sphragis_requests_total", agent="coder", code="404") == 1
        assert tokens(gw) == {}


def test_an_answer_whose_usage_cannot_be_read_is_passed_on_and_counted_as_an_error():
    garbage = [b"data: {\"usage\": not json\n\n", b"data: [DONE]\n\n"]
    upstream = ScriptedUpstream(garbage)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            status, _, body = request(f"{base_url(gw)}/agent/coder/v1/responses", body=b"{}")
            assert status == 200 and body == b"".join(garbage)
            assert metric(gw, "sphragis_errors_total", agent="coder",
                          kind="usage_unreadable") == 1
            assert tokens(gw) == {}
    finally:
        upstream.close()


def test_keep_alive_serves_many_requests_on_one_connection():
    with FakeModel(usage=USAGE) as fake, running_gateway({"anthropic": fake.base_url}) as gw:
        conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=20)
        for _ in range(3):
            conn.request("POST", "/agent/coder/v1/messages", body=json.dumps(_messages(True)))
            response = conn.getresponse()
            assert response.status == 200 and read_sse(response.read())[-1][0] == "message_stop"
        conn.close()
        assert tokens(gw)["coder"]["claude-test-1"]["output"] == 150


def test_a_chunked_request_body_is_streamed_on():
    upstream = ScriptedUpstream([b'data: {"model":"m","usage":{"prompt_tokens":1}}\n\n'])
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=20)
            parts = [b'{"model":', b' "m", "input": "', b"x" * 100_000, b'"}']
            conn.request("POST", "/agent/coder/v1/responses", body=iter(parts),
                         encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
            assert conn.getresponse().read().startswith(b"data: ")
            conn.close()
            assert upstream.seen[0][3] == b"".join(parts)
            assert upstream.seen[0][2]["transfer-encoding"] == "chunked"
    finally:
        upstream.close()


def _chat_cut_short(gw) -> bytes:
    """A chat completion through ``gw`` whose stream ends unfinished: what came."""
    conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=20)
    conn.request("POST", "/agent/coder/v1/chat/completions", body=b"{}")
    response = conn.getresponse()
    with pytest.raises(http.client.IncompleteRead) as cut:
        response.read()
    conn.close()
    return cut.value.partial


def test_an_upstream_that_breaks_off_mid_stream_ends_the_agents_stream_and_counts():
    upstream = ScriptedUpstream(CHAT[:3], truncate=True)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            assert _chat_cut_short(gw) == b"".join(CHAT[:3])
            assert metric(gw, "sphragis_errors_total", kind="upstream_broken") == 1
            # What arrived before the break is still counted.
            assert tokens(gw)["coder"]["gpt-chat-test"]["output"] == 33
    finally:
        upstream.close()


def test_an_agent_that_goes_away_mid_stream_is_counted_and_the_gateway_carries_on():
    upstream = ScriptedUpstream([CHAT[0]] + [CHAT[1]] * 2000 + CHAT[2:])
    upstream.hold = threading.Event()
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=20)
            conn.request("POST", "/agent/coder/v1/chat/completions", body=b"{}")
            assert conn.getresponse().read1(65536) == CHAT[0]
            conn.sock.shutdown(2)
            conn.close()
            upstream.hold.set()
            wait_until(lambda: metric(gw, "sphragis_errors_total", kind="client_gone") == 1,
                       20, message="client_gone counted")
            status, _, body = request(f"{base_url(gw)}/agent/coder/v1/chat/completions",
                                      body=b"{}")
            assert status == 200 and body.endswith(b"[DONE]\n\n")
    finally:
        upstream.close()


@pytest.mark.parametrize("head,body", [
    (b"Content-Length: abc\r\n", b""),
    (b"Content-Length: 100\r\n", b'{"cut": '),
])
def test_a_broken_request_body_is_a_400_and_nothing_breaks(head, body):
    with FakeModel() as fake, running_gateway({"anthropic": fake.base_url}) as gw:
        with socket.create_connection(gw.server_address[:2], timeout=10) as raw:
            raw.sendall(b"POST /agent/coder/v1/messages HTTP/1.1\r\nHost: x\r\n" + head
                        + b"\r\n" + body)
            raw.shutdown(socket.SHUT_WR)
            answer = b""
            while piece := raw.recv(65536):
                answer += piece
        assert answer.startswith(b"HTTP/1.1 400 ")
        assert b"choragos gateway: " in answer and b"bad_request" in answer
        assert metric(gw, "sphragis_errors_total", kind="bad_request") == 1
        status, _, _ = request(f"{base_url(gw)}/agent/coder/v1/messages",
                               body={"model": "m", "messages": []})
        assert status == 200


def test_a_long_stream_passes_through_without_being_held_in_memory():
    import tracemalloc

    piece = (b'data: {"choices":[{"delta":{"content":"' + b"x" * 1000 + b'"}}]}\n\n') * 64
    pieces = [piece] * 800 + [CHAT[2]]  # about 53 MB, the same object repeated
    upstream = ScriptedUpstream(pieces)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            tracemalloc.start()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", gw.server_address[1], timeout=60)
                conn.request("POST", "/agent/coder/v1/chat/completions", body=b"{}")
                response = conn.getresponse()
                size = 0
                while data := response.read1(1 << 16):
                    size += len(data)
                conn.close()
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert size == len(piece) * 800 + len(CHAT[2])
            assert peak < 8 << 20, f"peak {peak} bytes while streaming {size}"
            assert tokens(gw)["coder"]["gpt-chat-test"]["output"] == 33
    finally:
        upstream.close()


def test_a_streamed_answer_is_searched_once_and_copied_out_only_where_usage_is(monkeypatch):
    # Each read lands in one buffer; the meter searches its chunks' data there,
    # every byte once, and copies out (joins) only a read that holds the hint.
    from choragos.gateway import usage
    from choragos.gateway.proxy import RAW_PIECE
    searched: list[int] = []
    joined: list[int] = []
    real_find, real_feed = usage.find, usage.UsageMeter.feed

    def counted_find(buf, needle, start=0, end=None):
        searched.append((len(buf) if end is None else end) - start)
        return real_find(buf, needle, start, end)

    def counted_feed(self, data):
        joined.append(len(data))
        real_feed(self, data)

    def counted_finder(buf, needle):  # the search bound to the relay's buffer
        search = real_finder(buf, needle)

        def counted(start, end):
            searched.append(end - start)
            return search(start, end)
        return counted

    real_finder = usage.finder
    monkeypatch.setattr(usage, "find", counted_find)
    monkeypatch.setattr(usage, "finder", counted_finder)
    monkeypatch.setattr(usage.UsageMeter, "feed", counted_feed)
    piece = (b'data: {"choices":[{"delta":{"content":"' + b"x" * 1000 + b'"}}]}\n\n') * 64
    pieces = [piece] * 200 + [CHAT[2]]
    payload = len(piece) * 200 + len(CHAT[2])
    upstream = ScriptedUpstream(pieces)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            status, _, body = request(f"{base_url(gw)}/agent/coder/v1/chat/completions",
                                      body=b"{}")
            assert status == 200 and len(body) == payload
            assert tokens(gw)["coder"]["gpt-chat-test"]["output"] == 33
    finally:
        upstream.close()
    assert sum(joined) <= 2 * RAW_PIECE  # the read(s) with the usage line, not 13 MB
    # Every byte once (with the framing between chunks), bar what was joined: that
    # is searched again the slow way.
    assert payload - sum(joined) <= sum(searched) <= payload + 8 * len(pieces) + 2 * sum(joined)


def test_the_relay_runs_no_python_per_chunk_and_takes_the_buffers_address_once():
    # What a read of a streamed answer costs in Python, counted (threading.setprofile
    # sees the handler's thread): the framing turns once a chunk in its own loop,
    # with no call per chunk; the search is bound to the buffer once a stream, not
    # once a read (its address, a ctypes call); and the reads and the writes reach
    # the sockets straight from the relay's loop, no Python wrapper between.
    import ctypes

    from choragos.gateway import proxy
    events = {"from_feed": 0, "addresses": 0, "reads": [], "writes": []}

    def profile(frame, event, arg):
        code = frame.f_code
        if event == "call" and frame.f_back is not None and code.co_filename.endswith(
                "chunked.py") and frame.f_back.f_code.co_name == "feed" \
                and frame.f_back.f_code.co_filename.endswith("chunked.py"):
            events["from_feed"] += 1
        elif event == "c_call" and arg is ctypes.addressof:
            events["addresses"] += 1
        elif event == "c_call" and getattr(arg, "__name__", "") in ("recv_into", "sendall"):
            kind = "reads" if arg.__name__ == "recv_into" else "writes"
            events[kind].append((threading.get_ident(), code.co_name,
                                 code.co_filename == proxy.__file__))

    piece = (b'data: {"choices":[{"delta":{"content":"' + b"x" * 1000 + b'"}}]}\n\n') * 16
    pieces = [piece] * 400 + [CHAT[2]]
    upstream = ScriptedUpstream(pieces)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            threading.setprofile(profile)
            try:
                status, _, body = request(f"{base_url(gw)}/agent/coder/v1/chat/completions",
                                          body=b"{}")
            finally:
                threading.setprofile(None)
            assert status == 200 and len(body) == len(piece) * 400 + len(CHAT[2])
            assert tokens(gw)["coder"]["gpt-chat-test"]["output"] == 33
    finally:
        upstream.close()
    relayed = [at for at in events["reads"] if at[2]]
    assert len(relayed) >= 20  # 6.5 MB in reads of 256 KiB at most: the counts mean something
    handler = relayed[0][0]  # the gateway's thread (the upstream's is profiled too)
    assert set(relayed) == {(handler, "_pass_chunked", True)}
    # The stream's writes come from the loop; the headers went before, through wfile
    # (and the request to the upstream through http.client's send).
    writes = [at[1:] for at in events["writes"] if at[0] == handler and at[1] != "send"]
    assert set(writes) == {("_pass_chunked", True), ("write", False)}
    assert writes.count(("write", False)) == 1
    assert events["from_feed"] <= 2  # at the last chunk (its size, the trailers), not each
    assert events["addresses"] == 1  # for the whole stream


def test_a_stream_that_stalls_past_the_read_timeout_ends_and_its_wait_is_the_kernels():
    # The read timeout holds between two reads of a stream as before; on Linux the
    # upstream's plain socket is blocking for the stream, its timeout the kernel's
    # (no poll before each read), and gets Python's timeout back afterwards.
    import socket as sockets
    import sys

    from choragos.gateway import proxy
    seen: list[tuple[float | None, bytes]] = []

    def profile(frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", "") == "recv_into" \
                and frame.f_code.co_filename == proxy.__file__:
            sock = arg.__self__
            seen.append((sock.gettimeout(), sock.getsockopt(
                sockets.SOL_SOCKET, sockets.SO_RCVTIMEO, 16)))

    upstream = ScriptedUpstream(CHAT)
    upstream.hold = threading.Event()  # never set while the gateway waits: a stall
    try:
        with running_gateway({"openai": upstream.url}, timeout=0.5) as gw:
            threading.setprofile(profile)
            try:
                partial = _chat_cut_short(gw)
            finally:
                threading.setprofile(None)
            assert partial == CHAT[0]
            assert metric(gw, "sphragis_errors_total", kind="upstream_broken") == 1
    finally:
        upstream.close()
    assert seen  # the stalled read, at least
    if sys.platform.startswith("linux"):
        assert {timeout for timeout, _ in seen} == {None}
        kernel = {struct.unpack("@ll", kernel) for _, kernel in seen}
        assert len(kernel) == 1
        seconds, micro = kernel.pop()
        assert 0.5 <= seconds + micro / 1e6 < 0.52  # the kernel rounds up to its tick


def test_an_https_upstream_is_verified_and_streams_through(short_tmp, monkeypatch):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, context = self_signed(short_tmp)
    upstream = ScriptedUpstream(CHAT, tls=context)
    try:
        with running_gateway({"openai": upstream.url}) as gw:
            url = f"{base_url(gw)}/agent/coder/v1/chat/completions"
            # Not trusted: a clear 502, as for any upstream that cannot be reached.
            status, _, body = request(url, body=b"{}")
            assert status == 502 and "CERTIFICATE_VERIFY_FAILED" in body.decode()
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            status, _, body = request(url, body=b"{}")
            assert status == 200 and body == b"".join(CHAT)
            assert upstream.seen[-1][2]["host"] == upstream.url.split("://")[1]
            assert tokens(gw)["coder"]["gpt-chat-test"]["input"] == 500
    finally:
        upstream.close()
