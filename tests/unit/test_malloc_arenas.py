"""The server asks glibc for one malloc arena (its threads take turns on
the interpreter's lock, and each extra arena keeps what it grew to)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from choragos.mallocarenas import one_arena
from tests.unit.test_server_imports import COUNT_PROCESSES


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="a glibc setting")
def test_glibc_takes_the_setting() -> None:
    # In a child: the setting is for the whole process.
    code = "from choragos.mallocarenas import one_arena; print(one_arena())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "True"


def test_without_glibc_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_libc(_name: object) -> object:
        raise OSError("no C library by that name")

    monkeypatch.setattr("ctypes.CDLL", no_libc)
    assert one_arena() is False


def test_asking_starts_no_process() -> None:
    """ctypes.util.find_library runs ``ldconfig -p``: a process forked from
    the server on its way to the first frame."""
    code = COUNT_PROCESSES + """
import json
from choragos.mallocarenas import one_arena
from choragos.gitstore.treewatch import _libc
one_arena()
_libc()
print(json.dumps(started))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == "[]"
