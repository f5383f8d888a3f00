"""Reading token usage off response bodies, piece by piece (choragos.gateway.usage)."""

from __future__ import annotations

import json
import zlib

import pytest

from choragos.gateway.usage import MAX_LINE, UsageMeter

SSE = "text/event-stream"


def _sse(*events: dict) -> bytes:
    return b"".join(f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n".encode()
                    for e in events)


ANTHROPIC_STREAM = _sse(
    {"type": "message_start", "message": {"model": "claude-x", "usage": {
        "input_tokens": 11, "output_tokens": 1, "cache_read_input_tokens": 7,
        "cache_creation_input_tokens": 3}}},
    {"type": "content_block_delta", "delta": {"text": 'the word "usage" in a reply'}},
    {"type": "message_delta", "usage": {"output_tokens": 42}},
    {"type": "message_stop"},
)


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
def test_anthropic_stream_in_any_split_counts_the_final_cumulative_values(size):
    meter = UsageMeter("anthropic", SSE)
    for start in range(0, len(ANTHROPIC_STREAM), size):
        meter.feed(ANTHROPIC_STREAM[start:start + size])
    reading = meter.close()
    assert reading.model == "claude-x" and not reading.problem
    assert reading.counts == {"input": 11, "output": 42, "cache_read": 7, "cache_creation": 3}


def test_a_stream_cut_short_counts_what_was_seen():
    meter = UsageMeter("anthropic", SSE)
    meter.feed(ANTHROPIC_STREAM[:ANTHROPIC_STREAM.index(b"event: message_delta")])
    assert meter.close().counts["output"] == 1


def test_a_last_line_without_newline_is_still_read():
    meter = UsageMeter("openai", SSE)
    meter.feed(b'data: {"model":"m","usage":{"prompt_tokens":5,"completion_tokens":2}}')
    assert meter.close().counts == {"input": 5, "output": 2, "cache_read": 0}


def test_an_oversize_line_is_skipped_without_being_kept_and_later_usage_still_counts():
    meter = UsageMeter("openai", SSE)
    meter.feed(b"data: " + b"x" * (MAX_LINE // 2))
    for _ in range(3):
        meter.feed(b"y" * (MAX_LINE // 2))
        assert len(meter._partial) <= MAX_LINE
    meter.feed(b'\n\ndata: {"type":"response.completed","response":{"model":"gpt",'
               b'"usage":{"input_tokens":9,"output_tokens":4,'
               b'"input_tokens_details":{"cached_tokens":6}}}}\n\n')
    reading = meter.close()
    assert reading.counts == {"input": 3, "output": 4, "cache_read": 6}
    assert "skipped" in reading.problem


def test_gemini_json_array_and_thoughts_are_output():
    body = json.dumps([
        {"modelVersion": "gemini-x", "usageMetadata": {"promptTokenCount": 50}},
        {"modelVersion": "gemini-x", "usageMetadata": {
            "promptTokenCount": 50, "cachedContentTokenCount": 20,
            "candidatesTokenCount": 8, "thoughtsTokenCount": 5}},
    ]).encode()
    meter = UsageMeter("gemini", "application/json", fallback_model="from-path")
    meter.feed(body)
    assert meter.close().counts == {"input": 30, "output": 13, "cache_read": 20}


def test_gzip_and_deflate_bodies_are_read():
    body = json.dumps({"type": "message", "model": "m",
                       "usage": {"input_tokens": 3, "output_tokens": 4}}).encode()
    for packed in (zlib.compress(body), _gzip(body)):
        meter = UsageMeter("anthropic", "application/json", "gzip")
        meter.feed(packed)
        assert meter.close().counts == {"input": 3, "output": 4}


def _gzip(data: bytes) -> bytes:
    import gzip
    return gzip.compress(data)


@pytest.mark.parametrize("encoding,body,problem", [
    ("br", b"\x0b\x02", "cannot read a br-encoded body"),
    ("", b"<html>oops</html>", "not JSON"),
    ("", b"{}", "no usage"),
])
def test_unreadable_bodies_say_why(encoding, body, problem):
    meter = UsageMeter("anthropic", "application/json", encoding)
    meter.feed(body)
    reading = meter.close()
    assert problem in reading.problem and reading.counts == {}
    assert reading.model == "unknown"


class _Searched(bytearray):
    """An open line that counts how often it is searched whole."""

    searches = 0

    def __contains__(self, item: object) -> bool:
        type(self).searches += 1
        return super().__contains__(item)


@pytest.mark.parametrize("mark_at", ["start", "end", "cut"])
def test_a_long_line_is_searched_once_not_once_per_piece(mark_at):
    # OpenAI's response.completed repeats the whole output on one line: kept over
    # many pieces, it must not be searched again with each (quadratic in its length).
    filler = b"x" * 4000
    usage = b'"usage":{"input_tokens":9,"output_tokens":4}'
    head = b'data: {"type":"response.completed","response":{"model":"gpt",'
    pieces = [head + (usage + b"," if mark_at == "start" else b"")] + [filler] * 200
    tail = b',"pad":1' + (b"," + usage if mark_at != "start" else b"") + b"}}\n\n"
    if mark_at == "cut":  # the hint cut in two by the piece boundary
        cut = tail.index(b"usage") + 3
        pieces += [tail[:cut], tail[cut:]]
    else:
        pieces.append(tail)
    pieces[1:201] = [b'"text":"' + filler] + [filler] * 198 + [filler + b'"']
    meter = UsageMeter("openai", SSE)
    meter._partial = _Searched()
    _Searched.searches = 0
    for piece in pieces:
        meter.feed(piece)
    reading = meter.close()
    assert reading.counts == {"input": 9, "output": 4, "cache_read": 0}, reading.problem
    assert _Searched.searches == 0
