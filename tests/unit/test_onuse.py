"""Patterns compiled on first use (choragos/onuse.py)."""

from __future__ import annotations

import re

import pytest

from choragos import onuse


def test_a_pattern_is_compiled_on_its_first_call_and_the_same_after() -> None:
    words = onuse.pattern(r"[a-z]+ (\d+)", re.IGNORECASE)
    first = words()
    assert first is words()  # compiled once
    assert (first.pattern, first.flags & re.IGNORECASE) == (r"[a-z]+ (\d+)", re.IGNORECASE)
    assert first.fullmatch("Task 12").group(1) == "12"
    assert onuse.pattern(rb"T([0-9]+)")().findall(b"T1 T22") == [b"1", b"22"]


def test_a_bad_pattern_fails_when_first_used() -> None:
    broken = onuse.pattern(r"(unclosed")  # made without a complaint
    with pytest.raises(re.error, match="missing \\)"):
        broken()
