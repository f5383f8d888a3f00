"""Reading a file another party named: a brief or report path from the wire.

Such a path may name a FIFO or a device; a plain ``open`` of a FIFO blocks
until a writer comes, which would hold the session core's or the deck's
thread.  The file is opened without blocking and read only when it is a
regular file.  Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """Up to ``limit`` bytes of the regular file at ``path``; OSError (its
    strerror saying why) for anything else, without waiting on it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
