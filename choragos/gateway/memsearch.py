"""Searching a long piece of a stream for a short needle at the C library's speed.

Every byte of a streamed answer is searched for usage on its way past the
gateway, and CPython's own search (``needle in data``) runs at about 2 GB/s
on a stream's text: half the gateway's CPU per byte relayed.  The C
library is faster: glibc's ``memmem`` (it skips by pairs of bytes) at 4-10
GB/s, its ``strstr`` (vector instructions) at 40-50 GB/s.  So a piece of
:data:`LONG` bytes or more is searched there, reached through ctypes as
the rest of choragos reaches the C library:

- with ``strstr`` when the piece holds no NUL byte (a stream's text never
  does; ``memchr`` tells at once) and can be ended with one: it runs to the
  end of its buffer (CPython keeps a NUL after every ``bytes`` and
  ``bytearray``), or it is in a ``bytearray`` whose byte after the piece is
  set to NUL for the call and put back;
- with ``memmem`` otherwise.

A shorter piece is searched by Python (a foreign call costs more than the
search there), and so is every piece where ctypes or these functions are
missing: the answer is the same, only the speed differs.

The buffer a stream's reads land in is searched read after read:
:func:`finder` binds the search to it once, its address taken (and the
buffer pinned) once a stream instead of once a read.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

LONG = 8192  # from this length a piece is searched by the C library (a call costs ~1 µs)

Buffer = bytes | bytearray
Search = Callable[..., int | None]


def _libc() -> tuple[Search, Search] | None:
    try:
        # The process's own symbols hold the C library's (glibc, musl, macOS's
        # libSystem): find_library would run `ldconfig -p`, a process of its own.
        libc = ctypes.CDLL(None)
        memmem, strstr = libc.memmem, libc.strstr
    except (OSError, AttributeError, TypeError):
        return None
    memmem.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
    memmem.restype = ctypes.c_void_p
    strstr.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
    strstr.restype = ctypes.c_void_p
    return memmem, strstr


_LIBC = _libc()


def _address(buf: Buffer) -> int:
    """Where ``buf``'s bytes are in memory (it must be at least one byte long)."""
    if isinstance(buf, bytes):
        return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value or 0
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def find(buf: Buffer, needle: bytes, start: int = 0, end: int | None = None,
         libc: tuple[Search, Search] | None = _LIBC) -> int:
    """The first index of ``needle`` in ``buf[start:end]`` (indices of ``buf``), or -1:
    ``buf.find(needle, start, end)``, faster on long pieces."""
    end = len(buf) if end is None else min(end, len(buf))
    if libc is None or end - start < LONG or start < 0 or not needle or 0 in needle:
        return buf.find(needle, start, end)
    return _search(buf, _address(buf), needle, start, end, libc)


def finder(buf: bytearray, needle: bytes,
           libc: tuple[Search, Search] | None = _LIBC) -> Callable[[int, int], int]:
    """``find(buf, needle, start, end)`` for one buffer searched read after read
    (``0 <= start <= end <= len(buf)``): its address is taken once, not once a
    read, and the buffer is held where it is (it cannot be resized) while the
    finder lives."""
    if libc is None or not buf or not needle or 0 in needle:
        return lambda start, end: buf.find(needle, start, end)
    pin = ctypes.c_char.from_buffer(buf)  # an export of buf: it can neither move nor resize
    base = ctypes.addressof(pin)

    def search(start: int, end: int, _pin: object = pin) -> int:  # the pin lives as long
        if end - start < LONG:
            return buf.find(needle, start, end)
        return _search(buf, base, needle, start, end, libc)

    return search


def _search(buf: Buffer, base: int, needle: bytes, start: int, end: int,
            libc: tuple[Search, Search]) -> int:
    """The C library's search of ``buf[start:end]`` (at ``base`` in memory)."""
    memmem, strstr = libc
    if buf.find(b"\0", start, end) >= 0:  # strstr would stop there
        found = memmem(base + start, end - start, needle, len(needle))
    elif end == len(buf):
        found = strstr(base + start, needle)
    elif isinstance(buf, bytearray):
        after, buf[end] = buf[end], 0
        try:
            found = strstr(base + start, needle)
        finally:
            buf[end] = after
    else:
        found = memmem(base + start, end - start, needle, len(needle))
    return -1 if found is None else found - base
