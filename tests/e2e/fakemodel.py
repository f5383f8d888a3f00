"""A scripted stand-in for the Anthropic Messages API, for end-to-end tests.

Real agent CLIs (Claude Code first) are pointed at it through
``ANTHROPIC_BASE_URL``.  Tests script the conversation by matching what the
agent was last told and choosing the answer::

    with FakeModel() as model:
        model.on("read the task file", tool("Bash", {"command": "cat t.md"}))
        model.on(lambda turn: "T1" in turn.tool_text, text("done"))
        ...
        model.wait_for_user_message("A worker reports", timeout=30)

Everything it receives is recorded, so tests can assert on what each agent
was told.  Only the standard library is used: the gateway and telemetry
tests build on this server too.  ``fakegemini`` and ``fakeopenai`` speak the
Gemini and OpenAI Responses wire formats with the same scripting and
recording: a subclass says which requests are turns, how a turn reads, and
how a reply is written on its wire.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Block = dict[str, Any]


@dataclass(frozen=True)
class ApiError:
    """A reply that fails the request the way the real API does."""

    status: int = 500
    kind: str = "api_error"
    message: str = "scripted failure"
    headers: tuple[tuple[str, str], ...] = ()  # e.g. (("retry-after", "3"),) on a 429
    details: tuple[dict, ...] = ()  # Gemini's error details (QuotaFailure, RetryInfo)
    # Anthropic's mid-stream error: a streamed request gets a 200 whose events
    # stop with an ``error`` event after the message starts; one that does not
    # stream (a CLI's fallback) gets ``status`` as above.
    mid_stream: bool = False


Reply = list[Block] | Callable[["Turn"], list[Block]] | ApiError
Match = str | Callable[["Turn"], bool]

_ids = itertools.count(1)


def text(value: str) -> list[Block]:
    """A reply made of one text block."""
    return [{"type": "text", "text": value}]


def tool(name: str, tool_input: dict[str, Any], tool_id: str | None = None) -> list[Block]:
    """A reply asking the agent to run tool ``name`` with ``tool_input``."""
    ident = tool_id or f"toolu_fake{next(_ids):06d}"
    return [{"type": "tool_use", "id": ident, "name": name, "input": tool_input}]


@dataclass(frozen=True)
class Usage:
    """Token counts reported for every reply (telemetry tests set them)."""

    input_tokens: int = 120
    output_tokens: int = 12
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


@dataclass
class Request:
    """One HTTP request as the fake server saw it (header names lower-cased)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path == "/v1/messages"

    @property
    def has_tools(self) -> bool:
        return bool(isinstance(self.body, dict) and self.body.get("tools"))


@dataclass(frozen=True)
class Turn:
    """What a rule sees: the last user message of one request, flattened."""

    text: str
    tool_text: str
    request: Request

    @property
    def all_text(self) -> str:
        return f"{self.text}\n{self.tool_text}"


@dataclass
class Rule:
    match: Match
    reply: Reply
    once: bool = True
    delay: float | None = None
    usage: Usage | None = None
    hits: int = 0

    def matches(self, turn: Turn) -> bool:
        if callable(self.match):
            return bool(self.match(turn))
        # A plain substring also looks into tool results: "the command printed X".
        return self.match.lower() in turn.all_text.lower()


# Claude Code prepends harness context to what the user typed; tests care
# about what the user (or choragos) said, so it is cut from ``Turn.text``.
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def _block_text(block: Any) -> tuple[str, str]:
    """Split one content block into (user text, tool_result text)."""
    if isinstance(block, str):
        return _REMINDER.sub("", block).strip(), ""
    if not isinstance(block, dict):
        return "", ""
    if block.get("type") == "text":
        return _REMINDER.sub("", str(block.get("text", ""))).strip(), ""
    if block.get("type") == "tool_result":
        inner = block.get("content", "")
        if isinstance(inner, list):
            inner = "\n".join(_block_text(b)[0] for b in inner)
        return "", str(inner)
    return "", ""


def message_texts(message: dict[str, Any]) -> tuple[str, str]:
    """The (text, tool_result text) of one Messages API message."""
    content = message.get("content", "")
    blocks = content if isinstance(content, list) else [content]
    parts = [_block_text(b) for b in blocks]
    return (
        "\n".join(t for t, _ in parts if t),
        "\n".join(r for _, r in parts if r),
    )


