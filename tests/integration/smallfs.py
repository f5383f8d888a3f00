"""A small real file system for the full-disk tests: a tmpfs mounted for
the test (root only; the test is skipped, saying so, where mounting is not
permitted), and a way to fill it."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def small_fs(short_tmp: Path) -> Iterator[Path]:
    mount = short_tmp / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path, leave: int = 0) -> int:
    """Write ``path`` until the file system is full, then give ``leave``
    bytes back; the bytes ``path`` holds."""
    written = 0
    block = b"\0" * (1 << 16)
    with open(path, "wb", buffering=0) as out:
        while True:
            try:
                written += out.write(block)
            except OSError:
                break
        for size in (4096, 512, 1):  # the last crumbs, so even a small write fails
            with contextlib.suppress(OSError):
                while True:
                    written += out.write(block[:size])
        if leave:
            written = max(0, written - leave)
            out.truncate(written)
    return written
