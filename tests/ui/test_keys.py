"""Key tokenizing, the keymap from [keys], and what agents are sent."""

from __future__ import annotations

import pytest

from choragos.config.model import KEY_ACTIONS, Keys
from choragos.ui.keys import (
    PASTE_BEGIN,
    PASTE_END,
    PASTE_TEXT,
    Keymap,
    Token,
    Tokenizer,
    mouse_to_agent,
    text_of,
    to_agent,
    urwid_name,
)


def tokens(*chunks: bytes, flush: bool = True) -> list[Token]:
    tokenizer = Tokenizer()
    out = []
    for chunk in chunks:
        out += tokenizer.feed(chunk)
    if flush:
        out += tokenizer.flush()
    return out


def test_every_key_keeps_its_exact_bytes():
    stream = b"ab\x02\x1b[A\x1bOB\x1b[5~\x1b[15~\x1bOP\x1b[1;5C\xc3\xa9\x7f\r\t\x1b[Z\x1bx"
    got = tokens(stream)
    assert b"".join(t.raw for t in got) == stream
    assert [t.key for t in got] == ["a", "b", "ctrl b", "up", "down", "page up", "f5", "f1",
                                    "ctrl right", "é", "backspace", "enter", "tab",
                                    "shift tab", "meta x"]


def test_a_sequence_split_across_reads_waits_for_the_rest():
    tokenizer = Tokenizer()
    assert tokenizer.feed(b"x\x1b[") == [Token(b"x", ("x",))]
    assert tokenizer.pending
    assert tokenizer.feed(b"A") == [Token(b"\x1b[A", ("up",))]
    assert not tokenizer.pending


def test_a_lone_escape_is_the_escape_key_after_the_wait():
    tokenizer = Tokenizer()
    assert tokenizer.feed(b"\x1b") == []
    assert tokenizer.flush() == [Token(b"\x1b", ("esc",))]


def test_utf8_split_across_reads():
    assert [t.key for t in tokens(b"\xe4\xb8", b"\xad")] == ["中"]


def test_mouse_events_are_decoded():
    (token,) = tokens(b"\x1b[<64;10;5M")
    assert token.key == ("mouse press", 4, 9, 4)
    (token,) = tokens(b"\x1b[<0;3;2m")
    assert token.key == ("mouse release", 1, 2, 1)


def test_paste_content_is_never_interpreted():
    got = tokens(PASTE_BEGIN + b"hi \x02 there\r\x1b[A" + PASTE_END + b"q")
    assert [t.key for t in got] == ["begin paste", PASTE_TEXT, "end paste", "q"]
    assert got[1].raw == b"hi \x02 there\r\x1b[A"


def test_a_paste_split_anywhere_comes_out_whole():
    payload = PASTE_BEGIN + b"abc" + PASTE_END + b"z"
    for cut in range(1, len(payload)):
        got = tokens(payload[:cut], payload[cut:])
        text = b"".join(t.raw for t in got if t.key == PASTE_TEXT)
        assert text == b"abc", cut
        assert [t.key for t in got if t.key != PASTE_TEXT] == ["begin paste", "end paste", "z"]


def test_unfinished_paste_keeps_a_possible_end_marker_back():
    tokenizer = Tokenizer()
    got = tokenizer.feed(PASTE_BEGIN + b"abc\x1b[20")
    assert [t.raw for t in got] == [PASTE_BEGIN, b"abc"]
    assert tokenizer.in_paste and tokenizer.pending
    assert [t.key for t in tokenizer.feed(b"1~")] == ["end paste"]


@pytest.mark.parametrize(("raw", "app", "sent"), [
    (b"\x1b[A", False, b"\x1b[A"), (b"\x1b[A", True, b"\x1bOA"),
    (b"\x1bOB", False, b"\x1b[B"), (b"\x1bOD", True, b"\x1bOD"),
    (b"\x1b[H", True, b"\x1bOH"), (b"\x1b[1;5A", True, b"\x1b[1;5A"),
    (b"\x1b[5~", True, b"\x1b[5~"), (b"\x03", True, b"\x03"), (b"\x1bOP", True, b"\x1bOP"),
])
def test_cursor_keys_follow_the_agents_mode(raw, app, sent):
    (token,) = tokens(raw)
    assert to_agent(token, application_cursor=app, bracketed_paste=False) == sent


