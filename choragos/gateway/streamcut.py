"""Ending a streamed answer where it crosses a budget (``budget_action = "cut"``).

A role whose budget cuts has its streamed answers watched as they pass:
after each event the usage the stream has reported so far is added to what
the role had spent, and once that reaches the budget the stream is ended
right there with an error event in the API's own stream format, so the
agent's SDK raises it and the CLI shows why.  What is counted is exactly
what the stream reported up to the cut.  Only at an event's end, so the
agent never gets half an event; only a plain (not compressed) stream.

How early a cut can come depends on what the API reports while it
streams: Gemini reports its usage with every chunk; Anthropic reports the
input (and cache) tokens when the message starts and the output only at
its end; OpenAI reports everything at the end.  So an answer whose input
alone crosses the budget is cut before any of it is generated, and one
that crosses it with its output is cut at the first report that shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from choragos.gateway.usage import ANTHROPIC, GEMINI

KIND = "budget_cut"
_ENDS = (b"\n\n", b"\r\n\r\n")
_EVENT_END = re.compile(rb"\r?\n\r?\n")


def events(data: bytes) -> Iterator[bytes]:
    """``data`` in pieces that each end an event (the last may be the start of one)."""
    start = 0
    for end in _EVENT_END.finditer(data):
        yield data[start:end.end()]
        start = end.end()
    if start < len(data):
        yield data[start:]


def error_event(api: str, message: str) -> bytes:
    """One server-sent event each API's SDK reads as an error with ``message``."""
    if api == ANTHROPIC:
        body = {"type": "error", "error": {"type": "budget_exceeded", "message": message}}
        return b"event: error\ndata: " + json.dumps(body).encode() + b"\n\n"
    if api == GEMINI:
        body = {"error": {"code": 402, "message": message, "status": "BUDGET_EXCEEDED"}}
        return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"
    # OpenAI: the Responses API's error event, readable as Chat Completions' too.
    body = {"type": "error", "code": "budget_exceeded", "message": message, "param": None,
            "error": {"type": "budget_exceeded", "code": "budget_exceeded",
                      "message": message}}
    return b"event: error\ndata: " + json.dumps(body).encode() + b"\n\n"


class Cut:
    """Watches one role's streamed answer for the point where it crosses the budget."""

    def __init__(self, gate: Any, role: str, api: str, model: str,
                 said: Callable[[str], None]) -> None:
        self.gate, self.role, self.api, self.model = gate, role, api, model
        self.said = said  # told why, once, when the answer is cut

    def check(self, meter: Any, data: bytes) -> bytes | None:
        """After ``data`` went to the agent and was read for usage: the error event
        that ends the stream here, or None to go on."""
        if not data.endswith(_ENDS) or not meter.counts:
            return None
        why = self.gate.refusal(self.role, (meter.model or self.model, meter.counts))
        if why is None:
            return None
        self.said(why)
        return error_event(self.api, f"{why} This answer was cut where it crossed the budget.")
