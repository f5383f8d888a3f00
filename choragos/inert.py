"""Text from outside shown, never obeyed: every control, escape and bidi
character of a string made visible, for a line printed in a terminal or
written into a page.  Standard library only (the CLI verbs start fast)."""

from __future__ import annotations

# Bidi overrides and isolates can make a line read differently than it is.
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_INERT = {cp: f"\\x{cp:02x}" for cp in (*range(0x20), *range(0x7F, 0xA0))}
_INERT.update({cp: f"\\u{cp:04x}" for cp in _BIDI})
_INERT.update({ord("\t"): "\\t", ord("\n"): "\\n", ord("\r"): "\\r"})


def inert(text: object, tab: str = "\\t") -> str:
    """``text`` with every control, escape and bidi character made visible;
    a tab becomes ``tab`` (a dialog that shows file contents wants spaces)."""
    text = str(text)
    if tab != "\\t":
        text = text.replace("\t", tab)
    return text.translate(_INERT)
