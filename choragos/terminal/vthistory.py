"""A pane's scrollback, kept compact.

Every pane keeps up to 5,000 lines that left the top of its screen, and a
flooding crew fills all of them.  As one ``str`` each, a 50-character log
line costs about 100 bytes (the object's header is half of it) plus its
slot in the container.  Here lines are kept as they come only until
:data:`BLOCK` of them have gathered; those are then joined into one string,
so a stored line costs its characters and one separator.  A block whose
lines hold a newline themselves (a row never does, but the type allows it)
stays a tuple of lines instead.  Lines are cut from the front a whole block
at a time, with the lines of the first block already past the limit skipped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

BLOCK = 64  # lines joined into one string: 3-8 KB of a log's text
_SEP = "\n"

Block = str | tuple[str, ...]


class History:
    """At most ``limit`` lines, oldest first: ``extend``, ``clear``, ``len``, iteration."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 0)
        self._blocks: deque[Block] = deque()
        self._skip = 0  # lines of the first block already cut off
        self._tail: list[str] = []  # the newest lines, not yet a block

    def __len__(self) -> int:
        return len(self._blocks) * BLOCK - self._skip + len(self._tail)

    def __iter__(self) -> Iterator[str]:
        for index, block in enumerate(self._blocks):
            lines = block.split(_SEP) if isinstance(block, str) else block
            yield from (lines[self._skip:] if index == 0 and self._skip else lines)
        yield from self._tail

    def extend(self, lines: Iterable[str]) -> None:
        if not self.limit:
            return
        tail = self._tail
        tail.extend(lines)
        if len(tail) >= BLOCK:
            whole = len(tail) - len(tail) % BLOCK
            # Blocks wholly past the limit are never joined.
            keep_from = max(0, whole - (self.limit + BLOCK - 1) // BLOCK * BLOCK)
            if keep_from:
                self._blocks.clear()
                self._skip = 0
            self._blocks.extend(_block(tail[start:start + BLOCK])
                                for start in range(keep_from, whole, BLOCK))
            del tail[:whole]
        self._trim()

    def clear(self) -> None:
        self._blocks.clear()
        self._skip = 0
        self._tail.clear()

    def _trim(self) -> None:
        excess = len(self) - self.limit
        while excess > 0 and self._blocks:
            left = BLOCK - self._skip
            if excess < left:
                self._skip += excess
                return
            self._blocks.popleft()
            self._skip = 0
            excess -= left
        if excess > 0:
            del self._tail[:excess]


def _block(lines: list[str]) -> Block:
    joined = _SEP.join(lines)
    if joined.count(_SEP) == len(lines) - 1:
        return joined
    return tuple(lines)
