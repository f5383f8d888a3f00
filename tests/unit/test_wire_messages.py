"""Every refusal of the protocol, word for word, and the limits at their edges.

The sentence is what a CLI user (or an agent) reads, so it is part of the
protocol; the edges are where an off-by-one would let too much through.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from choragos.control import wire

KEYS = ", ".join(wire.KEY_NAMES)


def refusal(obj: Any) -> str:
    with pytest.raises(wire.WireError) as refused:
        wire.parse_request(json.dumps(obj).encode())
    return refused.value.reason


@pytest.mark.parametrize(("obj", "message"), [
    ({"cmd": "delegate", "task": "x"}, 'delegate needs "to": the target role names'),
    ({"cmd": "delegate", "to": 3, "task": "x"}, '"to" must be a list of role names, not a number'),
    ({"cmd": "delegate", "to": [], "task": "x"}, '"to" must name at least one role'),
    ({"cmd": "delegate", "to": ["a"] * 65, "task": "x"}, '"to" names 65 roles; the limit is 64'),
    ({"cmd": "delegate", "to": ["a"]}, 'delegate needs "task": a non-empty string'),
    ({"cmd": "delegate", "to": ["a"], "task": " "}, 'delegate needs a non-empty "task"'),
    ({"cmd": "delegate", "to": ["a"], "task": []}, '"task" must be a string, not a list'),
    ({"cmd": "delegate", "to": ["a"], "task": "a\x00"}, '"task" contains a NUL character'),
    ({"cmd": "delegate", "to": ["a"], "task": "x", "brief": 1.5},
     '"brief" must be a path string, not a number'),
    ({"cmd": "delegate", "to": ["a"], "task": "x", "brief": "b.md"},
     "\"brief\" must be an absolute path, not 'b.md'"),
    ({"cmd": "delegate", "to": ["a"], "task": "x", "brief": "/b\x00"},
     '"brief" contains a NUL character'),
    ({"cmd": "work-done", "task": "x"}, 'work-done needs "id": a non-empty string'),
    ({"cmd": "work-done", "id": "T1", "task": "x", "done": "yes"},
     '"done" must be true or false, not a string'),
    ({"cmd": "work-done", "id": "T1"}, 'work-done needs "task": a non-empty string'),
    ({"cmd": "work-done", "id": "T1", "task": "x", "outcome": "maybe"},
     "\"outcome\" must be \"done\", \"failed\" or \"blocked\", not 'maybe'"),
    ({"cmd": "delegate", "to": ["a"], "task": "x", "require_live": 1},
     '"require_live" must be true or false, not a number'),
    ({"cmd": "work-done", "id": "T 1", "task": "x"},
     "\"id\" must be a short task id such as \"T3\", not 'T 1'"),
    ({"cmd": "work-done", "id": "T" * 65, "task": "x"},
     f"\"id\" must be a short task id such as \"T3\", not '{'T' * 39}..."),
    ({"cmd": "gate", "action": 1}, '"action" must be "list", "approve" or "reject", not 1'),
    ({"cmd": "gate", "action": "approve"}, 'gate approve needs "id": a non-empty string'),
    ({"cmd": "gate", "action": "reject", "id": "T1", "reason": {}},
     '"reason" must be a string, not an object'),
    ({"cmd": "pause"}, 'this command needs "role": the name of a role'),
    ({"cmd": "resume", "role": 5}, "a role name must be a string, not int"),
    ({"cmd": "input", "role": "c", "keys": "enter"}, '"keys" must be a list of key names'),
    ({"cmd": "input", "role": "c", "keys": [1]}, '"keys" must be a list of key names'),
    ({"cmd": "input", "role": "c", "keys": ["enter"] * 65}, '"keys" has 65 keys; the limit is 64'),
    ({"cmd": "input", "role": "c", "keys": ["enter", "f13"]},
     f"unknown key 'f13'; use one of: {KEYS}"),
    ({"cmd": "input", "role": "c", "text": "x" * 4097},
     '"text" is 4097 characters; the limit is 4096'),
    ({"cmd": "input", "role": "c", "text": 7}, '"text" must be a string, not a number'),
    ({"cmd": "input", "role": "c"}, 'input needs "text" or "keys"'),
    ({"cmd": "input", "role": "c", "text": "", "keys": []}, 'input needs "text" or "keys"'),
    ({"cmd": True}, '"cmd" must be a string, not a boolean'),
    ({"cmd": "x" * 50}, f"unknown command '{'x' * 39}...; known commands: "
                        + ", ".join(sorted(wire.COMMANDS))),
])
def test_each_refusal_is_one_exact_sentence(obj: Any, message: str) -> None:
    assert refusal(obj) == message


@pytest.mark.parametrize(("obj", "normalised"), [
    ({"cmd": "delegate", "to": ["a"] * 64, "task": "t", "brief": ""},
     {"cmd": "delegate", "to": ["a"], "task": "t", "brief": None, "require_live": False}),
    ({"cmd": "delegate", "to": ["b", "a", "b"], "task": "t", "brief": "/x.md",
      "require_live": True},
     {"cmd": "delegate", "to": ["b", "a"], "task": "t", "brief": "/x.md", "require_live": True}),
    ({"cmd": "work-done", "id": "T" * 64, "task": "t"},
     {"cmd": "work-done", "id": "T" * 64, "task": "t", "report": None, "done": False,
      "outcome": "done", "report_text": ""}),
    ({"cmd": "work-done", "id": "T1", "task": "t", "report": "/r.md", "done": True,
      "outcome": "blocked"},
     {"cmd": "work-done", "id": "T1", "task": "t", "report": "/r.md", "done": True,
      "outcome": "blocked", "report_text": ""}),
    ({"cmd": "gate"}, {"cmd": "gate", "action": "list", "id": None, "reason": ""}),
    ({"cmd": "gate", "action": "list", "id": "T1", "reason": "r"},
     {"cmd": "gate", "action": "list", "id": None, "reason": ""}),
    ({"cmd": "gate", "action": "approve", "id": "T1", "reason": "r"},
     {"cmd": "gate", "action": "approve", "id": "T1", "reason": ""}),
    ({"cmd": "gate", "action": "reject", "id": "T1"},
     {"cmd": "gate", "action": "reject", "id": "T1", "reason": ""}),
    ({"cmd": "gate", "action": "reject", "id": "T1", "reason": "no"},
     {"cmd": "gate", "action": "reject", "id": "T1", "reason": "no"}),
    ({"cmd": "input", "role": "c", "keys": ["ESC"] * 64},
     {"cmd": "input", "role": "c", "text": "", "keys": ["esc"] * 64}),
    ({"cmd": "input", "role": "c", "text": "y" * 4096},
     {"cmd": "input", "role": "c", "text": "y" * 4096, "keys": []}),
    ({"cmd": "restart", "role": "c", "extra": 1}, {"cmd": "restart", "gateway": False,
                                                   "role": "c"}),
])
def test_what_passes_comes_back_normalised(obj: Any, normalised: dict) -> None:
    assert wire.parse_request(json.dumps(obj).encode()) == normalised


@pytest.mark.parametrize(("parse", "raw", "message"), [
    (wire.parse_request, "not bytes", "the request must be bytes"),
    (wire.parse_request, b"\xff", "the request is not valid UTF-8"),
    (wire.parse_request, b"[" * 100_000, "the request is nested too deeply"),
    (wire.parse_request, b'{"cmd": NaN}',
     "the request is not valid JSON (NaN is not valid JSON)"),
    (wire.parse_request, b'{"cmd": ',
     "the request is not valid JSON (Expecting value at line 1 column 9)"),
    (wire.parse_request, b"7", "the request must be a JSON object, not a number"),
    (wire.parse_request, b"{}", 'the request has no "cmd" field'),
    (wire.parse_ack, b" \n", "the session closed the connection without answering"),
    (wire.parse_ack, b"{", "the session sent an answer that is not valid JSON"),
    (wire.parse_ack, b"[]", 'the session sent an answer without a valid "status"'),
    (wire.parse_ack, b'{"status": "maybe"}',
     'the session sent an answer without a valid "status"'),
    (wire.parse_ack, b'{"status": "error", "error": 1}',
     "the session refused without saying why"),
])
def test_undecodable_requests_and_acks(parse, raw: Any, message: str) -> None:
    with pytest.raises(wire.WireError) as refused:
        parse(raw)
    assert refused.value.reason == message


def test_a_request_of_exactly_the_limit_is_read() -> None:
    padding = wire.MAX_REQUEST - len(b'{"cmd":"ping","x":""}')
    raw = b'{"cmd":"ping","x":"' + b"p" * padding + b'"}'
    assert len(raw) == wire.MAX_REQUEST and wire.parse_request(raw) == {"cmd": "ping"}
    with pytest.raises(wire.WireError, match=r"^request too large \(limit 1 MiB\)$"):
        wire.parse_request(raw + b" ")


def test_acks_and_their_encoding() -> None:
    assert wire.ok() == {"status": "ok"}
    assert wire.error("no", busy=True) == {"status": "error", "error": "no", "busy": True}
    assert wire.encode({"a": [1, "é"]}) == b'{"a":[1,"\\u00e9"]}\n'
    assert wire.parse_ack(b'{"status":"ok","n":1}\n') == {"status": "ok", "n": 1}
