"""A thread that dies with an exception is logged and reported, never silent.

pykka's actor threads report their own crashes to their supervisors; every
other thread with a duty (the journal's fsync thread, a reader, a pump) is
covered by :func:`install`, which the session sets at its start: the death
is logged with its traceback and told to the top of the supervision tree
(:class:`ThreadDied`), which records a ``thread died`` event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("choragos.threads")


@dataclass(frozen=True)
class ThreadDied:
    """To a supervisor: a thread outside the actors ended with an exception."""

    thread: str
    error: str


def install(report: Callable[[ThreadDied], None]) -> Callable[[], None]:
    """Set ``threading.excepthook`` to log and ``report`` a thread's death;
    returns what puts the previous hook back.  A previous hook someone set
    (a test runner's) is called too; Python's own, which only prints the
    traceback again, is not."""
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return  # a thread that asked to end
        name = args.thread.name if args.thread is not None else "a thread"
        log.error("thread %s died", name,
                  exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
        try:
            report(ThreadDied(name, f"{args.exc_type.__name__}: {args.exc_value}"))
        except Exception:
            log.exception("reporting the death of thread %s failed", name)
        if previous is not threading.__excepthook__:
            previous(args)

    threading.excepthook = hook

    def uninstall() -> None:
        if threading.excepthook is hook:
            threading.excepthook = previous

    return uninstall
