"""The echo check on a real emulated screen: typed text that ends at the
row's last column (the terminal's pending-wrap state) or runs onto further
rows is seen in the input."""

from __future__ import annotations

from choragos.agents.screenstatus import input_pending
from choragos.terminal.emulator import Terminal

PROMPT = "agent> "


def _typed(cols: int, text: str) -> Terminal:
    """A line editor's screen after ``text`` was echoed behind its prompt."""
    term = Terminal(cols, 6)
    term.feed(b"fixture agent ready\r\n" + PROMPT.encode())
    term.feed(text.encode())
    return term


def _pending(term: Terminal, text: str) -> bool:
    return input_pending(term.display(), text, cursor=term.typed_end)


def test_a_row_filled_to_its_last_column_is_pending():
    text = "A worker reports: [T100 from coder] done"
    term = _typed(len(PROMPT) + len(text), text)
    assert term.cursor == (term.cols - 1, 1)  # the cursor stays on the last column...
    assert term.typed_end == (term.cols, 1)  # ...with the wrap pending
    assert _pending(term, text)


def test_the_cursor_alone_cuts_the_last_character_off():
    """What the check read before: the clamped cursor misses the row's end."""
    text = "A worker reports: [T100 from coder] done"
    term = _typed(len(PROMPT) + len(text), text)
    assert not input_pending(term.display(), text, cursor=term.cursor)


def test_text_wrapped_across_rows_is_pending_at_every_width():
    """Every width from the one where it fills two rows exactly to one row
    and a bit: the text ends mid-row, at a row's end, or wraps at a space."""
    text = "A worker reports: [T100 from coder] finished T100, report in the usual place"
    total = len(PROMPT) + len(text)
    for cols in range(total // 3, total):
        assert _pending(_typed(cols, text), text), f"{cols} columns"


def test_a_full_row_with_other_text_is_not_pending():
    text = "A worker reports: [T100 from coder] done"
    term = _typed(len(PROMPT) + len(text), text[:-1] + "X")
    assert not _pending(term, text)


def test_a_full_row_after_the_text_was_sent_is_not_pending():
    text = "A worker reports: [T100 from coder] done"
    term = _typed(len(PROMPT) + len(text), text)
    term.feed(f"\r\nyou said: {text}\r\n{PROMPT}".encode())
    assert term.typed_end[0] == len(PROMPT)
    assert not _pending(term, text)
