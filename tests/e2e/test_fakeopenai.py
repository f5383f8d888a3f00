"""The fake OpenAI Responses API server, exercised over real HTTP with urllib."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.fakemodel import ApiError, Usage, read_sse, text
from tests.e2e.fakeopenai import FakeOpenAI, shell
from tests.e2e.test_fakemodel import post

PATH = "/v1/responses"


def body(*items: dict[str, Any], tools: tuple[str, ...] = ("exec_command",),
         stream: bool = True) -> dict[str, Any]:
    return {"model": "gpt-test", "input": list(items), "stream": stream,
            "tools": [{"type": "function", "name": name, "parameters": {}} for name in tools]}


def user(words: str) -> dict[str, Any]:
    return {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": words}]}


def names(events: list[tuple[str | None, Any]]) -> list[str | None]:
    return [name for name, _ in events]


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_stream_of_a_text_reply(openai: FakeOpenAI) -> None:
    openai.on("hello", text("Hello there, this reply is long enough to be chunked."))
    status, raw = post(openai, body(user("hello")), path=PATH)
    events = read_sse(raw)
    assert status == 200
    assert names(events)[0] == "response.created" and names(events)[-1] == "response.completed"
    assert all(data["type"] == name for name, data in events)
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    deltas = [d["delta"] for n, d in events if n == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas).startswith("Hello there")
    done = events[-1][1]["response"]
    assert done["status"] == "completed" and done["model"] == "gpt-test"
    assert done["output"][0]["content"][0]["text"].endswith("chunked.")
    assert done["usage"] == {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0},
                             "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0},
                             "total_tokens": 132}


@pytest.mark.parametrize(("offered", "args"), [
    (("exec_command",), {"cmd": "ls -1"}),
    (("shell_command",), {"command": "ls -1"}),
    (("shell",), {"command": ["bash", "-c", "ls -1"]}),
])
def test_shell_uses_the_tool_codex_offered(openai: FakeOpenAI, offered: tuple[str, ...],
                                           args: dict[str, Any]) -> None:
    openai.on("list", shell("ls -1"))
    events = read_sse(post(openai, body(user("list"), tools=offered), path=PATH)[1])
    done = [d["item"] for n, d in events if n == "response.output_item.done"]
    assert len(done) == 1 and done[0]["type"] == "function_call"
    assert done[0]["name"] == offered[0] and json.loads(done[0]["arguments"]) == args
    streamed = "".join(d["delta"] for n, d in events
                       if n == "response.function_call_arguments.delta")
    assert json.loads(streamed) == args and done[0]["call_id"]


def test_a_turn_ending_in_call_outputs_reads_as_tool_text(openai: FakeOpenAI) -> None:
    openai.on(lambda turn: "exit 0" in turn.tool_text and not turn.text, text("seen"))
    items = [user("first"), {"type": "function_call", "name": "exec_command",
                             "arguments": "{}", "call_id": "c1"},
             {"type": "function_call_output", "call_id": "c1", "output": "hi\nexit 0"}]
    reply = json.loads(post(openai, body(*items, stream=False), path=PATH)[1])
    assert reply["object"] == "response" and reply["status"] == "completed"
    assert reply["output"][0]["content"][0]["text"] == "seen"
    assert openai.user_messages() == ["hi\nexit 0"]


def test_usage_counts_cached_tokens_inside_the_input() -> None:
    with FakeOpenAI(usage=Usage(100, 7, 0, 30), model_name="gpt-x") as server:
        reply = json.loads(post(server, body(user("x"), stream=False), path=PATH)[1])
    assert reply["model"] == "gpt-x"
    assert reply["usage"]["input_tokens"] == 130
    assert reply["usage"]["input_tokens_details"] == {"cached_tokens": 30}
    assert reply["usage"]["total_tokens"] == 137


def test_errors_models_and_tool_less_requests(openai: FakeOpenAI) -> None:
    openai.on("boom", ApiError(429, "rate_limit_exceeded", "slow down"))
    status, raw = post(openai, body(user("boom")), path=PATH)
    assert status == 429 and json.loads(raw)["error"]["code"] == "rate_limit_exceeded"
    assert post(openai, {}, path="/v1/chat/completions")[0] == 404
    with urllib.request.urlopen(openai.api_base + "/models", timeout=5) as response:
        assert json.loads(response.read())["data"][0]["object"] == "model"
    openai.on("compact", text("scripted"))
    side = dict(body(user("compact this")), tools=[])
    assert post(openai, side, path=PATH)[0] == 200
    assert len(openai.message_requests()) == 1 and len(openai.message_requests(False)) == 2


def test_requests_are_recorded_with_the_bearer_key(openai: FakeOpenAI) -> None:
    post(openai, body(user("do the thing")), path=PATH,
         headers={"authorization": "Bearer sk-test-000"})
    request = openai.wait_for_user_message("do the thing", timeout=5)
    assert request.headers["authorization"] == "Bearer sk-test-000"
