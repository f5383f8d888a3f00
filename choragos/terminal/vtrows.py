"""Rows kept as text while an agent's TUI redraws them.

An agent CLI redraws its live area line by line: erase the row, then write
it left to right, colour escapes between the pieces.  Such a row never needs
per-cell objects: it stays a :class:`~choragos.terminal.vtcells.TextRow` (text plus
style spans) that grows at its end, and becomes cells only when something
writes into its middle.  The functions here work out the new row; the
screen decides when they apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from choragos.terminal.pytelib import Char
from choragos.terminal.vtcells import BLANK, NARROW, Row, TextRow

Spans = tuple[tuple[int, Char], ...]

# Splits a run of text with colour sequences between its pieces into text,
# SGR parameters, text, ...
SGR_SPLIT = re.compile(r"\x1b\[([0-9;:]*)m")

_new_row = tuple.__new__  # TextRow without the Python-level __new__ namedtuple adds


def text_row(text: str, styles: Spans) -> TextRow:
    """A tail-less TextRow, built without keyword handling."""
    return _new_row(TextRow, (text, "", styles))


def parse_run(run: str, attrs: Char,
              sgr_of: Callable[[Char, str], Char]) -> tuple[str, Spans, Char] | None:
    """A run of text and SGR sequences as (text, spans relative to its start,
    the style it ends with); None when some character does not take exactly
    one cell (the run must then be drawn piece by piece)."""
    parts = SGR_SPLIT.split(run)
    first = parts[0]
    spans: list[tuple[int, Char]] = [(0, attrs)] if first else []
    width = len(first)
    for i in range(1, len(parts), 2):
        attrs = sgr_of(attrs, parts[i])
        piece = parts[i + 1]
        if piece:
            if not spans or spans[-1][1] != attrs:
                spans.append((width, attrs))
            width += len(piece)
    text = "".join(parts[::2])
    if not (text.isascii() or NARROW.fullmatch(text)):
        return None
    return text, tuple(spans), attrs


def appended(row: Row, x: int, text: str, spans: Spans) -> TextRow | None:
    """``row`` with ``text`` written from column ``x`` in the styles of
    ``spans`` (relative to ``x``), when the row is blank or a tail-less
    TextRow (a gap before ``x`` is blank); else None.

    The caller has checked that every character takes one cell and that
    the text fits on the row."""
    if row is None:
        old, styles = "", ()
    elif row.__class__ is TextRow and not row.tail:
        old, styles = row.text, row.styles
    else:
        return None
    length = len(old)
    if x < length:
        return _overwritten(old, styles, x, text, spans)
    if not styles and len(spans) == 1 and spans[0][1] == BLANK:
        return text_row(old + " " * (x - length) + text if x > length else old + text, ())
    out = list(styles) if styles else ([(0, BLANK)] if x else [])
    if x > length:
        if out and out[-1][1] != BLANK:
            out.append((length, BLANK))
        old += " " * (x - length)
    for offset, attrs in spans:
        if not out or out[-1][1] != attrs:
            out.append((x + offset, attrs))
    if len(out) == 1 and out[0][1] == BLANK:
        return text_row(old + text, ())
    return text_row(old + text, tuple(out))


def _overwritten(old: str, styles: Spans, x: int, text: str, spans: Spans) -> TextRow:
    """A TextRow with ``text`` written over it from column ``x`` (a TUI
    rewriting a row in place)."""
    end = x + len(text)
    written = old[:x] + text + old[end:]
    if not styles and len(spans) == 1 and spans[0][1] == BLANK:
        return text_row(written, ())
    every = list(styles) if styles and styles[0][0] == 0 else [(0, BLANK), *styles]
    out = [span for span in every if span[0] < x]
    out += [(x + offset, attrs) for offset, attrs in spans]
    if end < len(old):
        out.append((end, [span for span in every if span[0] <= end][-1][1]))
        out += [span for span in every if span[0] > end]
    merged: list[tuple[int, Char]] = []
    for span in out:
        if not merged or merged[-1][1] != span[1]:
            merged.append(span)
    if len(merged) == 1 and merged[0][1] == BLANK:
        return text_row(written, ())
    return text_row(written, tuple(merged))


def cut_at(row: TextRow, start: int) -> Row:
    """A TextRow erased from ``start`` to its end (and its hidden tail), in
    default colours."""
    text = row.text[:start]
    if not text:
        return None
    styles = tuple(span for span in row.styles if span[0] < start)
    if len(styles) == 1 and styles[0][1] == BLANK:
        styles = ()
    return text_row(text, styles)
