"""The exact sentences for a bad role name or an escaping path: they reach the operator."""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.control.paths import check_role_name, confine


@pytest.mark.parametrize(("name", "message"), [
    (3, "a role name must be a string, not int"),
    ("a b", "bad role name 'a b': use 1 to 32 letters, digits, '-' or '_'"),
    ("x" * 41, f"bad role name {'x' * 40!r}...: use 1 to 32 letters, digits, '-' or '_'"),
    ("y" * 40 + "!", f"bad role name {'y' * 40!r}...: use 1 to 32 letters, digits, '-' or '_'"),
    ("z" * 33, f"bad role name {'z' * 33!r}: use 1 to 32 letters, digits, '-' or '_'"),
    ("z" * 40, f"bad role name {'z' * 40!r}: use 1 to 32 letters, digits, '-' or '_'"),
])
def test_bad_role_names_are_shown_short(name, message):
    assert check_role_name(name) == message


def test_a_32_character_name_is_fine():
    assert check_role_name("A-_9" * 8) is None


def test_an_escape_names_the_path_where_it_leads_and_the_root(tmp_path: Path):
    root = tmp_path.resolve()
    with pytest.raises(ValueError) as refused:
        confine("../x", root)
    assert str(refused.value) == f"../x resolves to {root.parent / 'x'}, outside {root}"
