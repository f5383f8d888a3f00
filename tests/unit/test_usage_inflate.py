"""A compressed answer is inflated in pieces: memory stays flat, whatever it inflates to."""

from __future__ import annotations

import tracemalloc
import zlib

from choragos.gateway import usage
from choragos.gateway.usage import UsageMeter

USAGE = b'data: {"type":"message_delta","usage":{"output_tokens":9}}\n'


def _peak(meter: UsageMeter, pieces: list[bytes]) -> int:
    tracemalloc.start()
    try:
        for piece in pieces:
            meter.feed(piece)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _gzip(blank_mib: int) -> bytes:
    """``blank_mib`` MiB of empty event lines and then the usage, gzipped, made
    without holding the inflated text."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [packer.compress(b"\n" * (1 << 20)) for _ in range(blank_mib)]
    return b"".join([*out, packer.compress(USAGE), packer.flush()])


def test_a_piece_that_inflates_to_128_mib_costs_a_few_mib_and_usage_is_still_read():
    blank = _gzip(128)  # about 128 KiB
    meter = UsageMeter("anthropic", "text/event-stream", "gzip")
    peak = _peak(meter, [blank[i:i + 65536] for i in range(0, len(blank), 65536)])
    assert peak < 8 << 20, f"{peak} bytes held"  # before: the whole 128 MiB at once
    assert meter.close().counts == {"output": 9}


def test_past_the_inflation_limit_the_body_is_given_up_on(monkeypatch):
    monkeypatch.setattr(usage, "MAX_INFLATED", 4 << 20)
    meter = UsageMeter("anthropic", "text/event-stream", "gzip")
    meter.feed(_gzip(5))
    reading = meter.close()
    assert reading.counts == {} and "inflates past" in reading.problem
