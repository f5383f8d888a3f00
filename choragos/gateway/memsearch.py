"""Searching a long piece of a stream for a short needle at the C library's speed.

Every byte of a streamed answer is searched for usage on its way past the
gateway, and CPython's own search (``needle in data``) runs at about 2 GB/s
on a stream's text: half the gateway's CPU per byte relayed.  The C
library's ``memmem`` (glibc's skips by pairs of bytes) runs at 4-10 GB/s
on the same text, so a piece of :data:`LONG` bytes or more is searched with
it, reached through ctypes as the rest of choragos reaches the C library.
A shorter piece is searched by Python (a foreign call costs more than the
search there), and so is every piece where ctypes or ``memmem`` is missing:
the answer is the same, only the speed differs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

LONG = 8192  # from this length a piece is searched with memmem (its call costs ~1 µs)

Buffer = bytes | bytearray


def _memmem() -> Callable[..., int | None] | None:
    try:
        # The process's own symbols hold the C library's (glibc, musl, macOS's
        # libSystem): find_library would run `ldconfig -p`, a process of its own.
        memmem = ctypes.CDLL(None).memmem
    except (OSError, AttributeError, TypeError):
        return None
    memmem.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
    memmem.restype = ctypes.c_void_p
    return memmem


_MEMMEM = _memmem()


def _address(buf: Buffer) -> int:
    """Where ``buf``'s bytes are in memory (it must be at least one byte long)."""
    if isinstance(buf, bytes):
        return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value or 0
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def find(buf: Buffer, needle: bytes, start: int = 0, end: int | None = None,
         memmem: Callable[..., int | None] | None = _MEMMEM) -> int:
    """The first index of ``needle`` in ``buf[start:end]`` (indices of ``buf``), or -1:
    ``buf.find(needle, start, end)``, faster on long pieces."""
    end = len(buf) if end is None else min(end, len(buf))
    if memmem is None or end - start < LONG or start < 0 or not needle:
        return buf.find(needle, start, end)
    base = _address(buf)
    found = memmem(base + start, end - start, needle, len(needle))
    return -1 if found is None else found - base
