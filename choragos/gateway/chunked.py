"""Following the chunked framing of an HTTP/1.1 body that is passed on as it came.

The gateway relays a streamed (chunked) answer byte for byte: each read
from the upstream goes to the agent in one write, with the upstream's own
chunk framing, so a piece costs one read and one write however many events
it holds, and the agent reads the same chunks it would read directly.  A
:class:`ChunkedBody` reads the framing on the way only to know the
payload (for the usage meter) and where the body ends.  The end itself
(the last, empty chunk and any trailers) is held back and replaced by a
plain ``0\\r\\n\\r\\n`` once the answer is counted, so an agent that has the
whole answer finds it counted, as with every answer the gateway relays.
"""

from __future__ import annotations

from typing import NamedTuple

MAX_LINE = 65536  # a size or trailer line, as the standard library's HTTP client allows


class BrokenFraming(ValueError):
    """The upstream's chunked framing cannot be read: the stream is cut there."""


class Step(NamedTuple):
    """What one read of a chunked body comes to, as offsets into the read's buffer."""

    passed: int  # buf[:passed] goes on to the agent as it is, framing included
    kept: int    # buf[kept:size] is a line the read cut in two: it starts the next read
    payload: list[tuple[int, int]]  # (start, end) of each run of chunk data in buf[:passed]


class ChunkedBody:
    """The framing state of one chunked body, fed each read as it lands in a buffer.

    The reads land in one buffer, reused: the payload is handed on as offsets
    into it, never copied out, and a line cut by the end of a read (a chunk
    size or a trailer) is moved to the buffer's front by the caller and read
    again with what follows it.
    """

    def __init__(self) -> None:
        self._left = 0       # bytes of the current chunk still to come, its CRLF included
        self._trailer = False  # past the last chunk: reading trailer lines to the blank one
        self.ended = False   # the whole body, trailers included, has been read
        self.extra = 0       # bytes read past the body's end (the connection is not reused)

    def feed(self, buf: bytes | bytearray, size: int) -> Step:
        """The framing of ``buf[:size]``: what to pass on now, what to keep, the payload.

        What is passed on is the upstream's bytes up to the start of a line the
        read cut in two and never the last chunk or trailers (the caller writes
        the end itself).
        """
        if self._trailer:
            return Step(0, self._trailers(buf, 0, size), [])
        payload: list[tuple[int, int]] = []
        add = payload.append
        pos = self._left  # the end of the chunk the last read left open, its CRLF included
        if pos:
            if pos > size:  # it goes on past this read too
                if pos > 2:
                    add((0, min(size, pos - 2)))  # not its CRLF
                self._left = pos - size
                return Step(size, size, payload)
            if pos > 2:
                add((0, pos - 2))
        find = buf.find
        # One turn per chunk, its size and its data at once: this runs for every
        # chunk of every stream (a few dozen a read at full speed).
        while pos < size:
            eol = find(b"\n", pos, size)
            if eol < 0:
                _check_held(size - pos)
                self._left = 0
                return Step(pos, pos, payload)
            try:
                chunk = int(buf[pos:eol], 16)  # int() strips the spaces and the CR
            except ValueError:
                chunk = _size(buf[pos:eol])  # an extension after the size, or broken
            if chunk <= 0:
                _size(buf[pos:eol])  # a negative size: raises
                self._trailer = True
                self._left = 0
                return Step(pos, self._trailers(buf, eol + 1, size), payload)
            pos = eol + 1 + chunk  # the end of its data
            if pos + 2 > size:  # the chunk goes on past this read
                if pos > eol + 1 and eol + 1 < size:
                    add((eol + 1, min(size, pos)))
                self._left = pos + 2 - size
                return Step(size, size, payload)
            add((eol + 1, pos))
            pos += 2
        self._left = 0
        return Step(size, size, payload)

    def _trailers(self, buf: bytes | bytearray, pos: int, size: int) -> int:
        """Read trailer lines from ``pos``; where a line cut by the read starts."""
        while not self.ended:
            eol = buf.find(b"\n", pos, size)
            if eol < 0:
                _check_held(size - pos)
                return pos
            if eol - pos <= 1 and buf[pos:eol] in (b"", b"\r"):
                self.ended = True
                self.extra = size - eol - 1
            pos = eol + 1
        return size


def _check_held(length: int) -> None:
    if length > MAX_LINE:
        raise BrokenFraming(f"a chunk size or trailer line over {MAX_LINE} bytes")


def _size(line: bytes | bytearray) -> int:
    try:
        size = int(line, 16)  # int() strips the spaces and the CR
    except ValueError:
        try:
            size = int(line.split(b";", 1)[0], 16)  # an extension after the size
        except ValueError:
            raise BrokenFraming(f"a malformed chunk size {line[:40]!r}") from None
    if size < 0:
        raise BrokenFraming(f"a negative chunk size {line[:40]!r}")
    return size
