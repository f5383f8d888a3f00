"""One malloc arena for the server's threads.

glibc gives a thread its own malloc arena when another holds the main one,
up to eight per core, and an arena keeps the memory it grew to.  A session's
threads (a reader per pane, an actor per role, the deck) take turns on the
interpreter's lock anyway, so the extra arenas buy nothing, and after five
panes flood output they hold about 3 MB of the server's resident memory
that one shared arena does not.  Elsewhere (macOS, musl) nothing changes.

ctypes is imported when first used: the terminal, which clients load too,
imports this module to hand threads' caches back (see ``drain_thread_cache``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)

log = logging.getLogger("choragos")


def one_arena() -> bool:
    """Ask glibc for a single malloc arena; True when it took the setting.
    Call it before the threads start."""
    import ctypes

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
        import ctypes

        try:
            _trim = ctypes.CDLL(None).malloc_trim
            _trim.argtypes = (ctypes.c_size_t,)
            _trim.restype = ctypes.c_int
        except (OSError, AttributeError, TypeError):
            _trim = False  # not glibc
    return bool(_trim and _trim(0))


# glibc's per-thread cache (tcache): 64 sizes of chunk, 16 bytes apart from
# 32 (requests of 24 bytes and less up to 1,032), 7 chunks kept of each.
_CACHED_SIZES = tuple(24 + 16 * index for index in range(64))
_CACHED_EACH = 7
owed: set[int] = set()  # threads whose cache is to be drained at their next settle()
QUIET = 1.0  # seconds a thread has drawn no held output before it drains
_drew_at: dict[int, float] = {}  # when each thread last drew output a feed held
_clock = time.monotonic
_heap = None  # (malloc, free) once looked up; False where there is none


def owe_drain(idents: Iterable[int]) -> None:
    """Mark threads (by ``threading.get_ident``) whose cache of freed blocks
    is to go back to the heap the next time each calls :func:`settle`."""
    owed.update(idents)


def drew() -> None:
    """The calling thread drew output a feed held (a parse of it)."""
    _drew_at[threading.get_ident()] = _clock()


def settle() -> bool:
    """Drain the calling thread's cache if it is owed (see :func:`owe_drain`)
    and has drawn no held output for :data:`QUIET` seconds; True when it
    did.  Cheap when not: a set lookup.  The wait keeps a flood that pauses
    often (output at a steady rate: the pane packs at every pause) from
    draining the threads that draw it again and again: they drain once it
    is over."""
    ident = threading.get_ident()
    if ident not in owed or _clock() - _drew_at.get(ident, float("-inf")) < QUIET:
        return False
    owed.discard(ident)
    return drain_thread_cache()


def drain_thread_cache() -> bool:
    """Hand the calling thread's cache of freed blocks back to the heap, and
    the heap's free pages to the system; True when it did (glibc only).

    glibc keeps up to seven freed blocks of each size under 1,040 bytes per
    thread, for that thread's next allocations, and gives them back only
    when the thread ends.  A role's thread that drew a flood's held output
    (a read of the screen parses it) keeps the last ones its parse freed,
    spread over the pages the flood grew the heap by: each cached block
    keeps its page resident (five flooded roles: 0.7 MB of pages that
    held nothing else).  Taking every cached block out (``malloc`` serves a
    thread's cache first) and freeing them on a short-lived thread puts them
    back in the heap when that thread ends; the trim then returns the pages
    they alone kept.  About a millisecond."""
    calls = _heap_calls()
    if not calls:
        return False
    malloc, free = calls
    taken = [malloc(size) for size in _CACHED_SIZES for _ in range(_CACHED_EACH)]
    helper = threading.Thread(target=_free_all, args=(free, taken), name="heap-drain")
    try:
        helper.start()
    except RuntimeError:  # no thread to be had: the blocks go back to this one's cache
        log.debug("no thread to drain a thread's malloc cache on", exc_info=True)
        _free_all(free, taken)
        return False
    helper.join()
    # The helper's own cache (the blocks it freed) goes back once its native
    # thread has finished, a moment after the Python thread's join.
    task = f"/proc/self/task/{helper.native_id}"
    deadline = time.monotonic() + 0.1
    while os.path.exists(task) and time.monotonic() < deadline:
        time.sleep(0.0005)
    give_back()
    return True


def _free_all(free: Callable[[int], None], taken: list[int]) -> None:
    for address in taken:
        if address:
            free(address)


def _heap_calls() -> tuple[Callable[[int], int], Callable[[int], None]] | None:
    global _heap
    if _heap is None:
        import ctypes

        try:
            libc = ctypes.CDLL(None)
            libc.gnu_get_libc_version  # glibc's: the cache is glibc's  # noqa: B018
            malloc, free = libc.malloc, libc.free
        except (OSError, AttributeError, TypeError):
            _heap = False  # not glibc
            return None
        malloc.argtypes, malloc.restype = (ctypes.c_size_t,), ctypes.c_void_p
        free.argtypes, free.restype = (ctypes.c_void_p,), None
        _heap = (malloc, free)
    return _heap or None
