"""Counts in words: ``1 role``, ``2 roles``, never ``1 roles`` or ``role(s)``."""

from __future__ import annotations

# Words whose plural is not the word plus "s".
_IRREGULAR = {"directory": "directories", "fix": "fixes", "entry": "entries"}


def plural(words: str, n: int) -> str:
    """``words`` (the last one the noun) as ``n`` of it would be called."""
    if n == 1:
        return words
    head, _, noun = words.rpartition(" ")
    noun = _IRREGULAR.get(noun, noun + "s")
    return f"{head} {noun}" if head else noun


def counted(n: int, word: str) -> str:
    """``n`` and ``word`` agreeing: ``counted(1, "role")`` is ``1 role``."""
    return f"{n} {plural(word, n)}"
