"""The exact words of an invalid env pattern's error: they reach the operator."""

from __future__ import annotations

import pytest

from choragos.config.envpolicy import validate_pattern


@pytest.mark.parametrize(("pattern", "message"), [
    (7, "expected a variable name as a string, got 7"),
    ("*", 'a bare "*" would match every variable; list names or PREFIX_* patterns'),
    ("A*B*", '"A*B*": only one "*", at the end, is allowed (prefix match, e.g. GOOGLE_*)'),
    ("FOO-BAR", '"FOO-BAR" is not a variable name or PREFIX_* pattern '
                "(letters, digits and _, not starting with a digit)"),
    ("Ä\x1b", '"Ä\\u001b" is not a variable name or PREFIX_* pattern '
              "(letters, digits and _, not starting with a digit)"),
])
def test_invalid_patterns_are_named_escaped(pattern, message):
    assert validate_pattern(pattern) == message


@pytest.mark.parametrize("pattern", ["A", "_", "a1", "GOOGLE_*", "X*"])
def test_valid_patterns(pattern):
    assert validate_pattern(pattern) is None
