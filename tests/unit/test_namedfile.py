"""A file named by another party (a brief, a report) is read without waiting:
a FIFO there would otherwise hold the core's or the deck's thread."""

from __future__ import annotations

import os

import pytest

from choragos import namedfile
from choragos.ui.deckbase import read_text

pytestmark = pytest.mark.timeout(10)


def test_a_regular_file_is_read_up_to_the_limit(tmp_path):
    path = tmp_path / "brief.md"
    path.write_bytes(b"x" * 100_000)
    assert namedfile.read_regular(path, 70_000) == b"x" * 70_000
    assert namedfile.read_regular(path, 1 << 20) == b"x" * 100_000


@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir], ids=["fifo", "directory"])
def test_anything_else_is_refused_at_once(tmp_path, make):
    path = tmp_path / "brief.md"
    make(path)
    with pytest.raises(OSError):
        namedfile.read_regular(path, 100)
    # The deck's task view says so instead of hanging on it.
    assert read_text(str(path)).startswith(f"(cannot read {path}: ")
