"""Following a chunked body's framing while it is passed on as it came."""

from __future__ import annotations

import pytest

from choragos.gateway.chunked import MAX_LINE, BrokenFraming, ChunkedBody

pytestmark = pytest.mark.timeout(30)

PAYLOAD = [b"event: a\ndata: {}\n\n", b"x" * 300, b"data: {\"usage\":{}}\n\n"]
FRAMED = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in PAYLOAD)
END = b"0\r\n\r\n"


class _Reads:
    """Feeds a body read by read as the gateway does: each read lands after the
    line the last one cut in two, at the front of one buffer."""

    def __init__(self) -> None:
        self.body = ChunkedBody()
        self.held = b""

    def feed(self, piece: bytes) -> tuple[bytes, bytes]:
        buf = self.held + piece
        step = self.body.feed(buf, len(buf))
        assert step.passed <= step.kept <= len(buf)
        assert all(0 <= s < e <= step.passed for s, e in step.payload)
        self.held = buf[step.kept:]
        return buf[:step.passed], b"".join(buf[s:e] for s, e in step.payload)


def _feed_in(pieces: list[bytes]) -> tuple[ChunkedBody, bytes, bytes]:
    reads = _Reads()
    out = payload = b""
    for piece in pieces:
        assert not reads.body.ended
        passed, data = reads.feed(piece)
        out += passed
        payload += data
    return reads.body, out, payload


def test_every_cut_of_the_reads_gives_the_framing_back_unchanged_and_the_payload():
    whole = FRAMED + END
    for at in range(1, len(whole)):
        body, out, payload = _feed_in([whole[:at], whole[at:]])
        assert body.ended and body.extra == 0, at
        assert out == FRAMED, at  # the end is the caller's to write
        assert payload == b"".join(PAYLOAD), at


def test_one_byte_at_a_time():
    whole = FRAMED + END
    body, out, payload = _feed_in([whole[i:i + 1] for i in range(len(whole))])
    assert body.ended and out == FRAMED and payload == b"".join(PAYLOAD)


def test_a_line_cut_by_a_read_goes_with_the_next_read():
    reads = _Reads()
    assert reads.feed(b"5\r\nhello\r\n1") == (b"5\r\nhello\r\n", b"hello")
    assert reads.held == b"1"
    assert reads.feed(b"0\r\n") == (b"10\r\n", b"")  # the held "1" and "0\r\n": size 16
    assert reads.feed(b"x" * 16 + b"\r\n") == (b"x" * 16 + b"\r\n", b"x" * 16)


def test_extensions_trailers_and_bytes_past_the_end():
    body, out, payload = _feed_in([b"3;name=value\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\nHTTP"])
    assert (out, payload) == (b"3;name=value\r\nabc\r\n", b"abc")
    assert body.ended and body.extra == 4  # not this body's: the connection is not reused


def test_trailers_cut_across_reads_are_read_to_their_blank_line():
    body, out, _ = _feed_in([b"1\r\na\r\n0\r\nX-T", b"railer: 1\r", b"\n", b"\r\n"])
    assert body.ended and out == b"1\r\na\r\n"


def test_bare_line_feeds_are_read_as_the_standard_library_reads_them():
    body, out, payload = _feed_in([b"2\nhi\r\n0\n\n"])
    assert body.ended and payload == b"hi" and out == b"2\nhi\r\n"


@pytest.mark.parametrize("framing", [b"zz\r\n", b"-5\r\nhello\r\n", b"\r\n"])
def test_a_malformed_size_is_broken_framing(framing):
    with pytest.raises(BrokenFraming):
        ChunkedBody().feed(framing, len(framing))


def test_a_size_line_that_never_ends_is_broken_framing():
    reads = _Reads()
    reads.feed(b"1" * MAX_LINE)
    with pytest.raises(BrokenFraming):
        reads.feed(b"1")


def test_reads_of_random_sizes_over_many_chunks_give_the_framing_and_payload_back():
    import random
    rng = random.Random(43)
    for _ in range(50):
        payload = [bytes([65 + i % 26]) * rng.choice([1, 2, 3, 100, 5000]) for i in range(30)]
        framed = b"".join(b"%x%s\r\n%s\r\n" % (len(p), rng.choice([b"", b";x=1", b" "]), p)
                          for p in payload)
        whole = framed + END
        cuts = sorted(rng.sample(range(1, len(whole)), 12))
        pieces = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True)]
        body, out, got = _feed_in(pieces)
        assert body.ended and out == framed and got == b"".join(payload)
