"""The notifier against a real HTTP endpoint that redirects, fails, then
answers: nothing is called sent that did not arrive, and what did not go is
sent later with what came meanwhile (the actor's handlers, driven by hand
with a clock and a timer list; the socket is real)."""

from __future__ import annotations

import http.server
import json
import threading
from typing import ClassVar

import pytest

from choragos.actors.notifier import Flush, NotifierActor, NotifyState
from choragos.config.model import NotifySettings
from choragos.web.notify import RETRY_FIRST, Alert


class _Endpoint(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []  # the status of each POST in turn; 200 once used up
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:  # http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        code = self.answers.pop(0) if self.answers else 200
        if code == 200:
            self.bodies.append(json.loads(body))
        self.send_response(code)
        if code == 302:
            self.send_header("Location", "/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # a followed redirect lands here
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                              daemon=True)
    thread.start()
    _Endpoint.answers, _Endpoint.bodies = [302, 500], []
    yield f"http://127.0.0.1:{server.server_port}/hook"
    server.shutdown()
    server.server_close()
    thread.join(5)


class _Timers:
    def __init__(self) -> None:
        self.set: list[float] = []

    def after(self, delay: float, target: object, message: object) -> None:
        self.set.append(delay)


def test_a_redirect_or_a_500_is_no_message_sent_and_it_goes_later(endpoint):
    now = [1000.0]
    events: list[tuple[str, dict]] = []
    state = NotifyState(NotifySettings(url=endpoint, kind="webhook", every=20), lambda: "",
                        lambda: None, lambda name, **f: events.append((name, f)))
    timers = _Timers()
    actor = NotifierActor(state, timers, me=None, clock=lambda: now[0])
    died = Alert("on_exit", "coder", "", "exit status 1")
    actor.handle(died)  # the first goes at once: redirected (once used to count as sent)
    assert events[-1][0] == "notify failed" and "redirects to" in events[-1][1]["reason"]
    assert timers.set == [RETRY_FIRST] and state.sent == 0
    now[0] += 5
    gate = Alert("on_gate", "coder", "T2", "ship")
    actor.handle(gate)  # held for the retry
    now[0] += RETRY_FIRST
    actor.handle(Flush())  # answered 500: held again, twice as long
    assert events[-1][0] == "notify failed" and events[-1][1]["retry_in"] == 2 * RETRY_FIRST
    now[0] += 2 * RETRY_FIRST
    actor.handle(Flush())
    assert events[-1] == ("notified", {"items": 2, "hooks": ["on_exit", "on_gate"]})
    [body] = _Endpoint.bodies
    assert [(i["hook"], i["role"]) for i in body["items"]] == [("on_exit", "coder"),
                                                                ("on_gate", "coder")]
    assert state.coalescer.failures == 0 and state.sent == 1