def last_user_message(body: Any) -> dict[str, Any] | None:
    """The last ``user`` message; the list may end with ``system`` entries."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message
    return None


@dataclass(frozen=True)
class Plan:
    """How one request is answered: content (or a failure), pacing, usage."""

    reply: list[Block] | ApiError
    delay: float
    usage: Usage


class FakeModel:
    """A threaded HTTP server on 127.0.0.1 answering like the Messages API.

    ``delay`` spreads each streamed reply over that many seconds (so a TUI's
    *working* state can be watched); ``usage`` is the token count reported
    for every reply; ``model_name`` overrides the model echoed back (by
    default the one the agent asked for).
    """

    def __init__(self, usage: Usage | None = None, delay: float = 0.0,
                 model_name: str | None = None, title: str = "Test session") -> None:
        self.handler_class: type[BaseHTTPRequestHandler] = ApiHandler
        self.usage = usage or Usage()
        self.delay = delay
        self.model_name = model_name
        self.title = title
        self.default: Reply = text("ok")
        self.requests: list[Request] = []
        self._rules: list[Rule] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> FakeModel:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval keeps stop() (and so every test teardown) quick.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="fakemodel", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "FakeModel not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- scripting -------------------------------------------------------------

    def on(self, match: Match, reply: Reply, once: bool = True,
           delay: float | None = None, usage: Usage | None = None) -> Rule:
        """Answer the next turn matching ``match`` with ``reply``.

        Rules are tried in the order they were added.  ``once=False`` keeps
        the rule for every later match; ``delay`` and ``usage`` override the
        server's for this rule's replies.
        """
        rule = Rule(match, reply, once, delay, usage)
        with self._lock:
            self._rules.append(rule)
        return rule

    # -- what the wire means (a fake for another API overrides these) ----------

    def is_call(self, request: Request) -> bool:
        """``request`` asks the model for a reply (a turn or a side request)."""
        return request.is_messages

    def is_turn(self, request: Request) -> bool:
        """``request`` is a real turn of the agent (it offers tools)."""
        return self.is_call(request) and request.has_tools

    def turn(self, request: Request) -> Turn:
        """What the rules see of a turn: its last user message, flattened."""
        return turn_of(request)

    def side_reply(self, request: Request) -> list[Block]:
        """The answer to a side request (a session title and the like)."""
        return text(side_answer(request.body, self.title))

    def plan(self, request: Request) -> Plan:
        """How to answer ``request``; side requests never consume the script."""
        if not self.is_turn(request):
            return Plan(self.side_reply(request), 0.0, self.usage)
        turn = self.turn(request)
        rule = self._take_rule(turn)
        if rule is None:
            return Plan(_resolve(self.default, turn), self.delay, self.usage)
        return Plan(_resolve(rule.reply, turn),
                    self.delay if rule.delay is None else rule.delay,
                    rule.usage or self.usage)

    def _take_rule(self, turn: Turn) -> Rule | None:
        with self._lock:
            rule = next((r for r in self._rules if r.matches(turn)), None)
            if rule is not None:
                rule.hits += 1
                if rule.once:
                    self._rules.remove(rule)
        return rule

    # -- recording -------------------------------------------------------------

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()

    def message_requests(self, with_tools: bool = True) -> list[Request]:
        """Recorded model calls (by default only real turns)."""
        with self._lock:
            found = [r for r in self.requests if self.is_call(r)]
        return [r for r in found if self.is_turn(r) or not with_tools]

    def user_messages(self) -> list[str]:
        """The last user message's text (with tool results) of every real turn."""
        return [self.turn(r).all_text.strip() for r in self.message_requests()]

    def wait_for_request(self, predicate: Callable[[Request], bool],
                         timeout: float = 10.0) -> Request:
        """Block until a recorded request satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = next((r for r in self.requests if predicate(r)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"fake model: no matching request in {timeout}s; "
                                         f"saw user messages {self.user_messages()!r}")
                self._lock.wait(left)

    def wait_for_user_message(self, substring: str, timeout: float = 10.0) -> Request:
        """Block until a real turn's last user message contains ``substring``."""
        needle = substring.lower()
        return self.wait_for_request(
            lambda r: self.is_turn(r) and needle in self.turn(r).all_text.lower(), timeout)


def _resolve(reply: Reply, turn: Turn) -> list[Block] | ApiError:
    return reply(turn) if callable(reply) else reply


def side_answer(body: dict[str, Any], title: str) -> str:
    """The text of a tool-less side request, such as the session title.

    Claude Code asks for the title as structured output (a JSON schema with a
    ``title`` string); answer every required string field with ``title``.
    """
    fmt = (body.get("output_config") or {}).get("format") or {}
    if fmt.get("type") != "json_schema":
        return title
    schema = fmt.get("schema") or {}
    return json.dumps({name: title for name in schema.get("required", [])})


def turn_of(request: Request) -> Turn:
    message = last_user_message(request.body) or {}
    said, tool_said = message_texts(message)
    return Turn(said, tool_said, request)


# -- wire format -------------------------------------------------------------------


