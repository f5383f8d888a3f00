"""The gateway's search of long pieces (choragos.gateway.memsearch): the C library's
strstr or memmem where they are, Python's own search elsewhere, the same answer
either way."""

from __future__ import annotations

import random
import sys

import pytest

from choragos.gateway import memsearch
from choragos.gateway.memsearch import LONG, find, finder

pytestmark = pytest.mark.timeout(30)


def _cases(seed: int = 43):
    rng = random.Random(seed)
    for _ in range(400):
        size = rng.choice([0, 1, 5, LONG - 1, LONG, LONG + 7, 3 * LONG])
        # Few letters, so the needle is found at all sorts of places, or not at all;
        # now and then a NUL, where strstr would stop.
        letters = b"usage\"x\n" + (b"\0" if rng.random() < 0.3 else b"")
        data = bytes(rng.choice(letters) for _ in range(size))
        needle = rng.choice([b"usage", b"u", b'"usage"', b"xx\nx", b"a\0"])
        start = rng.randrange(0, size + 2)
        end = rng.choice([None, rng.randrange(0, size + 2)])
        yield data, needle, start, end


def test_the_answer_is_bytes_find_with_the_c_library_and_without():
    for data, needle, start, end in _cases():
        expected = data.find(needle, start, end)
        for buf in (data, bytearray(data)):
            assert find(buf, needle, start, end) == expected, (len(data), needle, start, end)
            assert find(buf, needle, start, end, libc=None) == expected
            assert buf == data  # the byte after a piece, set to NUL for strstr, is back


def test_a_finder_bound_to_one_buffer_answers_as_bytes_find_and_holds_the_buffer():
    for data, needle, start, end in _cases(44):
        if not data:
            continue
        buf = bytearray(data)
        end = len(data) if end is None else min(end, len(data))
        start = min(start, end)
        for search in (finder(buf, needle), finder(buf, needle, libc=None)):
            assert search(start, end) == data.find(needle, start, end), (len(data), needle)
            assert buf == data
    buf = bytearray(b"x" * LONG + b"usage")
    search = finder(buf, b"usage")
    if memsearch._LIBC is not None:  # its address is taken once: the buffer stays put
        with pytest.raises(BufferError):
            buf.extend(b"more")
    buf[:5] = b"usage"  # its bytes change read after read; the search sees them
    assert search(0, len(buf)) == 0 and search(1, len(buf)) == LONG
    del search
    buf.extend(b"more")  # let go with the finder


class _Counted:
    """The C library's two searches, counting the calls and what each was given."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def libc(self):
        memmem, strstr = memsearch._LIBC

        def counted_memmem(*args):
            self.calls.append("memmem")
            return memmem(*args)

        def counted_strstr(*args):
            self.calls.append("strstr")
            return strstr(*args)

        return counted_memmem, counted_strstr


@pytest.mark.skipif(memsearch._LIBC is None, reason="no strstr and memmem here")
def test_a_long_piece_goes_to_the_c_library_once_and_a_short_one_never():
    counted = _Counted()
    libc = counted.libc()
    data = bytearray(b"x" * (4 * LONG) + b"usage" + b"y" * 10)
    assert find(data, b"usage", 1, libc=libc) == 4 * LONG  # to the end: its own NUL
    assert find(data, b"usage", 1, len(data) - 3, libc=libc) == 4 * LONG  # a NUL set after
    assert find(bytes(data), b"usage", 1, len(data) - 3, libc=libc) == 4 * LONG  # bytes: memmem
    assert find(data, b"usage", 4 * LONG - 10, libc=libc) == 4 * LONG  # short: Python's
    data[5] = 0
    assert find(data, b"usage", libc=libc) == 4 * LONG  # a NUL inside: memmem
    assert counted.calls == ["strstr", "strstr", "memmem", "memmem"]


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="Linux or macOS")
def test_the_c_librarys_searches_are_found_where_choragos_runs():
    assert memsearch._LIBC is not None
