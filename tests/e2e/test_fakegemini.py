"""The fake Gemini API server, exercised over real HTTP with urllib."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.fakegemini import FakeGemini, fill_schema, shell
from tests.e2e.fakemodel import ApiError, Usage, read_sse, text
from tests.e2e.test_fakemodel import post

TOOLS = [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {}}]}]
STREAM = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
ONCE = "/v1beta/models/gemini-test:generateContent"


def body(*contents: dict[str, Any], tools: bool = True, **extra: Any) -> dict[str, Any]:
    return {"contents": list(contents), **({"tools": TOOLS} if tools else {}), **extra}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def said(chunks: list[tuple[str | None, Any]]) -> str:
    return "".join(p.get("text", "") for _, c in chunks
                   for p in c["candidates"][0]["content"]["parts"])


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


def test_stream_of_a_text_reply_is_bare_data_events(gemini: FakeGemini) -> None:
    gemini.on("hello", text("Hello there, this reply is long enough to be chunked."))
    status, raw = post(gemini, body(user({"text": "hello"})), path=STREAM)
    chunks = read_sse(raw)
    assert status == 200 and len(chunks) > 1
    assert all(name is None for name, _ in chunks)
    assert said(chunks) == "Hello there, this reply is long enough to be chunked."
    assert [c["candidates"][0].get("finishReason") for _, c in chunks][-1] == "STOP"
    assert all("finishReason" not in c["candidates"][0] for _, c in chunks[:-1])
    last = chunks[-1][1]
    assert last["modelVersion"] == "gemini-test" and last["responseId"]
    assert last["usageMetadata"] == {"promptTokenCount": 120, "candidatesTokenCount": 12,
                                     "totalTokenCount": 132}
    assert "candidatesTokenCount" not in chunks[0][1]["usageMetadata"]


def test_a_shell_call_is_a_whole_function_call_part(gemini: FakeGemini) -> None:
    gemini.on("run it", shell("choragos work-done --id T1 --done --task ok"))
    chunks = read_sse(post(gemini, body(user({"text": "run it"})), path=STREAM)[1])
    calls = [p["functionCall"] for _, c in chunks for p in c["candidates"][0]["content"]["parts"]
             if "functionCall" in p]
    assert len(calls) == 1 and calls[0]["name"] == "run_shell_command"
    assert calls[0]["args"]["command"] == "choragos work-done --id T1 --done --task ok"


def test_function_responses_are_the_turns_tool_text(gemini: FakeGemini) -> None:
    gemini.on(lambda turn: "exit 0" in turn.tool_text and not turn.text, text("seen"))
    answer = user({"functionResponse": {"name": "run_shell_command",
                                        "response": {"output": "Output: hi\nexit 0"}}})
    status, raw = post(gemini, body(user({"text": "first"}),
                                    {"role": "model", "parts": [{"text": "ok"}]}, answer),
                       path=ONCE)
    reply = json.loads(raw)
    assert status == 200 and reply["candidates"][0]["content"]["parts"] == [{"text": "seen"}]
    assert reply["candidates"][0]["finishReason"] == "STOP"
    assert gemini.user_messages() == ["Output: hi\nexit 0"]


def test_usage_counts_cached_tokens_inside_the_prompt() -> None:
    with FakeGemini(usage=Usage(100, 7, 0, 30)) as server:
        reply = json.loads(post(server, body(user({"text": "x"})), path=ONCE)[1])
    assert reply["usageMetadata"] == {"promptTokenCount": 130, "cachedContentTokenCount": 30,
                                      "candidatesTokenCount": 7, "totalTokenCount": 137}


def test_side_questions_are_answered_from_their_schema_and_keep_the_script(
        gemini: FakeGemini) -> None:
    gemini.on("hello", text("scripted"))
    schema = {"type": "object", "required": ["reasoning", "next_speaker"],
              "properties": {"reasoning": {"type": "string"},
                             "next_speaker": {"type": "string", "enum": ["model", "user"]}}}
    side = body(user({"text": "hello"}), tools=False,
                generationConfig={"responseMimeType": "application/json",
                                  "responseJsonSchema": schema})
    answer = json.loads(said(read_sse(post(gemini, side, path=STREAM)[1])))
    assert answer == {"reasoning": "Test session", "next_speaker": "user"}
    assert said(read_sse(post(gemini, body(user({"text": "hello"})), path=STREAM)[1])) \
        == "scripted"
    assert gemini.user_messages() == ["hello"]
    assert len(gemini.message_requests(with_tools=False)) == 2


def test_fill_schema_covers_the_json_types() -> None:
    schema = {"type": "OBJECT", "properties": {
        "n": {"type": "number"}, "ok": {"type": "boolean"}, "xs": {"type": "array"},
        "pick": {"enum": ["pro", "flash"]}}}
    assert fill_schema(schema, "t") == {"n": 0, "ok": False, "xs": [], "pick": "flash"}


def test_errors_count_tokens_models_and_unknown_paths(gemini: FakeGemini) -> None:
    gemini.on("boom", ApiError(429, "resource_exhausted", "slow down"))
    status, raw = post(gemini, body(user({"text": "boom"})), path=STREAM)
    assert status == 429
    assert json.loads(raw)["error"] == {"code": 429, "message": "slow down",
                                        "status": "RESOURCE_EXHAUSTED"}
    status, raw = post(gemini, body(user({"text": "x"})),
                       path="/v1beta/models/gemini-test:countTokens")
    assert status == 200 and json.loads(raw) == {"totalTokens": 120}
    assert post(gemini, {}, path="/v1/messages")[0] == 404
    import urllib.request
    with urllib.request.urlopen(gemini.base_url + "/v1beta/models", timeout=5) as response:
        assert json.loads(response.read())["models"]


def test_requests_are_recorded_with_the_api_key_header(gemini: FakeGemini) -> None:
    post(gemini, body(user({"text": "do the thing"})), path=STREAM,
         headers={"x-goog-api-key": "fake-gemini-key"})
    request = gemini.wait_for_user_message("DO THE THING", timeout=5)
    assert request.headers["x-goog-api-key"] == "fake-gemini-key"
    assert request.query == "alt=sse"
