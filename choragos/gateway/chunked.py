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

MAX_LINE = 65536  # a size or trailer line, as the standard library's HTTP client allows


class BrokenFraming(ValueError):
    """The upstream's chunked framing cannot be read: the stream is cut there."""


class ChunkedBody:
    """The framing state of one chunked body, fed the raw bytes as they are read."""

    def __init__(self) -> None:
        self._left = 0       # bytes of the current chunk still to come, its CRLF included
        self._line = b""     # a size or trailer line cut by the end of a read
        self._trailer = False  # past the last chunk: reading trailer lines to the blank one
        self.ended = False   # the whole body, trailers included, has been read
        self.extra = 0       # bytes read past the body's end (the connection is not reused)

    def feed(self, data: bytes) -> tuple[bytes, bytes]:
        """What of ``data`` to pass on now, and the payload in it.

        What is passed on is the upstream's bytes, framing included, up to the
        start of a line the read cut in two (it goes with the next read) and
        never the last chunk or trailers (the caller writes the end itself).
        """
        buf = self._line + data if self._line else data
        self._line = b""
        if self._trailer:
            self._trailers(buf, 0)
            return b"", b""
        view = memoryview(buf)
        size_of = len(buf)
        pieces: list[memoryview] = []
        pos = 0
        cut = size_of
        while pos < size_of:
            if self._left:
                take = min(self._left, size_of - pos)
                payload = min(take, self._left - 2)  # the chunk's data, not its CRLF
                if payload > 0:
                    pieces.append(view[pos:pos + payload])
                self._left -= take
                pos += take
                continue
            eol = buf.find(b"\n", pos)
            if eol < 0:
                self._hold(buf, pos)
                cut = pos
                break
            size = _size(buf[pos:eol])
            if size == 0:
                cut = pos
                self._trailer = True
                self._trailers(buf, eol + 1)
                break
            self._left = size + 2
            pos = eol + 1
        return buf[:cut] if cut < size_of else buf, b"".join(pieces)

    def _trailers(self, buf: bytes, pos: int) -> None:
        while not self.ended:
            eol = buf.find(b"\n", pos)
            if eol < 0:
                self._hold(buf, pos)
                return
            if eol - pos <= 1 and buf[pos:eol] in (b"", b"\r"):
                self.ended = True
                self.extra = len(buf) - eol - 1
            pos = eol + 1

    def _hold(self, buf: bytes, pos: int) -> None:
        if len(buf) - pos > MAX_LINE:
            raise BrokenFraming(f"a chunk size or trailer line over {MAX_LINE} bytes")
        self._line = buf[pos:]


def _size(line: bytes) -> int:
    try:
        size = int(line.split(b";", 1)[0], 16)  # int() strips the spaces and the CR
    except ValueError:
        raise BrokenFraming(f"a malformed chunk size {line[:40]!r}") from None
    if size < 0:
        raise BrokenFraming(f"a negative chunk size {line[:40]!r}")
    return size
