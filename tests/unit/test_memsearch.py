"""The gateway's search of long pieces (choragos.gateway.memsearch): the C library's
memmem where it is, Python's own search elsewhere, the same answer either way."""

from __future__ import annotations

import random
import sys

import pytest

from choragos.gateway import memsearch
from choragos.gateway.memsearch import LONG, find

pytestmark = pytest.mark.timeout(30)


def _cases(seed: int = 43):
    rng = random.Random(seed)
    for _ in range(300):
        size = rng.choice([0, 1, 5, LONG - 1, LONG, LONG + 7, 3 * LONG])
        # Few letters, so the needle is found at all sorts of places, or not at all.
        data = bytes(rng.choice(b"usage\"x\n") for _ in range(size))
        needle = rng.choice([b"usage", b"u", b'"usage"', b"xx\nx"])
        start = rng.randrange(0, size + 2)
        end = rng.choice([None, rng.randrange(0, size + 2)])
        yield data, needle, start, end


def test_the_answer_is_bytes_find_with_memmem_and_without():
    for data, needle, start, end in _cases():
        expected = data.find(needle, start, end)
        for buf in (data, bytearray(data)):
            assert find(buf, needle, start, end) == expected, (len(data), needle, start, end)
            assert find(buf, needle, start, end, memmem=None) == expected


def test_a_long_piece_goes_to_memmem_once_and_a_short_one_never():
    if memsearch._MEMMEM is None:
        pytest.skip("no memmem in this C library")
    calls: list[int] = []

    def counted(*args: object) -> int | None:
        calls.append(args[1])  # the length searched
        return memsearch._MEMMEM(*args)

    data = bytearray(b"x" * (4 * LONG) + b"usage")
    assert find(data, b"usage", 1, memmem=counted) == 4 * LONG
    assert calls == [len(data) - 1]
    assert find(data, b"usage", 4 * LONG - 10, memmem=counted) == 4 * LONG
    assert calls == [len(data) - 1]  # under LONG bytes: Python's own search


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="Linux or macOS")
def test_the_c_librarys_memmem_is_found_where_choragos_runs():
    assert memsearch._MEMMEM is not None
