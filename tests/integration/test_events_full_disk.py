"""The event log on a full disk (a real small tmpfs): records that cannot be
written are counted, the server's log says so once, and the first record
written after the disk has room again says how many were lost."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from choragos.board.events import LOST_EVENT, EventLog, read_events
from tests.integration.smallfs import fill


def test_lost_events_are_told_once_and_counted_when_the_log_takes_records_again(
        small_fs: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = small_fs / "events.jsonl"
    events = EventLog(path)
    try:
        events.write("before")
        filler = small_fs / "filler"
        fill(filler)
        with caplog.at_level(logging.WARNING, logger="choragos.board.events"):
            # The file's last page may still have room: write until it has not.
            written = 0
            while events.error is None and written < 1000:
                events.write("filling", n=written)
                written += 1
            assert events.error is not None
            for n in range(4):
                events.write("checkpoint failed", task=f"T{n}")
            told = [r.getMessage() for r in caplog.records]
            assert len(told) == 1 and "events are lost until it can" in told[0], told
            assert told[0].endswith("the first lost: filling")
            filler.unlink()
            events.write("after")
            events.write("later")
        told = [r.getMessage() for r in caplog.records]
        assert len(told) == 2 and told[1].endswith("takes records again; 5 were lost"), told
    finally:
        events.close()
    records = list(read_events(path))
    assert [r["event"] for r in records] == ["before", *["filling"] * (written - 1),
                                             LOST_EVENT, "after", "later"]
    lost = records[-3]
    assert (lost["lost"], lost["first"]) == (5, "filling")
    assert "No space left on device" in lost["error"]
