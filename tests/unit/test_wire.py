"""Request validation, ack builders and ack parsing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from choragos.control import wire


def parse(obj: Any) -> dict[str, Any]:
    return wire.parse_request(json.dumps(obj).encode())


def refused(raw: bytes | Any) -> str:
    data = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
    with pytest.raises(wire.WireError) as caught:
        wire.parse_request(data)
    reason = caught.value.reason
    assert reason and reason == str(caught.value) and "\n" not in reason
    return reason


# --- valid requests, normalised ---------------------------------------------

def test_delegate_normalised() -> None:
    got = parse({"cmd": "delegate", "to": ["coder", "reviewer", "coder"], "task": "fix it",
                 "brief": "/abs/brief.md", "extra": {"ignored": True}})
    assert got == {"cmd": "delegate", "to": ["coder", "reviewer"], "task": "fix it",
                   "brief": "/abs/brief.md", "require_live": False}
    assert parse({"cmd": "delegate", "to": "c", "task": "x", "require_live": True})[
        "require_live"] is True
    with pytest.raises(wire.WireError, match='"require_live" must be true or false'):
        parse({"cmd": "delegate", "to": "c", "task": "x", "require_live": "yes"})


def test_delegate_single_string_target_is_wrapped() -> None:
    assert parse({"cmd": "delegate", "to": "coder", "task": "x"})["to"] == ["coder"]


def test_delegate_without_brief() -> None:
    assert parse({"cmd": "delegate", "to": ["a"], "task": "x"})["brief"] is None
    assert parse({"cmd": "delegate", "to": ["a"], "task": "x", "brief": ""})["brief"] is None


def test_task_text_is_carried_byte_exact() -> None:
    hostile = "$(rm -rf ~); `id` | tee /x && echo \x1b]0;pwn\x07 \x1b[2J\r\n\t'\"\\ ü 🎉"
    assert parse({"cmd": "delegate", "to": ["a"], "task": hostile})["task"] == hostile


def test_work_done_normalised() -> None:
    assert parse({"cmd": "work-done", "id": "T3", "task": "did it"}) == {
        "cmd": "work-done", "id": "T3", "task": "did it", "report": None, "done": False,
        "outcome": "done", "report_text": ""}
    got = parse({"cmd": "work-done", "id": "T3", "task": "s", "report": "/r.md", "done": True})
    assert got["report"] == "/r.md" and got["done"] is True
    assert parse({"cmd": "work-done", "id": "T3", "task": "s", "outcome": "blocked"})[
        "outcome"] == "blocked"


@pytest.mark.parametrize("outcome", ["finished", 1, None, ["failed"]])
def test_work_done_outcome_must_be_one_of_three(outcome) -> None:
    with pytest.raises(wire.WireError, match='"outcome" must be "done", "failed" or "blocked"'):
        parse({"cmd": "work-done", "id": "T3", "task": "s", "outcome": outcome})


def test_gate_variants() -> None:
    assert parse({"cmd": "gate"}) == {"cmd": "gate", "action": "list", "id": None, "reason": ""}
    assert parse({"cmd": "gate", "action": "approve", "id": "T4"})["id"] == "T4"
    got = parse({"cmd": "gate", "action": "reject", "id": "T4", "reason": "too risky"})
    assert got == {"cmd": "gate", "action": "reject", "id": "T4", "reason": "too risky"}


@pytest.mark.parametrize("cmd", ["restart", "pause", "resume"])
def test_role_commands(cmd: str) -> None:
    also = {"gateway": False} if cmd == "restart" else {}
    assert parse({"cmd": cmd, "role": "coder"}) == {"cmd": cmd, "role": "coder", **also}


@pytest.mark.parametrize("cmd", ["ping", "shutdown", "status", "whoami"])
def test_fieldless_commands_drop_unknown_fields(cmd: str) -> None:
    assert parse({"cmd": cmd, "future_field": [1, 2]}) == {"cmd": cmd}


def test_reload_takes_an_optional_loosen_flag_and_the_mark_it_confirms() -> None:
    assert parse({"cmd": "reload", "future_field": 1}) == {"cmd": "reload", "loosen": False,
                                                            "seen": ""}
    assert parse({"cmd": "reload", "loosen": True, "seen": "0123abcd"}) == {
        "cmd": "reload", "loosen": True, "seen": "0123abcd"}
    with pytest.raises(wire.WireError):
        parse({"cmd": "reload", "loosen": True, "seen": "x" * 65})


def test_board_takes_an_optional_archived_flag() -> None:
    assert parse({"cmd": "board", "future_field": 1}) == {"cmd": "board", "archived": False}
    assert parse({"cmd": "board", "archived": True}) == {"cmd": "board", "archived": True}
    with pytest.raises(wire.WireError, match='"archived" must be true or false'):
        parse({"cmd": "board", "archived": "yes"})


def test_trailing_newline_and_whitespace_accepted() -> None:
    assert wire.parse_request(b'  {"cmd":"ping"}\n') == {"cmd": "ping"}


# --- refusals -----------------------------------------------------------------

@pytest.mark.parametrize(("raw", "fragment"), [
    (b"", "not valid JSON"),
    (b"hello", "not valid JSON"),
    (b'{"cmd":"ping"', "not valid JSON"),
    (b'{"cmd":"ping"}{"cmd":"ping"}', "not valid JSON"),
    (b"\xff\xfe", "not valid UTF-8"),
    (b'{"cmd":"ping","x":NaN}', "not valid JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"1" * 5000, "not valid JSON"),
    (b'{"cmd":"ping"}\x00', "not valid JSON"),
])
def test_malformed_bytes(raw: bytes, fragment: str) -> None:
    assert fragment in refused(raw)


@pytest.mark.parametrize(("obj", "fragment"), [
    ([], "JSON object, not a list"),
    ("ping", "JSON object, not a string"),
    (None, "JSON object, not null"),
    ({}, 'no "cmd"'),
    ({"cmd": 1}, '"cmd" must be a string'),
    ({"cmd": "rm -rf"}, "unknown command 'rm -rf'"),
    ({"cmd": "delegate", "task": "x"}, 'needs "to"'),
    ({"cmd": "delegate", "to": [], "task": "x"}, "at least one role"),
    ({"cmd": "delegate", "to": {"a": 1}, "task": "x"}, "list of role names"),
    ({"cmd": "delegate", "to": ["../../etc"], "task": "x"}, "bad role name"),
    ({"cmd": "delegate", "to": [""], "task": "x"}, "bad role name"),
    ({"cmd": "delegate", "to": [7], "task": "x"}, "must be a string"),
    ({"cmd": "delegate", "to": ["a"] * 65, "task": "x"}, "limit is 64"),
    ({"cmd": "delegate", "to": ["a"]}, 'needs "task"'),
    ({"cmd": "delegate", "to": ["a"], "task": " \n "}, 'non-empty "task"'),
    ({"cmd": "delegate", "to": ["a"], "task": 5}, '"task" must be a string'),
    ({"cmd": "delegate", "to": ["a"], "task": "a\x00b"}, "NUL"),
    ({"cmd": "delegate", "to": ["a"], "task": "\ud800"}, "lone surrogate"),
    ({"cmd": "delegate", "to": ["a"], "task": "x", "brief": "rel/b.md"}, "absolute path"),
    ({"cmd": "delegate", "to": ["a"], "task": "x", "brief": 3}, "path string"),
    ({"cmd": "delegate", "to": ["a"], "task": "x", "brief": "/a\x00b"}, "NUL"),
    ({"cmd": "work-done", "task": "x"}, 'needs "id"'),
    ({"cmd": "work-done", "id": "", "task": "x"}, 'non-empty "id"'),
    ({"cmd": "work-done", "id": "T 3", "task": "x"}, "short task id"),
    ({"cmd": "work-done", "id": "T\x1b3", "task": "x"}, "short task id"),
    ({"cmd": "work-done", "id": "T3"}, 'needs "task"'),
    ({"cmd": "work-done", "id": "T3", "task": "x", "done": "yes"}, "true or false"),
    ({"cmd": "work-done", "id": "T3", "task": "x", "done": 1}, "true or false"),
    ({"cmd": "work-done", "id": "T3", "task": "x", "report": "r.md"}, "absolute path"),
    ({"cmd": "gate", "action": "merge"}, '"action" must be'),
    ({"cmd": "gate", "action": "approve"}, 'needs "id"'),
    ({"cmd": "gate", "action": "reject", "id": "T1", "reason": 5}, '"reason" must be'),
    ({"cmd": "restart"}, 'needs "role"'),
    ({"cmd": "pause", "role": "a/b"}, "bad role name"),
])
def test_invalid_requests(obj: Any, fragment: str) -> None:
    assert fragment in refused(obj)


def test_oversize_request_refused() -> None:
    big = json.dumps({"cmd": "delegate", "to": ["a"], "task": "x" * wire.MAX_REQUEST})
    assert "too large" in refused(big.encode())


def test_error_text_escapes_hostile_values() -> None:
    reason = refused({"cmd": "\x1b[2Jboom" + "x" * 200})
    assert "\x1b" not in reason and len(reason) < 300


# --- property: nothing but WireError escapes ------------------------------------

# Plausible values mixed in, so generated requests also reach the valid paths.
plausible = st.sampled_from(["coder", "T3", "/abs/brief.md", "approve", "reject", "list", "x"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=40) | plausible,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                 max_size=5),
    max_leaves=30,
)
fields = st.sampled_from(["cmd", "to", "task", "brief", "id", "report", "done", "action",
                          "reason", "role"])
commands = st.sampled_from([*sorted(wire.COMMANDS), "nope", ""])


def _outcome(raw: bytes) -> dict[str, Any] | None:
    try:
        result = wire.parse_request(raw)
    except wire.WireError as exc:
        assert exc.reason
        return None
    assert isinstance(result, dict) and result["cmd"] in wire.COMMANDS
    return result


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_only_raise_wire_error(raw: bytes) -> None:
    _outcome(raw)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_arbitrary_json_only_raises_wire_error(value: Any) -> None:
    _outcome(json.dumps(value).encode())


@settings(max_examples=300, deadline=None)
@given(commands, st.dictionaries(fields, json_values, max_size=6))
def test_arbitrary_command_shapes_only_raise_wire_error(cmd: str, body: dict[str, Any]) -> None:
    result = _outcome(json.dumps({**body, "cmd": cmd}).encode())
    if result is not None and result["cmd"] == "delegate":
        assert result["to"] and result["task"].strip()


# --- acks -------------------------------------------------------------------------

def test_ack_builders() -> None:
    assert wire.ok() == {"status": "ok"}
    assert wire.ok(tasks=[{"id": "T1"}]) == {"status": "ok", "tasks": [{"id": "T1"}]}
    assert wire.error("no such task") == {"status": "error", "error": "no such task"}


def test_encode_is_one_line() -> None:
    data = wire.encode({"task": "a\nb"})
    assert data.endswith(b"\n") and data.count(b"\n") == 1


def test_parse_ack() -> None:
    assert wire.parse_ack(b'{"status":"ok","id":"T1"}\n') == {"status": "ok", "id": "T1"}
    for bad in [b"", b"nope", b"[]", b'{"status":"maybe"}', b'{"status":"error"}']:
        with pytest.raises(wire.WireError):
            wire.parse_ack(bad)


# --- gateway refusals --------------------------------------------------------------

@pytest.mark.parametrize("obj", [
    {"cmd": "reload"}, {"cmd": "ping"}, {"cmd": "shutdown"}, {"cmd": "status"},
    {"cmd": "board"}, {"cmd": "gate"},
])
def test_gateway_down_lets_team_and_read_commands_through(obj: dict[str, Any]) -> None:
    assert wire.gateway_refusal(parse(obj)) is None


@pytest.mark.parametrize("obj", [
    {"cmd": "delegate", "to": ["a"], "task": "x"},
    {"cmd": "work-done", "id": "T1", "task": "x"},
    {"cmd": "gate", "action": "approve", "id": "T1"},
    {"cmd": "restart", "role": "a"},
])
def test_gateway_down_refuses_work(obj: dict[str, Any]) -> None:
    assert wire.gateway_refusal(parse(obj)) == wire.error("dispatch refused: gateway down")


def test_input_command_names_keys_and_text() -> None:
    request = wire.parse_request(
        b'{"cmd":"input","role":"coder","keys":["Enter","DOWN"],"text":"y"}')
    assert request == {"cmd": "input", "role": "coder", "keys": ["enter", "down"], "text": "y"}
    for bad, reason in [
        (b'{"cmd":"input","role":"coder"}', 'needs "text" or "keys"'),
        (b'{"cmd":"input","role":"coder","keys":["f13"]}', "unknown key"),
        (b'{"cmd":"input","role":"coder","keys":"enter"}', "must be a list"),
        (b'{"cmd":"input","role":"../x","keys":["enter"]}', "role"),
    ]:
        with pytest.raises(wire.WireError, match=reason):
            wire.parse_request(bad)


def test_handoff_normalised_and_checked() -> None:
    assert parse({"cmd": "handoff"}) == {"cmd": "handoff", "config": None, "wait": 300}
    got = parse({"cmd": "handoff", "config": "/p/next.toml", "wait": 20})
    assert got == {"cmd": "handoff", "config": "/p/next.toml", "wait": 20}
    for bad, fragment in (({"wait": 0}, '"wait"'), ({"wait": True}, '"wait"'),
                          ({"wait": 99999}, '"wait"'), ({"config": "next.toml"}, "absolute")):
        with pytest.raises(wire.WireError, match=fragment):
            parse({"cmd": "handoff", **bad})
