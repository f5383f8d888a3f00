"""Push notifications against a local fake push service: a gate sends one at
once, a burst is merged into the next, the link leads to the item on the
web view, and the token travels only when the config says so."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.harness import role_toml
from tests.integration.webclient import WEB, Web
from tests.loopback import FakeHandler, Loopback


class FakePush:
    """An ntfy-like topic endpoint that records every POST."""

    def __init__(self) -> None:
        got = self.got = []

        class Handler(FakeHandler):
            def do_POST(self) -> None:
                body = self.read_body()
                got.append({"path": self.path, "headers": dict(self.headers),
                            "body": body.decode(), "at": time.monotonic()})
                self.send_response(200)
                self.end_headers()

        self.http = Loopback(Handler)
        self.url = f"{self.http.url}/my-crew"

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def push():
    fake = FakePush()
    yield fake
    fake.close()


def team(url: str, extra: str = "") -> str:
    return (role_toml("orchestrator", start=True) + role_toml("coder", approve=True) + WEB
            + f'[notify]\nurl = "{url}"\nevery = "2s"\n{extra}')


def test_gates_notify_at_once_then_merged_with_a_link_and_no_token(serve, push):
    s = serve(team(push.url))
    s.wait_booted(["coder"])
    web = Web(s)
    s.cli("delegate", "--to", "coder", "--task", "first gate")
    s.wait(lambda: push.got, 10, "the first message")
    first = push.got[0]
    assert first["path"] == "/my-crew"
    assert first["headers"]["Title"] == "choragos: gate"
    assert first["body"] == "gate: coder T1 — first gate"
    assert first["headers"]["Click"] == f"http://{web.addr}/#gate-T1"
    for text in ("second gate", "third gate"):
        s.cli("delegate", "--to", "coder", "--task", text)
    s.wait(lambda: len(push.got) == 2, 10, "the merged message")
    merged = push.got[1]
    assert merged["at"] - first["at"] >= 1.9  # no sooner than [notify] every
    assert merged["headers"]["Title"] == "choragos: 2 things need you"
    assert merged["body"].splitlines() == ["gate: coder T2 — second gate",
                                           "gate: coder T3 — third gate"]
    assert merged["headers"]["Click"].endswith("/#gate-T2")
    for message in push.got:
        assert web.token not in json.dumps(message)
    time.sleep(2.5)  # nothing more was due: nothing more is sent
    assert len(push.got) == 2
    page = web.get("/" + merged["headers"]["Click"].split("/", 3)[3].split("#")[0])
    assert page.status == 200  # the link leads to the page (with the token, as the phone has it)
    sent = [e for e in s.events() if e["event"] == "notified"]
    assert [e["items"] for e in sent] == [1, 2]


def test_a_webhook_gets_json_and_the_token_only_when_asked(serve, push):
    s = serve(team(push.url, 'kind = "webhook"\ntoken_in_link = true\n'
                             'link = "https://crew.example.ts.net"\n'))
    s.wait_booted(["coder"])
    web = Web(s)
    s.cli("delegate", "--to", "coder", "--task", "ship it")
    s.wait(lambda: push.got, 10, "the webhook call")
    body = json.loads(push.got[0]["body"])
    assert push.got[0]["headers"]["Content-Type"] == "application/json"
    assert body["title"] == "choragos: gate"
    assert body["link"] == f"https://crew.example.ts.net/?token={web.token}#gate-T1"
    assert body["items"] == [{"hook": "on_gate", "role": "coder", "part": "", "task_id": "T1",
                              "text": "ship it"}]


def test_a_push_service_that_is_down_is_logged_and_the_session_goes_on(serve, push):
    url = push.url
    push.close()
    s = serve(team(url))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "nobody hears")
    failed = s.wait_event(lambda e: e["event"] == "notify failed", 15, "the failure logged")
    assert failed["items"] == 1 and failed["reason"]
    assert s.board()["T1"]["state"] == "gated"
