"""Counts agree with their nouns."""

from choragos.plural import counted


def test_one_is_singular_and_any_other_count_plural():
    assert counted(1, "role") == "1 role"
    assert [counted(n, "role") for n in (0, 2, 5)] == ["0 roles", "2 roles", "5 roles"]


def test_the_last_word_is_the_noun_and_irregular_ones_are_known():
    assert counted(2, "empty directory") == "2 empty directories"
    assert counted(3, "fix") == "3 fixes" and counted(1, "fix round") == "1 fix round"
