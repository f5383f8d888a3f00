"""Waiting on one descriptor, whatever its number.

``select.select`` takes only descriptors below 1024 (``FD_SETSIZE``) and
raises for any other; a long session holding many PTYs, pidfds, pipes and
sockets passes that, and a wait on a freshly made descriptor would then
fail where nothing expects it to.  ``poll`` has no such limit.
"""

from __future__ import annotations

import select
from typing import Protocol


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


def wait_ready(fd: int | _HasFileno, timeout: float | None, *, write: bool = False) -> bool:
    """True once ``fd`` can be read (or written, with ``write``) or has hung
    up or failed -- a read or write then says which; False when ``timeout``
    seconds passed first (None: no limit)."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT if write else select.POLLIN)
    wait = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
    return bool(poller.poll(wait))
