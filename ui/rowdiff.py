"""Where two renderings of one screen row differ.

A row is ``(bytes, attribute runs)``: UTF-8 text and ``(attribute, byte
count)`` pairs, the form the deck draws.  A keystroke's echo changes a few
columns of a row that is as wide as the client's terminal (the typed pane,
its neighbours, the sidebar); writing only the columns that changed keeps
the frame a few bytes long, for the deck, the attach client and the user's
terminal alike.
"""

from __future__ import annotations

from typing import Any

from choragos.ui.pane import Line, bytes_width


def changed_span(old: Line, new: Line) -> tuple[int, int, int]:
    """``(start, end, column)``: the bytes ``new[start:end]``, written from
    screen column ``column``, turn a terminal showing ``old`` into one
    showing ``new`` (both rows are as wide as the screen).  Equal rows give
    ``start == end``.

    The range starts and ends on whole characters, and takes in the
    combining marks that follow its last one (a terminal drops a cell's
    marks when the cell is written); a mark of ``old`` that changes or goes
    has its whole cell written again.  A new mark at its start needs
    nothing more: a terminal adds it to the cell before the cursor.
    """
    old_raw, old_runs = old
    raw, runs = new
    size = len(raw)
    # An echo changes text, seldom attributes: equal runs are one C compare.
    same_runs = old_runs == runs
    start = _common_prefix(old_raw, raw)
    if not same_runs:
        start = min(start, _attr_prefix(old_runs, runs))
    if start >= size and len(old_raw) == size:
        return size, size, 0
    room = min(len(old_raw), size) - start  # the suffix may not reach into the prefix
    tail = min(_common_suffix(old_raw, raw), max(room, 0))
    if not same_runs:
        tail = min(tail, _attr_prefix(old_runs[::-1], runs[::-1]))
    end = size - tail
    start = _char_start(raw, start)
    while 0 < start < len(old_raw) and _zero_width(old_raw, start):
        start = _char_start(raw, start - 1)  # a mark goes: its cell is written again
    end = _char_end(raw, end)
    while end < size and _zero_width(raw, end):
        end = _char_end(raw, end + 1)
    return start, max(end, start), bytes_width(raw[:start])


def _char_start(raw: bytes, i: int) -> int:
    """``i`` moved back to the first byte of the UTF-8 character it is in."""
    while 0 < i < len(raw) and 0x80 <= raw[i] < 0xC0:
        i -= 1
    return i


def _char_end(raw: bytes, i: int) -> int:
    """``i`` moved on past the UTF-8 character it is in the middle of."""
    while 0 < i < len(raw) and 0x80 <= raw[i] < 0xC0:
        i += 1
    return i


def _zero_width(raw: bytes, i: int) -> bool:
    """The character starting at byte ``i`` takes no column (a combining mark)."""
    if raw[i] < 0x80:
        return False
    return bytes_width(raw[i:_char_end(raw, i + 1)]) == 0


def runs_between(runs: list[tuple[Any, int]], start: int, end: int) -> list[tuple[Any, int]]:
    """The attribute runs covering bytes ``[start, end)``, cut to fit."""
    out = []
    pos = 0
    for attr, size in runs:
        lo, hi = max(pos, start), min(pos + size, end)
        if lo < hi:
            out.append((attr, hi - lo))
        pos += size
        if pos >= end:
            break
    return out


def _common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share.  The two read as one
    big-endian number each: their XOR's highest bit is in the first byte
    that differs (a few C calls, where a loop over bytes would be Python)."""
    n = min(len(a), len(b))
    differ = int.from_bytes(a[:n], "big") ^ int.from_bytes(b[:n], "big")
    return n - (differ.bit_length() + 7) // 8


def _common_suffix(a: bytes, b: bytes) -> int:
    """How many trailing bytes ``a`` and ``b`` share (as above, little-endian)."""
    n = min(len(a), len(b))
    if not n:
        return 0
    differ = int.from_bytes(a[-n:], "little") ^ int.from_bytes(b[-n:], "little")
    return n - (differ.bit_length() + 7) // 8


def _attr_prefix(a: list[tuple[Any, int]], b: list[tuple[Any, int]]) -> int:
    """How many leading bytes have the same attribute in both run lists."""
    i = j = pos = left_a = left_b = 0
    attr_a = attr_b = None
    while True:
        if not left_a:
            if i == len(a):
                return pos
            attr_a, left_a = a[i]
            i += 1
            continue
        if not left_b:
            if j == len(b):
                return pos
            attr_b, left_b = b[j]
            j += 1
            continue
        if attr_a != attr_b:
            return pos
        step = min(left_a, left_b)
        pos += step
        left_a -= step
        left_b -= step