def message_json(blocks: list[Block], model: str, usage: Usage) -> dict[str, Any]:
    """A complete (non-streaming) Messages API response."""
    uses_tool = any(b["type"] == "tool_use" for b in blocks)
    return {
        "id": f"msg_fake{next(_ids):06d}", "type": "message", "role": "assistant",
        "model": model, "content": blocks,
        "stop_reason": "tool_use" if uses_tool else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                  "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                  "cache_read_input_tokens": usage.cache_read_input_tokens},
    }


def sse_events(blocks: list[Block], model: str, usage: Usage) -> Iterator[tuple[str, dict]]:
    """The server-sent events of one streamed reply, as (event, data) pairs."""
    whole = message_json(blocks, model, usage)
    start = dict(whole, content=[], stop_reason=None,
                 usage=dict(whole["usage"], output_tokens=1))
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(blocks):
        yield from _block_events(index, block)
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": usage.output_tokens}}
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: Block) -> Iterator[tuple[str, dict]]:
    if block["type"] == "tool_use":
        opening = dict(block, input={})
        deltas = [{"type": "input_json_delta", "partial_json": part}
                  for part in pieces(json.dumps(block["input"]))]
    else:
        opening = dict(block, text="")
        deltas = [{"type": "text_delta", "text": part} for part in pieces(block["text"])]
    yield "content_block_start", {"type": "content_block_start", "index": index,
                                  "content_block": opening}
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def pieces(value: str, size: int = 24) -> list[str]:
    """``value`` in chunks, as a real stream delivers it (clients must join them)."""
    return [value[i:i + size] for i in range(0, len(value), size)] or [""]


def _handler_for(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(model.handler_class):  # type: ignore[name-defined,misc]
        fake = model
    return Handler


class ApiHandler(BaseHTTPRequestHandler):
    # HTTP/1.0 semantics: every response ends by closing the connection, so an
    # event stream needs no chunked encoding and a client never hangs on it.
    protocol_version = "HTTP/1.0"
    fake: FakeModel

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``FakeModel.requests`` instead of a log."""

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_json(200, {}, body=False)

    def do_GET(self) -> None:
        self.answer_get(self._record(None))

    def answer_get(self, request: Request) -> None:
        """Answer one recorded GET; a fake for another API extends this."""
        if request.path == "/":
            self.send_json(200, {"status": "ok"})
        else:
            self.send_json(404, api_error("not_found_error", "not served by the fake model"))

    def do_POST(self) -> None:
        body = self._read_body()
        self.answer_post(self._record(body), body)

    def answer_post(self, request: Request, body: Any) -> None:
        """Answer one recorded POST; a fake for another API overrides this."""
        if request.path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": self.fake.usage.input_tokens})
        elif request.is_messages and isinstance(body, dict):
            self._answer_messages(request)
        else:
            self.send_json(404, api_error("not_found_error", "not served by the fake model"))

    def _answer_messages(self, request: Request) -> None:
        plan = self.fake.plan(request)
        model = self.fake.model_name or str(request.body.get("model") or "claude-fake")
        if isinstance(plan.reply, ApiError) and plan.reply.mid_stream and \
                request.body.get("stream"):
            started = next(sse_events([], model, plan.usage))
            self.stream(iter([started, ("error", api_error(plan.reply.kind,
                                                           plan.reply.message))]), plan.delay)
        elif isinstance(plan.reply, ApiError):
            time.sleep(plan.delay)
            self.send_json(plan.reply.status, api_error(plan.reply.kind, plan.reply.message),
                           headers=plan.reply.headers)
        elif request.body.get("stream"):
            self.stream(sse_events(plan.reply, model, plan.usage), plan.delay)
        else:
            time.sleep(plan.delay)
            self.send_json(200, message_json(plan.reply, model, plan.usage))

    def stream(self, stream: Iterator[tuple[str | None, dict]], delay: float) -> None:
        """Send server-sent events over ``delay`` seconds (an event without a name
        is a bare ``data:`` line, as the Gemini API sends them)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        events = list(stream)
        pause = delay / max(1, len(events) - 1)
        try:
            for number, (name, data) in enumerate(events):
                if number:
                    time.sleep(pause)
                head = f"event: {name}\n" if name else ""
                self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent was interrupted or killed mid-stream: not our failure

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any) -> Request:
        parts = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = Request(self.command, parts.path, parts.query, headers, body)
        self.fake.record(request)
        return request

    def send_json(self, status: int, payload: Any, body: bool = True,
                  headers: tuple[tuple[str, str], ...] = ()) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)


def read_sse(raw: bytes) -> list[tuple[str | None, Any]]:
    """Parse a server-sent event stream into (event name or None, data) pairs."""
    parsed = []
    for chunk in raw.decode().replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
        if "data" in fields:
            parsed.append((fields.get("event"), json.loads(fields["data"])))
    return parsed


def api_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
