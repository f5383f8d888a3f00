"""The notifier's policy, by a table of alerts and times (no actor, no clock)."""

from __future__ import annotations

import json

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


def test_the_deck_given_up_is_told_as_a_part_of_the_session_not_a_role() -> None:
    """A role named ``deck`` and the deck itself, both heard from ``on_exit``:
    the message tells them apart, and links no role's card for the deck."""
    from choragos.actors.notifier import hear

    told: list[Alert] = []

    class Inbox:
        def tell(self, alert: Alert) -> None:
            told.append(alert)

    listener = hear(Inbox())
    listener("on_exit", "deck", "exit status 3", "",
             {"CHORAGOS_EXIT": "exit status 3", "CHORAGOS_EXITED": "role"})
    listener("on_exit", "deck", "the deck stopped: ui failed 6 times", "",
             {"CHORAGOS_EXIT": "given up after repeated failures", "CHORAGOS_EXITED": "part",
              "CHORAGOS_PART": "deck"})
    role, part = told
    assert (role.part, part.part) == ("", "deck")
    assert role.line() == "role stopped: deck — exit status 3"
    assert part.line() == "session part stopped: deck — the deck stopped: ui failed 6 times"
    assert compose([role], "http://h", None).link == "http://h/#role-deck"
    alone = compose([part], "http://h", None)
    assert (alone.title, alone.link) == ("choragos: session part stopped", "http://h/")
    body = json.loads(request("http://push.example/hook", "webhook",
                              compose([role, part], "", None)).data)
    assert [(i["role"], i["part"]) for i in body["items"]] == [("deck", ""), ("deck", "deck")]


def test_a_service_down_for_long_holds_a_bounded_list_and_counts_the_rest() -> None:
    from choragos.web.notify import MAX_HELD, MAX_ITEMS

    policy = Coalescer(every=20)
    for n in range(MAX_HELD + 5):
        policy.add(Alert("on_input", f"r{n}"), now=0)
    batch = policy.take(0)
    assert len(batch) == MAX_HELD and policy.dropped == 5
    assert policy.failed(batch, now=0) == 30 and policy.failed(policy.take(30), 30) == 60
    message = compose(policy.take(90), "", None, policy.dropped)
    assert message.body.splitlines()[-1] == f"… and {MAX_HELD + 5 - MAX_ITEMS} more"
    policy.sent()
    assert (policy.failures, policy.dropped) == (0, 0)


def test_task_text_is_shown_never_obeyed_in_either_shape() -> None:
    """A push client may print to a terminal (ntfy subscribe): an escape in a
    task's text arrives visible, in the text body and in the JSON."""
    hostile = Alert("on_gate", "coder", "T1", "\x1b]0;owned\x07\x1b[2Jship\u202e\nsecond line")
    message = compose([hostile], "", None)
    assert message.body == "gate: coder T1 — \\x1b]0;owned\\x07\\x1b[2Jship\\u202e"
    item = json.loads(request("http://h/x", "webhook", message).data)["items"][0]
    assert "\x1b" not in item["text"] and item["text"].startswith("\\x1b]0;owned")


def test_a_stuck_crew_a_limit_and_an_overdue_task_reach_the_phone() -> None:
    """Left alone overnight, these need a person as much as a gate: they were
    heard by the hooks but never sent."""
    from choragos.actors.notifier import hear

    told: list[Alert] = []

    class Inbox:
        def tell(self, alert: Alert) -> None:
            told.append(alert)

    listener = hear(Inbox())
    listener("on_idle", "lead", "2 open tasks: T1, T2", "", {})
    listener("on_limit", "coder", "usage limit until 03:00", "", {"CHORAGOS_LIMIT": "quota"})
    listener("on_timeout", "coder", "ship it", "T3", {})
    listener("on_timeout_typo", "coder", "", "", {})  # not a hook a person is told of
    assert [(a.line(), a.anchor()) for a in told] == [
        ("crew stuck: lead — 2 open tasks: T1, T2", "board-h"),
        ("provider limit: coder — usage limit until 03:00", "role-coder"),
        ("task overdue: coder T3 — ship it", "role-coder")]
