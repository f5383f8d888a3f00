"""One malloc arena for the server's threads.

glibc gives a thread its own malloc arena when another holds the main one,
up to eight per core, and an arena keeps the memory it grew to.  A session's
threads (a reader per pane, an actor per role, the deck) take turns on the
interpreter's lock anyway, so the extra arenas buy nothing, and after five
panes flood output they hold about 3 MB of the server's resident memory
that one shared arena does not.  Elsewhere (macOS, musl) nothing changes.
"""

from __future__ import annotations

import ctypes
import logging

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)

log = logging.getLogger("choragos")


def one_arena() -> bool:
    """Ask glibc for a single malloc arena; True when it took the setting.
    Call it before the threads start."""
    # The process's own symbols hold the C library's: find_library would
    # run `ldconfig -p` (a process started on the way to the first frame).
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False  # not glibc: its allocator has no such setting
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    taken = mallopt(M_ARENA_MAX, 1) == 1
    if not taken:
        log.debug("mallopt(M_ARENA_MAX) was refused; the threads keep their arenas")
    return taken


_trim = None  # glibc's malloc_trim once looked up; False where there is none


def give_back() -> bool:
    """Hand the allocator's free pages back to the system (glibc's
    ``malloc_trim``); True when it did.  Freed memory inside the heap
    otherwise stays resident until the heap's top is free: a pane that
    packed its history after a flood (see ``vthistory``) frees blocks the
    flood's later allocations sit above.  About 0.1 ms for the server's heap."""
    global _trim
    if _trim is None:
        try:
            _trim = ctypes.CDLL(None).malloc_trim
            _trim.argtypes = (ctypes.c_size_t,)
            _trim.restype = ctypes.c_int
        except (OSError, AttributeError, TypeError):
            _trim = False  # not glibc
    return bool(_trim and _trim(0))
