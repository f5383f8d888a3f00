"""A scripted stand-in for the Gemini API (``generateContent``), for end-to-end tests.

The real Gemini CLI is pointed at it through ``GOOGLE_GEMINI_BASE_URL``.
Scripting and recording are :class:`~tests.e2e.fakemodel.FakeModel`'s: rules
match the last user message (or the function responses sent back), replies
are the same blocks (``text(...)``, ``tool(...)``), written here as Gemini
``candidates`` with ``functionCall`` parts::

    with FakeGemini() as model:
        model.on("You are the coder role", shell("cat .choragos/tasks/T1.md"))

Served: ``POST /v1beta/models/<model>:generateContent``,
``:streamGenerateContent?alt=sse`` (bare ``data:`` events), ``:countTokens``
and ``GET /v1beta/models``.  A request without tools (the CLI's own JSON
side questions: who speaks next, which model to route to, loop checks) is
answered from its response schema and never consumes the script.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

from tests.e2e.fakemodel import (
    ApiError,
    ApiHandler,
    Block,
    FakeModel,
    Request,
    Turn,
    Usage,
    pieces,
    text,
    tool,
)

SHELL_TOOL = "run_shell_command"
_ids = itertools.count(1)
# What an enum answer prefers: the CLI's "who speaks next" check must hand the
# turn back to the user, or the CLI keeps prompting the model by itself.
_PREFERRED = ("user", "flash")


def shell(command: str, description: str = "Run a command") -> list[Block]:
    """A reply asking the Gemini CLI to run ``command`` with its shell tool."""
    return tool(SHELL_TOOL, {"command": command, "description": description})


class FakeGemini(FakeModel):
    """A threaded HTTP server on 127.0.0.1 answering like the Gemini API."""

    def __init__(self, usage: Usage | None = None, delay: float = 0.0,
                 model_name: str | None = None) -> None:
        super().__init__(usage, delay, model_name)
        self.handler_class = GeminiHandler

    def is_call(self, request: Request) -> bool:
        return request.method == "POST" and request.path.endswith(
            (":generateContent", ":streamGenerateContent"))

    def is_turn(self, request: Request) -> bool:
        return self.is_call(request) and any(
            isinstance(t, dict) and t.get("functionDeclarations")
            for t in (request.body or {}).get("tools") or ())

    def turn(self, request: Request) -> Turn:
        said, results = last_user_parts(request.body)
        return Turn(said, results, request)

    def side_reply(self, request: Request) -> list[Block]:
        config = (request.body or {}).get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        return text(json.dumps(fill_schema(schema, self.title)) if schema else self.title)


def last_user_parts(body: Any) -> tuple[str, str]:
    """(text, function-response text) of the last ``user`` content."""
    contents = body.get("contents", []) if isinstance(body, dict) else []
    last = next((c for c in reversed(contents)
                 if isinstance(c, dict) and c.get("role", "user") == "user"), {})
    said, results = [], []
    for part in last.get("parts") or ():
        if "text" in part:
            said.append(str(part["text"]).strip())
        elif "functionResponse" in part:
            response = part["functionResponse"].get("response") or {}
            results.append(str(response.get("output", json.dumps(response))))
    return "\n".join(t for t in said if t), "\n".join(results)


def fill_schema(schema: Any, title: str) -> Any:
    """A value satisfying a JSON schema (types, enums and required fields)."""
    if not isinstance(schema, dict):
        return title
    if schema.get("enum"):
        enum = schema["enum"]
        return next((v for v in _PREFERRED if v in enum), enum[0])
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        wanted = schema.get("required") or list(props)
        return {name: fill_schema(props.get(name), title) for name in wanted}
    if kind == "array":
        return []
    return {"boolean": False, "integer": 0, "number": 0}.get(kind, title)


# -- wire format -------------------------------------------------------------------


def usage_metadata(usage: Usage, final: bool = True) -> dict[str, int]:
    """Gemini's token counts: the prompt includes cached tokens, as on the real API."""
    prompt = (usage.input_tokens + usage.cache_read_input_tokens
              + usage.cache_creation_input_tokens)
    meta = {"promptTokenCount": prompt, "totalTokenCount": prompt}
    if usage.cache_read_input_tokens:
        meta["cachedContentTokenCount"] = usage.cache_read_input_tokens
    if final:
        meta["candidatesTokenCount"] = usage.output_tokens
        meta["totalTokenCount"] = prompt + usage.output_tokens
    return meta


def to_parts(blocks: list[Block]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "tool_use":
            parts.append({"functionCall": {"id": block["id"], "name": block["name"],
                                           "args": block["input"]}})
        else:
            parts.append({"text": block["text"]})
    return parts


def response_json(parts: list[dict[str, Any]], model: str, usage: Usage,
                  final: bool = True, response_id: str = "") -> dict[str, Any]:
    """One ``GenerateContentResponse`` (a whole reply, or one chunk of a stream)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if final:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate], "usageMetadata": usage_metadata(usage, final),
            "modelVersion": model, "responseId": response_id or f"resp-fake{next(_ids):06d}"}


def stream_chunks(blocks: list[Block], model: str,
                  usage: Usage) -> Iterator[tuple[None, dict[str, Any]]]:
    """The SSE chunks of one streamed reply: text in pieces, each call whole."""
    rid = f"resp-fake{next(_ids):06d}"
    parts = to_parts(blocks) or [{"text": ""}]
    split: list[dict[str, Any]] = []
    for part in parts:
        split += ([{"text": p} for p in pieces(part["text"])] if "text" in part else [part])
    for number, part in enumerate(split):
        yield None, response_json([part], model, usage, number == len(split) - 1, rid)


def error_json(error: ApiError) -> dict[str, Any]:
    status = "INTERNAL" if error.kind == "api_error" else error.kind.upper()
    body = {"code": error.status, "message": error.message, "status": status}
    return {"error": {**body, "details": list(error.details)} if error.details else body}


class GeminiHandler(ApiHandler):
    fake: FakeGemini

    def answer_get(self, request: Request) -> None:
        if request.path.rstrip("/") == "/v1beta/models":
            self.send_json(200, {"models": [{"name": "models/gemini-fake",
                                             "supportedGenerationMethods": ["generateContent"]}]})
        else:
            super().answer_get(request)

    def answer_post(self, request: Request, body: Any) -> None:
        model = self.fake.model_name or request.path.rsplit("/", 1)[-1].split(":")[0]
        if request.path.endswith(":countTokens"):
            self.send_json(200, {"totalTokens": self.fake.usage.input_tokens})
        elif self.fake.is_call(request) and isinstance(body, dict):
            self._generate(request, model)
        else:
            self.send_json(404, error_json(ApiError(404, "not_found", "not served by the fake")))

    def _generate(self, request: Request, model: str) -> None:
        plan = self.fake.plan(request)
        if request.path.endswith(":streamGenerateContent") and not isinstance(plan.reply,
                                                                              ApiError):
            self.stream(stream_chunks(plan.reply, model, plan.usage), plan.delay)
            return
        time.sleep(plan.delay)
        if isinstance(plan.reply, ApiError):
            self.send_json(plan.reply.status, error_json(plan.reply), headers=plan.reply.headers)
        else:
            self.send_json(200, response_json(to_parts(plan.reply), model, plan.usage))
