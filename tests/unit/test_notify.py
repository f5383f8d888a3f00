"""The notifier's policy, by a table of alerts and times (no actor, no clock)."""

from __future__ import annotations

from choragos.web.notify import Alert, Coalescer, compose, request

GATE = Alert("on_gate", "coder", "T1", "ship it\nand more")
ASK = Alert("on_input", "coder")


def test_the_first_goes_at_once_then_one_per_period_with_all_that_came() -> None:
    policy = Coalescer(every=20)
    assert policy.add(GATE, now=100) == 100
    assert policy.take(100) == [GATE]
    assert policy.add(ASK, now=105) == 120  # held for the period
    assert policy.take(110) == []
    done = Alert("on_done", "lead", "", "3 done")
    policy.add(done, now=111)
    policy.add(ASK, now=112)  # the same alert again is one line
    assert policy.take(120) == [ASK, done]
    assert policy.take(150) == []
    assert policy.add(GATE, now=200) == 200  # a quiet period later: at once again


def test_a_message_names_the_item_and_carries_no_token_unless_given() -> None:
    message = compose([GATE, ASK], "http://127.0.0.1:8787", None)
    assert message.title == "choragos: 2 things need you"
    assert message.body == "gate: coder T1 — ship it\nquestion: coder"
    assert message.link == "http://127.0.0.1:8787/#gate-T1"
    assert compose([ASK], "https://x.example/", "t0k").link == (
        "https://x.example/?token=t0k#question-coder")
    assert compose([ASK], "", "t0k").link == ""  # no page to link to yet


def test_ntfy_headers_survive_text_beyond_latin_1() -> None:
    sent = request("http://push.example/topic", "ntfy",
                   compose([Alert("on_budget", "kodiér")], "", None))
    assert sent.get_header("Title").startswith("choragos")
    assert sent.data.decode() == "budget: kodiér"
    wide = request("http://push.example/topic", "ntfy",
                   compose([Alert("on_gate", "c", "T1")], "", None))
    assert "Click" not in wide.headers
