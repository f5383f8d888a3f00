"""Reading token usage off response bodies, piece by piece (choragos.gateway.usage)."""

from __future__ import annotations

import json
import zlib
from functools import partial

import pytest

from choragos.gateway.memsearch import find
from choragos.gateway.usage import _HINT, MAX_LINE, UsageMeter

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


OPENAI_CHAT = (b'data: {"model":"gpt-x","choices":[{"delta":{"content":"the usage of it"}}],'
               b'"usage":null}\n\n' * 3
               + b'data: {"model":"gpt-x","choices":[],"usage":{"prompt_tokens":12,'
               b'"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":2}}}\n\n'
               + b"data: [DONE]\n\n")
GEMINI_STREAM = b"".join(b"data: " + json.dumps({
    "candidates": [{"content": {"parts": [{"text": "usage " * i}]}}],
    "modelVersion": "gemini-x",
    "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": i}}).encode() + b"\r\n\r\n"
    for i in range(1, 4))


def _framed(payload: bytes, rng) -> tuple[bytearray, list[tuple[int, int]]]:
    """``payload`` in runs of random sizes with framing between them, as a read of
    a chunked body lands in the gateway's buffer; the runs' (start, end)."""
    buf, spans, pos = bytearray(b"1f;usage=x\r\n"), [], 0  # a hint in the framing too
    while pos < len(payload):
        size = rng.choice([1, 2, 3, 4, 5, 9, 64, 4096])
        buf += b"%x\r\n" % size
        spans.append((len(buf), len(buf) + len(payload[pos:pos + size])))
        buf += payload[pos:pos + size] + b"\r\n"
        pos += size
    return buf, spans


@pytest.mark.parametrize("api,stream,counts", [
    ("anthropic", ANTHROPIC_STREAM,
     {"input": 11, "output": 42, "cache_read": 7, "cache_creation": 3}),
    ("openai", OPENAI_CHAT, {"input": 10, "output": 5, "cache_read": 2}),
    ("gemini", GEMINI_STREAM, {"input": 40, "output": 3, "cache_read": 0}),
])
def test_runs_of_a_buffer_count_as_the_same_bytes_fed_whole(api, stream, counts):
    import random
    rng = random.Random(api)
    for _ in range(40):
        meter = UsageMeter(api, SSE)
        pos = 0
        while pos < len(stream):  # reads of random sizes, each in runs of random sizes
            size = rng.choice([7, 50, 300, 5000])
            buf, spans = _framed(stream[pos:pos + size], rng)
            meter.feed_spans(buf, spans)
            pos += size
        reading = meter.close()
        assert reading.counts == counts and not reading.problem, reading


def test_a_hint_cut_by_every_seam_is_found():
    line = b'data: {"type":"message_delta","usage":{"output_tokens":7}}\n'
    at = line.index(b"usage")
    for cut in range(at + 1, at + 5):  # "u|sage" ... "usag|e"
        for tiny in (False, True):  # the hint across three runs: a one-byte run between
            meter = UsageMeter("anthropic", SSE)
            buf = bytearray(b"xx" + line[:cut] + b"\r\nyy" + line[cut:] + b"zz")
            second = (cut + 6, cut + 6 + len(line) - cut)
            spans = [(2, cut + 2), second]
            if tiny:
                spans = [(2, cut + 1), (cut + 1, cut + 2), second]
            meter.feed_spans(buf, spans)
            assert meter.close().counts == {"output": 7}, (cut, tiny)
    for kept in (b"u", b"us", b"usa", b"usag"):  # the open line shorter than the hint's edge
        meter = UsageMeter("anthropic", SSE)
        meter._partial[:] = kept
        buf = b"--" + b"usage"[len(kept):] + b"--"
        assert meter._spans_hint(buf, [(2, 7 - len(kept))], partial(find, buf, _HINT))


def test_a_stream_without_usage_is_searched_once_and_never_copied_out(monkeypatch):
    # The gateway's fast way: the runs of a read are searched in one go, and of a
    # read without the hint only the open line is kept, nothing joined.
    from choragos.gateway import usage
    searched: list[int] = []
    joined: list[int] = []

    def counted_find(buf, needle, start=0, end=None):
        searched.append(end - start)
        return buf.find(needle, start, end)

    monkeypatch.setattr(usage, "find", counted_find)
    monkeypatch.setattr(UsageMeter, "feed", lambda self, data: joined.append(len(data)))
    event = b'event: content_block_delta\ndata: {"delta":{"text":"' + b"x" * 1000 + b'"}}\n\n'
    framed = b"".join(b"%x\r\n%s\r\n" % (len(event), event) for _ in range(16)) + b"3\r\nda"
    size = len(b"%x\r\n" % len(event))
    spans = [(at + size, at + size + len(event)) for at in range(0, 16 * (size + len(event) + 2),
                                                            size + len(event) + 2)]
    spans.append((len(framed) - 2, len(framed)))
    meter = UsageMeter("anthropic", SSE)
    for _ in range(10):
        meter.feed_spans(framed, spans)
    assert joined == []
    assert len(searched) == 10  # one search a read, over its runs and what is between
    assert sum(searched) < 10 * len(framed)
    assert bytes(meter._partial) == b"da"  # the open line, kept
