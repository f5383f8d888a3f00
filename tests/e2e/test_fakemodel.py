"""The fake Messages API server, exercised over real HTTP with urllib."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.e2e.fakemodel import ApiError, FakeModel, Turn, Usage, text, tool

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def post(model: FakeModel, body: dict[str, Any], path: str = "/v1/messages?beta=true",
         headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        model.base_url + path, data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def turn_body(*messages: dict[str, Any], stream: bool = True, tools: bool = True) -> dict:
    body: dict[str, Any] = {"model": "claude-test", "messages": list(messages),
                            "stream": stream, "max_tokens": 100}
    if tools:
        body["tools"] = TOOLS
    return body


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def events(raw: bytes) -> list[tuple[str, dict]]:
    """Parse a server-sent event stream into (event, data) pairs."""
    parsed = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk.strip():
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        parsed.append((fields["event"], json.loads(fields["data"])))
    return parsed


def joined_deltas(stream: list[tuple[str, dict]], kind: str, key: str) -> str:
    return "".join(d["delta"][key] for e, d in stream
                   if e == "content_block_delta" and d["delta"]["type"] == kind)


@pytest.fixture
def model() -> FakeModel:
    with FakeModel() as server:
        yield server


def test_root_answers_head_and_get(model: FakeModel) -> None:
    for method in ("HEAD", "GET"):
        request = urllib.request.Request(model.base_url + "/", method=method)
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200
    assert [r.method for r in model.requests] == ["HEAD", "GET"]


def test_unknown_paths_are_404_with_an_api_error(model: FakeModel) -> None:
    status, raw = post(model, {}, path="/api/oauth/profile")
    assert status == 404
    assert json.loads(raw)["type"] == "error"
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(model.base_url + "/v1/models", timeout=5)
    assert caught.value.code == 404


def test_count_tokens(model: FakeModel) -> None:
    status, raw = post(model, turn_body(user("hi")), path="/v1/messages/count_tokens")
    assert status == 200 and json.loads(raw) == {"input_tokens": 120}


def test_stream_of_a_text_reply(model: FakeModel) -> None:
    model.on("hello", text("Hello there, this reply is long enough to be chunked."))
    status, raw = post(model, turn_body(user("hello")))
    stream = events(raw)
    assert status == 200
    names = [name for name, _ in stream]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names[1] == "content_block_start" and names[-3] == "content_block_stop"
    assert names.count("content_block_delta") > 1
    start = stream[0][1]["message"]
    assert start["role"] == "assistant" and start["content"] == []
    assert start["model"] == "claude-test"
    assert start["usage"]["input_tokens"] == 120
    assert joined_deltas(stream, "text_delta", "text") == (
        "Hello there, this reply is long enough to be chunked.")
    delta = stream[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn" and delta["usage"]["output_tokens"] == 12


def test_stream_of_a_tool_call(model: FakeModel) -> None:
    model.on("run", tool("Bash", {"command": "choragos delegate --to coder --task x"}))
    stream = events(post(model, turn_body(user("run")))[1])
    opening = stream[1][1]["content_block"]
    assert opening["type"] == "tool_use" and opening["name"] == "Bash"
    assert opening["id"].startswith("toolu_") and opening["input"] == {}
    arguments = json.loads(joined_deltas(stream, "input_json_delta", "partial_json"))
    assert arguments == {"command": "choragos delegate --to coder --task x"}
    assert stream[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_plain_json_when_not_streaming(model: FakeModel) -> None:
    model.on("both", [*text("first"), *tool("Bash", {"command": "ls"}, tool_id="toolu_1")])
    status, raw = post(model, turn_body(user("both"), stream=False))
    message = json.loads(raw)
    assert status == 200 and message["type"] == "message"
    assert message["content"][0] == {"type": "text", "text": "first"}
    assert message["content"][1]["id"] == "toolu_1"
    assert message["stop_reason"] == "tool_use"


def test_usage_is_configurable_per_server_and_per_rule() -> None:
    with FakeModel(usage=Usage(1000, 50, 7, 300), model_name="claude-x") as server:
        server.on("cheap", text("ok"), usage=Usage(input_tokens=3, output_tokens=1))
        first = events(post(server, turn_body(user("big")))[1])
        second = events(post(server, turn_body(user("cheap")))[1])
    usage = first[0][1]["message"]["usage"]
    assert usage == {"input_tokens": 1000, "output_tokens": 1,
                     "cache_creation_input_tokens": 7, "cache_read_input_tokens": 300}
    assert first[-2][1]["usage"]["output_tokens"] == 50
    assert first[0][1]["message"]["model"] == "claude-x"
    assert second[0][1]["message"]["usage"]["input_tokens"] == 3


def test_rules_match_the_last_user_message_only(model: FakeModel) -> None:
    model.on("second", text("matched second"))
    model.on("first", text("matched first"))
    body = turn_body(user("first thing"), {"role": "assistant", "content": "ok"},
                     user([{"type": "text", "text": "second thing"}]),
                     {"role": "system", "content": "first second third"})
    reply = events(post(model, body)[1])
    assert joined_deltas(reply, "text_delta", "text") == "matched second"


def test_rules_see_tool_results_and_can_be_callables(model: FakeModel) -> None:
    seen: list[Turn] = []
    model.on(lambda turn: "exit 0" in turn.tool_text,
             lambda turn: seen.append(turn) or text(f"saw {turn.tool_text}"))
    result = {"type": "tool_result", "tool_use_id": "toolu_1",
              "content": [{"type": "text", "text": "exit 0"}]}
    reply = events(post(model, turn_body(user([result])))[1])
    assert joined_deltas(reply, "text_delta", "text") == "saw exit 0"
    assert seen[0].text == "" and seen[0].tool_text == "exit 0"


def test_substring_rules_also_match_tool_results(model: FakeModel) -> None:
    model.on("check-42", text("good"))
    result = {"type": "tool_result", "tool_use_id": "t", "content": "check-42"}
    assert joined_deltas(events(post(model, turn_body(user([result])))[1]),
                         "text_delta", "text") == "good"


def test_one_shot_and_repeating_rules_and_the_default(model: FakeModel) -> None:
    once = model.on("ping", text("pong"))
    always = model.on("tick", text("tock"), once=False)

    def say(words: str) -> str:
        return joined_deltas(events(post(model, turn_body(user(words)))[1]), "text_delta",
                             "text")

    assert [say("ping"), say("ping"), say("tick"), say("tick")] == ["pong", "ok", "tock", "tock"]
    assert once.hits == 1 and always.hits == 2
    model.default = text("fallback")
    assert say("anything") == "fallback"


def test_title_request_gets_a_title_and_keeps_the_script(model: FakeModel) -> None:
    model.on("hello", text("scripted"))
    schema = {"type": "object", "properties": {"title": {"type": "string"}},
              "required": ["title"]}
    body = turn_body(user("<session>hello</session>"), tools=False)
    body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    title = joined_deltas(events(post(model, body)[1]), "text_delta", "text")
    assert json.loads(title) == {"title": "Test session"}
    plain = joined_deltas(events(post(model, turn_body(user("hello"), tools=False))[1]),
                          "text_delta", "text")
    assert plain == "Test session"
    assert joined_deltas(events(post(model, turn_body(user("hello")))[1]),
                         "text_delta", "text") == "scripted"


def test_scripted_api_errors(model: FakeModel) -> None:
    model.on("boom", ApiError(529, "overloaded_error", "try later"))
    status, raw = post(model, turn_body(user("boom")))
    assert status == 529
    assert json.loads(raw)["error"] == {"type": "overloaded_error", "message": "try later"}


def test_requests_are_recorded_with_headers_and_query(model: FakeModel) -> None:
    reminder = "<system-reminder>\ncontext\n</system-reminder>\n\n"
    post(model, turn_body(user([{"type": "text", "text": reminder},
                                {"type": "text", "text": "do the thing"}])),
         headers={"x-api-key": "sk-ant-test-000", "anthropic-version": "2023-06-01"})
    request = model.message_requests()[0]
    assert request.path == "/v1/messages" and request.query == "beta=true"
    assert request.headers["x-api-key"] == "sk-ant-test-000"
    assert request.body["model"] == "claude-test"
    assert model.user_messages() == ["do the thing"]


def test_wait_for_user_message_blocks_until_it_arrives(model: FakeModel) -> None:
    later = threading.Timer(0.2, post, (model, turn_body(user("A worker reports: done"))))
    later.start()
    try:
        found = model.wait_for_user_message("a worker REPORTS", timeout=5)
    finally:
        later.join()
    assert "done" in found.body["messages"][-1]["content"]
    with pytest.raises(AssertionError, match="no matching request"):
        model.wait_for_user_message("never said", timeout=0.2)


def test_delay_spreads_the_stream_over_time() -> None:
    with FakeModel(delay=0.6) as server:
        server.on("fast", text("quick"), delay=0.0)
        began = time.monotonic()
        post(server, turn_body(user("slow please")))
        slow = time.monotonic() - began
        began = time.monotonic()
        post(server, turn_body(user("fast")))
        fast = time.monotonic() - began
    assert slow >= 0.6 > fast
