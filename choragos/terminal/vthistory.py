"""A pane's scrollback, kept compact.

Every pane keeps up to 5,000 lines that left the top of its screen, and a
flooding crew fills all of them.  As one ``str`` each, a 50-character log
line costs about 100 bytes (the object's header is half of it) plus its
slot in the container.  Here lines are kept as they come only until
:data:`BLOCK` of them have gathered; those are then joined into one string
(a *sealed* block), so a stored line costs its characters and one
separator.  A block whose lines hold a newline themselves (a row never
does, but the type allows it) stays a tuple of lines instead.  Lines are cut
from the front a whole block at a time, with the lines of the first block
already past the limit skipped.

Sealed blocks are then packed with zlib (a log line's 50 characters take
about 8 bytes), except the newest, which scrolling reaches first.  Not as
they seal: that would cost a flood's parse about a third more (30 µs a
block, against 0.13 s of CPU per 100,000 lines), for blocks the limit
mostly drops again.  They are packed when the output pauses
(:meth:`History.pack`, called once a pane's held output is drawn) or comes
slowly (a block sealing :data:`SLOW` seconds or more after the one before
packs the blocks sealed since).  A packed block is unpacked when it is
read, and the last :data:`CACHE` unpacked blocks are kept for the next
read (a scroll reads the same blocks again at every key).

A pane's packed blocks are kept in one buffer, each a view of its part,
gathered anew at every pack: as bytes objects of their own, a flood's 78
packed blocks a pane (700 bytes each) were allocated at the pause, into the
holes the parse had left across the heap, and each kept a page of it
resident (five flooded panes: 0.6 MB of the server's memory).
"""

from __future__ import annotations

import time
import zlib
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence

BLOCK = 64  # lines joined into one string: 3-8 KB of a log's text
CACHE = 4  # unpacked blocks kept for the next read
SLOW = 1.0  # seconds between two seals after which the older blocks are packed
LEVEL = 1  # zlib's fastest: a log's text still packs 6-8 times
_SEP = "\n"

# A sealed block's text joined, its lines (when one holds a newline), or
# its text packed (bytes as packed; a view of the pane's buffer once gathered).
Block = str | tuple[str, ...] | bytes | memoryview
_PACKED = (bytes, memoryview)


class History:
    """At most ``limit`` lines, oldest first: ``extend``, ``clear``, ``len``,
    iteration, and slices by index."""

    def __init__(self, limit: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = max(limit, 0)
        self._blocks: deque[Block] = deque()
        self._skip = 0  # lines of the first block already cut off
        self._tail: list[str] = []  # the newest lines, not yet a block
        self._unpacked: OrderedDict[bytes, list[str]] = OrderedDict()
        self._plain = 0  # the newest sealed blocks not packed yet (str or tuple)
        self._clock = clock
        self._sealed_at = float("-inf")

    def __len__(self) -> int:
        return len(self._blocks) * BLOCK - self._skip + len(self._tail)

    def __iter__(self) -> Iterator[str]:
        for index, block in enumerate(self._blocks):
            lines = self._lines(block)
            yield from (lines[self._skip:] if index == 0 and self._skip else lines)
        yield from self._tail

    def lines(self, start: int, stop: int) -> list[str]:
        """Lines ``start`` to ``stop`` (as a slice of the list would give),
        unpacking only the blocks they are in."""
        start, stop, _ = slice(start, stop).indices(len(self))
        if start >= stop:
            return []
        out: list[str] = []
        sealed = len(self._blocks) * BLOCK - self._skip
        at = start
        while at < min(stop, sealed):
            index, offset = divmod(at + self._skip, BLOCK)
            taken = self._lines(self._blocks[index])[offset:offset + stop - at]
            out.extend(taken)
            at += len(taken)
        if stop > sealed:  # else stop - sealed would count from the tail's end
            out.extend(self._tail[max(start - sealed, 0):stop - sealed])
        return out

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
                self._drop_blocks()
            sealed = [_block(tail[start:start + BLOCK]) for start in range(keep_from, whole, BLOCK)]
            self._blocks.extend(sealed)
            self._plain += len(sealed)
            del tail[:whole]
            now = self._clock()
            if now - self._sealed_at >= SLOW:
                self.pack()
            self._sealed_at = now
        self._trim()

    def pack(self) -> int:
        """Pack every sealed block but the newest; the number packed."""
        blocks = self._blocks
        packed = 0
        # The plain blocks are the newest ones, just before the last.
        for index in range(len(blocks) - self._plain, len(blocks) - 1):
            block = blocks[index]
            if block.__class__ is str:
                blocks[index] = zlib.compress(block.encode(), LEVEL)
                packed += 1
        self._plain = min(self._plain, 1)
        if packed:
            self._gather()
        return packed

    def _gather(self) -> None:
        """Every packed block into one buffer, each a view of its part."""
        blocks = self._blocks
        at = [index for index, block in enumerate(blocks) if block.__class__ in _PACKED]
        buffer = memoryview(b"".join([blocks[index] for index in at]))
        start = 0
        for index in at:
            end = start + len(blocks[index])
            blocks[index] = buffer[start:end]
            start = end
        # Its keys are views of the buffer before: it would live on with them.
        self._unpacked.clear()

    def clear(self) -> None:
        self._drop_blocks()
        self._tail.clear()

    def held(self) -> tuple[int, int, int]:
        """(packed blocks, plain blocks, bytes their text takes): what the
        tests and the bench count."""
        packed = sum(block.__class__ in _PACKED for block in self._blocks)
        size = sum(len(block) if block.__class__ is not tuple else sum(map(len, block))
                   for block in self._blocks)
        return packed, len(self._blocks) - packed, size + sum(map(len, self._tail))

    def cached(self) -> int:
        """How many unpacked blocks are kept for the next read."""
        return len(self._unpacked)

    def _lines(self, block: Block) -> Sequence[str]:
        if block.__class__ is str:
            return block.split(_SEP)  # type: ignore[union-attr]
        if block.__class__ is tuple:
            return block  # type: ignore[return-value]
        cache = self._unpacked
        lines = cache.get(block)  # type: ignore[call-overload]
        if lines is None:
            lines = zlib.decompress(block).decode().split(_SEP)  # type: ignore[arg-type]
            cache[block] = lines  # type: ignore[index]
            if len(cache) > CACHE:
                cache.popitem(last=False)
        else:
            cache.move_to_end(block)  # type: ignore[arg-type]
        return lines

    def _drop_blocks(self) -> None:
        self._blocks.clear()
        self._skip = 0
        self._plain = 0
        self._unpacked.clear()

    def _trim(self) -> None:
        excess = len(self) - self.limit
        while excess > 0 and self._blocks:
            left = BLOCK - self._skip
            if excess < left:
                self._skip += excess
                return
            dropped = self._blocks.popleft()
            if dropped.__class__ in _PACKED:
                self._unpacked.pop(dropped, None)  # type: ignore[call-overload]
            self._plain = min(self._plain, len(self._blocks))
            self._skip = 0
            excess -= left
        if excess > 0:
            del self._tail[:excess]


def _block(lines: list[str]) -> Block:
    joined = _SEP.join(lines)
    if joined.count(_SEP) == len(lines) - 1:
        return joined
    return tuple(lines)
