"""What the web view reads off a pane: the answers a question offers, and news as SSE."""

from __future__ import annotations

import json

from choragos.roles.rolestatus import RoleStatus
from choragos.session import news
from choragos.session.news import RoleView
from choragos.web.news import as_event, frame
from choragos.web.screen import answers


def test_a_numbered_menu_offers_its_options_by_digit() -> None:
    screen = ["Do you want to proceed?", "❯ 1. Yes", "  2. Yes, and don't ask again",
              "  3. No, and tell Claude what to do differently (esc)", ""]
    assert answers(screen) == [
        {"label": "1. Yes", "text": "1"},
        {"label": "2. Yes, and don't ask again", "text": "2"},
        {"label": "3. No, and tell Claude what to do differently (esc)", "text": "3"}]
    bordered = ["│ Apply this change?            │", "│ ● 1. Allow once               │",
                "│   2. Allow always             │"]
    assert [a["text"] for a in answers(bordered)] == ["1", "2"]


def test_a_yes_no_prompt_offers_its_letters_and_plain_text_offers_nothing() -> None:
    assert answers(["you said: hi", "Do you want to proceed? (y/n) "]) == [
        {"label": "y", "text": "y"}, {"label": "n", "text": "n"}]
    assert answers(["Overwrite? [yes/no]"]) == [{"label": "yes", "text": "y"},
                                                 {"label": "no", "text": "n"}]
    assert answers(["1. a numbered list in a reply", "> "]) == []


def test_news_becomes_one_sse_frame_each() -> None:
    view = RoleView("coder", RoleStatus.WAITING, pid=7)
    kind, data = as_event(news.RoleChanged(view))
    assert kind == "role" and data["state"] == "waiting"
    text = frame(*as_event(news.GateClosed("T3")))
    assert text.startswith("event: gate-closed\ndata: ") and text.endswith("\n\n")
    assert json.loads(text.split("data: ", 1)[1]) == {"id": "T3"}
