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
