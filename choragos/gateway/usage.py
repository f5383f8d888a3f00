"""Token usage read off model responses as they stream past the gateway.

A :class:`UsageMeter` is fed the response body piece by piece, exactly as
the bytes go on to the agent, and never holds a whole stream: event streams
are cut into lines (one line is kept at most, up to :data:`MAX_LINE`) and
only the lines that mention usage are parsed.  A plain JSON body is kept up
to :data:`MAX_JSON` and parsed at its end.  A compressed body is inflated
:data:`INFLATE_PIECE` bytes at a time and read up to :data:`MAX_INFLATED`, so
a small answer that inflates to gigabytes costs neither memory nor much
time.  Every API reports cumulative counts within one response, so the
last value seen for each direction wins; a count above :data:`MAX_TOKENS`
is taken as that (and said so): no answer holds more, and a forged one
must not make a role's cost absurd.

Directions follow the Messages API: ``input`` excludes cached input, which
is ``cache_read`` (and ``cache_creation`` when the API reports it).  OpenAI
and Gemini count cached tokens inside their input totals, so those are
split the same way; Gemini's thinking tokens are output.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from choragos.gateway.memsearch import find, finder

MAX_LINE = 8 << 20   # one SSE line: OpenAI's response.completed repeats the whole output
MAX_JSON = 16 << 20  # a non-streamed body
INFLATE_PIECE = 1 << 16
MAX_INFLATED = 256 << 20
MAX_TOKENS = 100_000_000  # per direction in one answer: far above any context window
_PENDING = frozenset({"queued", "in_progress"})  # an OpenAI background response: usage later

ANTHROPIC, OPENAI, GEMINI = "anthropic", "openai", "gemini"

Counts = dict[str, int]
_MARK = b'"usage'  # in every event that carries usage: "usage", "usageMetadata"
# What a piece is searched for before its lines are looked at: every byte of a
# stream is searched (a long piece by the C library, see memsearch), and without
# the quote Python's search skips further per step (the quote is frequent in
# JSON); a line with it is then tested for _MARK.
_HINT = b"usage"
_SEAM_ENDS = frozenset(_HINT[:-1])  # the last byte of a start of the hint cut by a seam


@dataclass
class Reading:
    """What one response said about itself, once it has ended."""

    model: str
    counts: Counts
    problem: str = ""  # why the usage could not be read, for the error metric
    clamped: bool = False  # a count was above MAX_TOKENS and taken as MAX_TOKENS
    once: str = ""  # an id counted once however often the answer is read (OpenAI responses)


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _anthropic(obj: dict) -> tuple[str | None, Counts]:
    kind = obj.get("type")
    if kind == "message_start":
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        return message.get("model"), _anthropic_usage(message.get("usage"))
    if kind == "message_delta":
        return None, _anthropic_usage(obj.get("usage"))
    if kind == "message":  # a complete, non-streamed reply
        return obj.get("model"), _anthropic_usage(obj.get("usage"))
    return None, {}


_ANTHROPIC_FIELDS = {"input_tokens": "input", "output_tokens": "output",
                     "cache_read_input_tokens": "cache_read",
                     "cache_creation_input_tokens": "cache_creation"}


def _anthropic_usage(usage: object) -> Counts:
    if not isinstance(usage, dict):
        return {}
    return {d: _int(usage[k]) for k, d in _ANTHROPIC_FIELDS.items() if usage.get(k) is not None}


def _openai(obj: dict) -> tuple[str | None, Counts]:
    # Responses API events wrap the response; chat chunks and bodies carry usage at the top.
    inner = obj.get("response") if isinstance(obj.get("response"), dict) else obj
    usage = inner.get("usage")
    if not isinstance(usage, dict):
        return inner.get("model"), {}
    if "input_tokens" in usage:  # Responses API
        total, out = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
        details = usage.get("input_tokens_details")
    else:                        # Chat Completions
        total, out = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return inner.get("model"), {"input": max(total - cached, 0), "output": out,
                                "cache_read": cached}


def _gemini(obj: dict) -> tuple[str | None, Counts]:
    usage = obj.get("usageMetadata")
    model = obj.get("modelVersion")
    if not isinstance(usage, dict):
        return model, {}
    prompt, cached = _int(usage.get("promptTokenCount")), _int(usage.get("cachedContentTokenCount"))
    out = _int(usage.get("candidatesTokenCount")) + _int(usage.get("thoughtsTokenCount"))
    return model, {"input": max(prompt - cached, 0), "output": out, "cache_read": cached}


READERS: dict[str, Callable[[dict], tuple[str | None, Counts]]] = {
    ANTHROPIC: _anthropic, OPENAI: _openai, GEMINI: _gemini,
}


@dataclass
class UsageMeter:
    """Reads one response's usage from its body, fed in pieces."""

    api: str
    content_type: str = ""
    content_encoding: str = ""
    fallback_model: str = ""
    expect_usage: bool = True
    model: str = ""
    counts: Counts = field(default_factory=dict)
    problem: str = ""
    _partial: bytearray = field(default_factory=bytearray)
    _hinted: bool = False  # the open line (_partial) holds _HINT
    _skipping: bool = False
    _dead: bool = False  # nothing more can be read from this body
    _decoder: Any = None
    _inflated: int = 0
    clamped: bool = False
    once: str = ""
    pending: bool = False  # the answer says its usage comes later (a background response)

    def __post_init__(self) -> None:
        self._read = READERS[self.api]
        self._sse = "text/event-stream" in self.content_type.lower()
        encoding = self.content_encoding.strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            # 47: a zlib or a gzip header, detected from the first bytes.
            self._decoder = zlib.decompressobj(47)
        elif encoding not in ("", "identity"):
            self._fail(f"cannot read a {encoding}-encoded body")

    def feed(self, data: bytes) -> None:
        if self._decoder is None:
            self._plain(data)
            return
        while data and not self._dead:
            try:
                piece = self._decoder.decompress(data, INFLATE_PIECE)
            except zlib.error as exc:
                self._fail(f"undecodable body: {exc}")
                return
            data = self._decoder.unconsumed_tail
            self._inflated += len(piece)
            if self._inflated > MAX_INFLATED:
                self._fail(f"the body inflates past {MAX_INFLATED} bytes; its usage was not "
                           "read")
                return
            self._plain(piece)

    def feed_spans(self, buf: bytes | bytearray, spans: list[tuple[int, int]]) -> None:
        """Feed ``buf[start:end]`` of each span in turn, as one piece.

        The bytes are copied out only where a line may carry usage: in a plain
        event stream whose spans hold no hint, the open line (after the last
        newline) is all that is kept, as :meth:`feed` does with one piece.
        """
        self._feed_runs(partial(find, buf, _HINT), buf, spans)

    def spans_feeder(self, buf: bytearray) -> Callable[[list[tuple[int, int]]], None]:
        """:meth:`feed_spans` for the one buffer a stream's reads land in, read
        after read: the search for the hint is bound to the buffer once
        (:func:`~choragos.gateway.memsearch.finder`), not once a read."""
        return partial(self._feed_runs, finder(buf, _HINT), buf)

    def _feed_runs(self, search: Callable[[int, int], int], buf: bytes | bytearray,
                   spans: list[tuple[int, int]]) -> None:
        if not spans:
            return
        if (self._decoder is None and self._sse and not self._dead and not self._skipping
                and not self._hinted and not self._spans_hint(buf, spans, search)
                and self._keep_open_line(buf, spans)):
            return
        with memoryview(buf) as view:
            self.feed(b"".join([view[start:end] for start, end in spans]))

    def _spans_hint(self, buf: bytes | bytearray, spans: list[tuple[int, int]],
                    search: Callable[[int, int], int]) -> bool:
        """Whether the spans, joined after the open line, hold the hint: one
        search from the first span's start to the last's end (a hint in the
        framing between them only sends the piece the slow way), then the
        seams where the hint may be cut in two: those after a byte that ends
        a start of the hint ("u", "us", "usa", "usag").  ``search(start, end)``
        finds the hint in ``buf``."""
        if search(spans[0][0], spans[-1][1]) >= 0:
            return True
        last = self._partial[-1] if self._partial else -1
        for at, (_, end) in enumerate(spans):
            if last in _SEAM_ENDS and _HINT in self._seam(buf, spans, at):
                return True
            last = buf[end - 1]
        return False

    def _seam(self, buf: bytes | bytearray, spans: list[tuple[int, int]], at: int) -> bytes:
        """The bytes either side of the seam before ``spans[at]``, as many as a
        hint cut there could have on each side."""
        edge = len(_HINT) - 1
        before, i = b"", at
        while len(before) < edge and i > 0:
            i -= 1
            start, end = spans[i]
            before = buf[max(start, end - edge + len(before)):end] + before
        if len(before) < edge:
            before = self._partial[max(0, len(self._partial) - edge + len(before)):] + before
        after, i = b"", at
        while len(after) < edge and i < len(spans):
            start, end = spans[i]
            after += buf[start:start + edge - len(after)]
            i += 1
        return bytes(before + after)

    def _keep_open_line(self, buf: bytes | bytearray, spans: list[tuple[int, int]]) -> bool:
        """Keep what follows the spans' last newline as the open line; False
        if they hold no newline (the slow way then checks the line's length)."""
        for at in range(len(spans) - 1, -1, -1):
            start, end = spans[at]
            cut = buf.rfind(b"\n", start, end)
            if cut >= 0:
                self._partial[:] = buf[cut + 1:end]
                for start, end in spans[at + 1:]:
                    self._partial += buf[start:end]
                return True
        return False

    def _plain(self, data: bytes) -> None:
        if self._dead:
            return
        if self._sse:
            self._lines(data)
        elif len(self._partial) + len(data) <= MAX_JSON:
            self._partial += data
        else:
            self._fail(f"body over {MAX_JSON} bytes; its usage was not read")

    def _lines(self, data: bytes) -> None:
        if not self._skipping and not self._hinted and not self._hints(data):
            # Fast path: no line ending here can carry usage; keep only the open line.
            cut = data.rfind(b"\n")
            if cut >= 0:
                self._partial[:] = data[cut + 1:]
                return
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            else:
                self._partial += data[start:end]
                self._line(bytes(self._partial))
            self._partial.clear()
            self._hinted = False
            start = end + 1
        if self._skipping:
            return
        rest = data[start:]
        # Whether the open line holds the hint, found without searching it again
        # (a long line, kept over many pieces, would be searched once per piece).
        self._hinted = self._hinted or self._hints(rest)
        self._partial += rest
        if len(self._partial) > MAX_LINE:
            self._partial.clear()
            self._hinted = False
            self._skipping = True  # drop the rest of this line, keep reading the stream
            self.problem = self.problem or f"an event line over {MAX_LINE} bytes was skipped"

    def _hints(self, data: bytes) -> bool:
        """Whether ``data``, or the open line's end and ``data``'s start (the hint
        cut in two), holds the hint."""
        edge = len(_HINT) - 1
        return find(data, _HINT) >= 0 or _HINT in bytes(self._partial[-edge:]) + data[:edge]

    def _line(self, line: bytes) -> None:
        # Cheap test first: most lines are content deltas that never mention usage.
        if not line.startswith(b"data:") or _MARK not in line:
            return
        try:
            obj = json.loads(line[5:])
        except ValueError:
            self.problem = self.problem or "an event's data is not JSON"
            return
        self._take(obj)

    def _take(self, obj: object) -> None:
        if isinstance(obj, list):  # Gemini streams a JSON array without alt=sse
            for item in obj:
                self._take(item)
            return
        if not isinstance(obj, dict):
            return
        model, counts = self._read(obj)
        if isinstance(model, str) and model:
            self.model = model
        self._note_response(obj)
        for direction, value in counts.items():
            if value > MAX_TOKENS:
                self.clamped, value = True, MAX_TOKENS
                self.problem = self.problem or (f"a usage count above {MAX_TOKENS} was taken "
                                                f"as {MAX_TOKENS}")
            self.counts[direction] = value

    def _note_response(self, obj: dict) -> None:
        """An OpenAI response object: its id (counted once) and whether usage is to come."""
        inner = obj.get("response") if isinstance(obj.get("response"), dict) else obj
        if self.api != OPENAI or inner.get("object") != "response":
            return
        if isinstance(inner.get("id"), str):
            self.once = inner["id"][:200]
        self.pending = inner.get("status") in _PENDING

    def _fail(self, problem: str) -> None:
        self.problem = self.problem or problem
        self._partial.clear()
        self._dead = True

    def _last_piece(self, rest: bytes) -> None:
        if self._sse:
            if not self._skipping:
                self._line(rest)  # a last line without its newline
            return
        try:
            self._take(json.loads(rest))
        except ValueError:
            self.problem = self.problem or "the body is not JSON"

    def close(self) -> Reading:
        """The usage of the whole response (what was seen, if it was cut short)."""
        if self._partial and not self._dead:
            self._last_piece(bytes(self._partial))
        self._partial.clear()
        if self.expect_usage and not self.counts and not self.problem and not self.pending:
            self.problem = "no usage in the response"
        return Reading(self.model or self.fallback_model or "unknown", dict(self.counts),
                       self.problem, self.clamped, self.once)