def test_paste_markers_reach_only_agents_that_asked_for_them():
    got = tokens(PASTE_BEGIN + b"a\x1bb" + PASTE_END)
    plain = b"".join(to_agent(t, application_cursor=False, bracketed_paste=False) for t in got)
    bracketed = b"".join(to_agent(t, application_cursor=False, bracketed_paste=True)
                         for t in got)
    assert plain == b"a\x1bb"
    assert bracketed == PASTE_BEGIN + b"ab" + PASTE_END  # no ESC can end it early


def test_mouse_and_reports_are_not_typed_into_agents():
    for raw in (b"\x1b[<0;1;1M", b"\x1b[I", b"\x1b[?2004;1$y"):
        for token in tokens(raw):
            assert to_agent(token, application_cursor=False, bracketed_paste=True) == b""


def test_mouse_is_re_encoded_for_the_pane():
    assert mouse_to_agent("mouse press", 1, 4, 2, mode=1000, sgr=True) == b"\x1b[<0;5;3M"
    assert mouse_to_agent("mouse release", 1, 4, 2, mode=1000, sgr=True) == b"\x1b[<0;5;3m"
    assert mouse_to_agent("mouse press", 4, 0, 0, mode=1000, sgr=False) == b"\x1b[M`!!"
    assert mouse_to_agent("mouse press", 1, 0, 0, mode=0, sgr=True) == b""
    assert mouse_to_agent("mouse drag", 1, 0, 0, mode=1000, sgr=True) == b""
    assert mouse_to_agent("ctrl mouse press", 1, 0, 0, mode=1002, sgr=True) == b"\x1b[<16;1;1M"


def test_text_of_tokens():
    assert text_of(Token(b"a", ("a",))) == "a"
    assert text_of(Token(b"x\ny", (PASTE_TEXT,))) == "x y"
    assert text_of(Token(b"\x1b[A", ("up",))) == ""


@pytest.mark.parametrize(("spelling", "name"), [
    ("v", "v"), ("R", "R"), ("-", "-"), ("ctrl+b", "ctrl b"), ("tab", "tab"),
    ("shift+tab", "shift tab"), ("pgup", "page up"), ("pgdn", "page down"), ("space", " "),
    ("f5", "f5"), ("ctrl+h", "backspace"), ("esc", "esc"),
])
def test_config_spellings_become_urwid_names(spelling, name):
    assert urwid_name(spelling) == name


def test_the_default_keymap_binds_every_action():
    keymap = Keymap.from_config(Keys())
    assert keymap.prefix == "ctrl b"
    assert sorted(keymap.actions.values()) == sorted(KEY_ACTIONS)
    assert keymap.action("v") == "split_vertical" and keymap.action("shift tab") == \
        "cycle_pane_previous"
    assert keymap.action(("mouse press", 1, 0, 0)) is None
    assert keymap.describe("zoom") == "C-b z"


def test_a_rebound_keymap():
    keymap = Keymap.from_config(Keys(prefix="ctrl+a", zoom="Z", split_vertical="pgdn"))
    assert keymap.prefix == "ctrl a"
    assert keymap.action("Z") == "zoom" and keymap.action("z") is None
    assert keymap.action("page down") == "split_vertical"
    assert keymap.describe("split_vertical") == "C-a PgDn"


def test_tokens_typed_through_the_prefix_reach_the_agent_unchanged():
    """C-b C-b sends C-b: the raw byte, whatever urwid calls it."""
    (token,) = tokens(b"\x02")
    assert to_agent(token, application_cursor=False, bracketed_paste=False) == b"\x02"
