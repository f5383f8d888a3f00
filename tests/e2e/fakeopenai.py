"""A scripted stand-in for the OpenAI Responses API, for end-to-end tests.

The real Codex CLI is pointed at it through a custom ``model_provider``
whose ``base_url`` is this server's ``/v1``.  Scripting and recording are
:class:`~tests.e2e.fakemodel.FakeModel`'s; replies are the same blocks,
written here as Responses ``output`` items (``message``, ``function_call``)::

    with FakeOpenAI() as model:
        model.on("You are the coder role", shell("cat .choragos/tasks/T1.md"))

Served: ``POST /v1/responses`` (server-sent events when ``stream`` is set,
else one JSON response) and ``GET /v1/models``.  A turn's rules see the text
of the last user message, or the outputs of the function calls just made
when the input ends with them.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
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
    tool,
)

_ids = itertools.count(1)
# Codex names its shell tool after the mode it runs in; the first offered wins.
SHELL_TOOLS = ("exec_command", "shell_command", "shell")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def shell(command: str) -> Callable[[Turn], list[Block]]:
    """A reply running ``command`` through whichever shell tool Codex offered."""

    def reply(turn: Turn) -> list[Block]:
        offered = {t.get("name") for t in (turn.request.body or {}).get("tools") or ()
                   if isinstance(t, dict)}
        name = next((n for n in SHELL_TOOLS if n in offered), SHELL_TOOLS[0])
        args: dict[str, Any] = {"exec_command": {"cmd": command},
                                "shell_command": {"command": command},
                                "shell": {"command": ["bash", "-c", command]}}[name]
        return tool(name, args)

    return reply


class FakeOpenAI(FakeModel):
    """A threaded HTTP server on 127.0.0.1 answering like the Responses API."""

    def __init__(self, usage: Usage | None = None, delay: float = 0.0,
                 model_name: str | None = None) -> None:
        super().__init__(usage, delay, model_name)
        self.handler_class = ResponsesHandler

    @property
    def api_base(self) -> str:
        """What a client's ``base_url`` must be (the API lives under ``/v1``)."""
        return f"{self.base_url}/v1"

    def is_call(self, request: Request) -> bool:
        return request.method == "POST" and request.path == "/v1/responses"

    def is_turn(self, request: Request) -> bool:
        return self.is_call(request) and bool((request.body or {}).get("tools"))

    def turn(self, request: Request) -> Turn:
        said, results = last_input(request.body)
        return Turn(said, results, request)


def last_input(body: Any) -> tuple[str, str]:
    """(last user text, outputs of the calls the input ends with)."""
    items = [i for i in (body.get("input") or []) if isinstance(i, dict)] \
        if isinstance(body, dict) else []
    results = []
    for item in reversed(items):
        if item.get("type") not in _OUTPUTS:
            break
        results.insert(0, _output_text(item.get("output")))
    if results:
        return "", "\n".join(results)
    user = next((i for i in reversed(items)
                 if i.get("type", "message") == "message" and i.get("role") == "user"), {})
    content = user.get("content")
    if isinstance(content, str):
        return content.strip(), ""
    return "\n".join(str(c.get("text", "")).strip() for c in content or ()
                     if isinstance(c, dict)).strip(), ""


def _output_text(output: Any) -> str:
    if isinstance(output, list):
        return "\n".join(str(c.get("text", "")) for c in output if isinstance(c, dict))
    return str(output)


# -- wire format -------------------------------------------------------------------


def usage_json(usage: Usage) -> dict[str, Any]:
    """Responses usage: input counts cached tokens, itemised under details."""
    prompt = (usage.input_tokens + usage.cache_read_input_tokens
              + usage.cache_creation_input_tokens)
    return {"input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + usage.output_tokens}


def output_item(block: Block) -> dict[str, Any]:
    """One completed ``output`` item for a text or tool-call block."""
    if block["type"] == "tool_use":
        return {"id": f"fc_fake{next(_ids):06d}", "type": "function_call",
                "status": "completed", "name": block["name"],
                "arguments": json.dumps(block["input"]), "call_id": block["id"]}
    return {"id": f"msg_fake{next(_ids):06d}", "type": "message", "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": block["text"], "annotations": []}]}


def response_json(items: list[dict[str, Any]], model: str, usage: Usage | None,
                  response_id: str, status: str = "completed") -> dict[str, Any]:
    return {"id": response_id, "object": "response", "created_at": int(time.time()),
            "status": status, "model": model, "output": items,
            "usage": usage_json(usage) if usage else None}


def sse_events(blocks: list[Block], model: str,
               usage: Usage) -> Iterator[tuple[str, dict[str, Any]]]:
    """The named events of one streamed response, ending ``response.completed``."""
    rid = f"resp_fake{next(_ids):06d}"
    items = [output_item(b) for b in blocks]
    yield "response.created", {"response": response_json([], model, None, rid, "in_progress")}
    for index, item in enumerate(items):
        yield from _item_events(index, item)
    yield "response.completed", {"response": response_json(items, model, usage, rid)}


def _item_events(index: int, item: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "function_call":
        opening = dict(item, arguments="", status="in_progress")
        deltas = [("response.function_call_arguments.delta", dict(where, delta=p))
                  for p in pieces(item["arguments"])]
        closing = [("response.function_call_arguments.done",
                    dict(where, arguments=item["arguments"]))]
    else:
        whole = item["content"][0]["text"]
        opening = dict(item, content=[], status="in_progress")
        at = dict(where, content_index=0)
        deltas = [("response.output_text.delta", dict(at, delta=p)) for p in pieces(whole)]
        closing = [("response.output_text.done", dict(at, text=whole))]
    yield "response.output_item.added", {"output_index": index, "item": opening}
    yield from deltas
    yield from closing
    yield "response.output_item.done", {"output_index": index, "item": item}


def _typed(events: Iterator[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, dict]]:
    """Each event's data repeats its name as ``type`` and carries a sequence number."""
    for number, (name, data) in enumerate(events):
        yield name, {"type": name, "sequence_number": number, **data}


def error_json(error: ApiError) -> dict[str, Any]:
    kind = "server_error" if error.kind == "api_error" else error.kind
    return {"error": {"message": error.message, "type": kind, "param": None, "code": kind}}


class ResponsesHandler(ApiHandler):
    fake: FakeOpenAI

    def answer_get(self, request: Request) -> None:
        if request.path.rstrip("/") == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": "gpt-fake", "object": "model", "created": 0, "owned_by": "fake"}]})
        else:
            super().answer_get(request)

    def answer_post(self, request: Request, body: Any) -> None:
        if not (self.fake.is_call(request) and isinstance(body, dict)):
            self.send_json(404, error_json(ApiError(404, "not_found", "not served by the fake")))
            return
        plan = self.fake.plan(request)
        model = self.fake.model_name or str(body.get("model") or "gpt-fake")
        if body.get("stream") and not isinstance(plan.reply, ApiError):
            self.stream(_typed(sse_events(plan.reply, model, plan.usage)), plan.delay)
            return
        time.sleep(plan.delay)
        if isinstance(plan.reply, ApiError):
            self.send_json(plan.reply.status, error_json(plan.reply), headers=plan.reply.headers)
        else:
            items = [output_item(b) for b in plan.reply]
            self.send_json(200, response_json(items, model, plan.usage,
                                              f"resp_fake{next(_ids):06d}"))
