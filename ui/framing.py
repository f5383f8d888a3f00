"""The attach protocol: frames between ``choragos attach`` and the session.

Standard library only, so the attach client starts fast.  A frame is one
kind byte, a four-byte big-endian length and the payload:

=====  =========  ==========================================================
kind   direction  payload
=====  =========  ==========================================================
``H``  client     hello, JSON: ``pid``, ``cols``, ``rows``, ``term``,
                  ``colorterm``, ``force``, ``role`` (``$CHORAGOS_ROLE``),
                  ``tty`` (the client's terminal rides along, see below)
``A``  server     accepted, JSON: ``pid`` and ``dir`` of the session,
                  ``direct`` (the session uses the terminal it was given)
``D``  both       terminal bytes: keys typed, or screen output
``W``  client     window size, JSON: ``cols``, ``rows``
``R``  client     ready: the terminal is in raw mode, the session may use it
``X``  server     the end, JSON: ``reason`` (one sentence) and ``code``
                  (0 detached, 1 refused, 2 taken over, 3 session ended,
                  4 dropped)
=====  =========  ==========================================================

The client speaks first (``H``); the server answers ``A`` or ``X``.

A client whose stdin and stdout are one terminal passes that terminal's
descriptor with its hello (``SCM_RIGHTS``), as tmux's client does.  When the
session can use it, it answers ``"direct": true`` and, once the client has
put the terminal in raw mode and said ``R``, writes the deck's frames to the
terminal and reads the keys from it itself: no ``D`` frames, and a
keystroke's echo crosses no process but the agent's.  The socket then
carries only the control frames, and the session closes its descriptor
before it sends ``X``, so the client restores a terminal nobody else
writes to.  Otherwise everything is relayed in ``D`` frames.
"""

from __future__ import annotations

import json
import struct

HELLO = b"H"
ACCEPTED = b"A"
DATA = b"D"
WINDOW = b"W"
EXIT = b"X"
READY = b"R"
KINDS = frozenset({HELLO, ACCEPTED, DATA, WINDOW, EXIT, READY})

MAX_PAYLOAD = 1 << 20
CHUNK = 1 << 16  # data is sent in frames of at most this much
_HEADER = struct.Struct(">cI")
HEADER_SIZE = _HEADER.size

# X codes
DETACHED = 0
REFUSED = 1
TAKEN_OVER = 2
ENDED = 3
DROPPED = 4
# ENDED's reason when the session ended as asked; any other is why it failed.
ENDED_REASON = "the session ended"


class FrameError(Exception):
    """The peer sent something that is not a frame of this protocol."""


def encode(kind: bytes, payload: bytes = b"") -> bytes:
    if kind not in KINDS:
        raise ValueError(f"unknown frame kind {kind!r}")
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"frame payload of {len(payload)} bytes is over the limit")
    return _HEADER.pack(kind, len(payload)) + payload


def encode_json(kind: bytes, value: dict) -> bytes:
    return encode(kind, json.dumps(value, ensure_ascii=True).encode())


def encode_data(data: bytes) -> bytes:
    """Terminal bytes as one or more ``D`` frames."""
    return b"".join(encode(DATA, data[i:i + CHUNK]) for i in range(0, len(data), CHUNK))


def decode_json(payload: bytes) -> dict:
    try:
        value = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FrameError(f"a control frame is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FrameError("a control frame is not a JSON object")
    return value


class Decoder:
    """Feed bytes as they arrive; get whole frames back."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= HEADER_SIZE:
            kind, size = _HEADER.unpack_from(self._buffer)
            if kind not in KINDS:
                raise FrameError(f"unknown frame kind {kind!r}")
            if size > MAX_PAYLOAD:
                raise FrameError(f"a frame of {size} bytes is over the limit")
            end = HEADER_SIZE + size
            if len(self._buffer) < end:
                break
            frames.append((kind, bytes(self._buffer[HEADER_SIZE:end])))
            del self._buffer[:end]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buffer)


def window(cols: int, rows: int) -> bytes:
    return encode_json(WINDOW, {"cols": int(cols), "rows": int(rows)})


def size_of(value: dict) -> tuple[int, int] | None:
    """(cols, rows) from a hello or window frame, if sane."""
    cols, rows = value.get("cols"), value.get("rows")
    if not (isinstance(cols, int) and isinstance(rows, int)):
        return None
    if not (1 <= cols <= 2000 and 1 <= rows <= 1000):
        return None
    return cols, rows
