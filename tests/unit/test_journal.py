"""The journal: framing, torn tails, folding, compaction, private files."""

from __future__ import annotations

import json
import os
import stat
import threading
import time

import pytest

from choragos.actors.handle import Handle
from choragos.board import journal
from choragos.board.journal import Image, Journal, JournalError, fold, frame, unframe
from tests.conftest import wait_until


def task(tid: str, state: str = "queued", role: str = "coder") -> dict:
    return {"id": tid, "role": role, "text": f"do {tid}", "brief": None, "state": state,
            "created": 1.0, "delivered": None, "finished": None, "report": None,
            "summary": None, "checkpoint": None, "note": ""}


def test_frame_round_trips_and_stops_at_a_torn_tail():
    data = frame({"kind": "a", "n": 1}) + frame({"kind": "b", "text": "é\n"})
    torn = frame({"kind": "c"})[:-5]
    records, good = unframe(data + torn)
    assert [r["kind"] for r in records] == ["a", "b"]
    assert good == len(data)


def test_a_flipped_byte_fails_the_checksum():
    line = bytearray(frame({"kind": "task", "id": "T1"}))
    line[-4] ^= 0x01
    assert unframe(bytes(line)) == ([], 0)


def test_fold_tracks_tasks_counter_and_queues():
    records = [
        {"kind": "session", "seq": 1, "t": 10.0, "version": 1, "config": "/x", "pid": 7},
        {"kind": "task", "seq": 2, "t": 11.0, "task": task("T1")},
        {"kind": "task", "seq": 3, "t": 11.0, "task": task("T2", "gated")},
        {"kind": "enqueue", "seq": 4, "t": 11.0, "id": 1, "role": "coder", "text": "go T1",
         "what": "task", "task": "T1", "front": False},
        {"kind": "enqueue", "seq": 5, "t": 11.0, "id": 2, "role": "lead", "text": "report",
         "what": "report", "task": "T0", "front": False},
        {"kind": "inflight", "seq": 6, "t": 12.0, "id": 1, "role": "coder"},
        {"kind": "injected", "seq": 7, "t": 12.0, "id": 2, "role": "lead", "requeued": False},
    ]
    image = fold(records)
    assert list(image.tasks) == ["T1", "T2"] and image.next_number == 3
    assert image.queues["coder"][0]["sent"] is True
    assert image.queues["lead"] == []
    assert image.next_injection == 3
    assert image.stopped is False and image.pid == 7


def test_records_at_or_below_the_snapshot_are_not_applied_twice():
    image = Image(seq=5)
    fold([{"kind": "task", "seq": 5, "t": 1.0, "task": task("T9")},
          {"kind": "task", "seq": 6, "t": 1.0, "task": task("T1")}], image)
    assert list(image.tasks) == ["T1"]


def test_clock_time_left_excludes_paused_time():
    image = fold([
        {"kind": "clock", "seq": 1, "t": 100.0, "action": "start", "task": "T1",
         "role": "coder", "seconds": 60, "left": 60},
        {"kind": "role", "seq": 2, "t": 110.0, "role": "coder", "paused": True},
        {"kind": "role", "seq": 3, "t": 200.0, "role": "coder", "paused": False},
        {"kind": "tokens", "seq": 4, "t": 205.0, "totals": {}},
    ])
    assert image.clock_left("T1") == pytest.approx(45.0)


def test_journal_appends_syncs_compacts_and_reloads(tmp_path):
    home = tmp_path / "state"
    j = Journal(home, compact_every=3)
    for n in range(1, 6):
        j.append("task", task=task(f"T{n}"))
        j.sync()
    j.close()
    assert (home / journal.SNAPSHOT).exists()
    image = journal.load(home)
    assert list(image.tasks) == [f"T{n}" for n in range(1, 6)]
    assert image.next_number == 6
    for path in (home / journal.SNAPSHOT, home / journal.JOURNAL):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_a_torn_tail_is_cut_before_the_next_append(tmp_path):
    home = tmp_path / "state"
    j = Journal(home)
    j.append("task", task=task("T1"))
    j.close()
    with open(home / journal.JOURNAL, "ab") as out:
        out.write(frame({"kind": "task", "task": task("T2")})[:20])
    j = Journal(home, journal.load(home))
    j.append("task", task=task("T3"))
    j.close()
    assert list(journal.load(home).tasks) == ["T1", "T3"]


def test_an_unknown_version_is_refused(tmp_path):
    home = tmp_path / "state"
    home.mkdir()
    (home / journal.SNAPSHOT).write_text(json.dumps({"version": 99}))
    with pytest.raises(JournalError, match="version 99"):
        journal.load(home)


def test_a_symlinked_journal_is_not_followed(tmp_path):
    home = tmp_path / "state"
    home.mkdir()
    (tmp_path / "elsewhere").write_text("")
    os.symlink(tmp_path / "elsewhere", home / journal.JOURNAL)
    with pytest.raises(OSError):
        Journal(home)


def test_a_failed_write_is_cut_off_so_later_records_stay_readable(tmp_path, monkeypatch):
    home = tmp_path / "state"
    j = Journal(home)
    j.append("task", task=task("T1"))
    real_write = os.write

    def half_then_full(fd, data):
        real_write(fd, data[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(journal.os, "write", half_then_full)
    with pytest.raises(OSError, match="No space"):
        j.append("task", task=task("T2"))
    monkeypatch.setattr(journal.os, "write", real_write)
    j.append("task", task=task("T3"))
    j.close()
    assert list(journal.load(home).tasks) == ["T1", "T3"]


def test_group_commit_syncs_many_waiters_with_few_fsyncs(tmp_path, monkeypatch):
    real = os.fdatasync
    calls = []

    def slow_fdatasync(fd):
        calls.append(fd)
        time.sleep(0.01)
        real(fd)

    monkeypatch.setattr(journal.os, "fdatasync", slow_fdatasync)
    j = Journal(tmp_path / "state")
    j.start()
    answers = []

    def client(n: int) -> None:
        j.append("task", task=task(f"T{n}"))
        answers.append(j.wait_synced())

    threads = [threading.Thread(target=client, args=(n,)) for n in range(1, 41)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ran = threading.Event()
    j.after_sync(ran.set)
    assert answers == [""] * 40 and ran.wait(5)
    assert len(calls) < 40, f"{len(calls)} fsyncs for 40 waiters"
    j.close()
    assert len(journal.load(tmp_path / "state").tasks) == 40


def test_a_compaction_keeps_every_part_of_the_image(tmp_path):
    home = tmp_path / "state"
    image = Image(config="/p/.choragos.toml", pid=7, started=1.0, stopped=False,
                          last_t=9.5, seq=4, runs=2, tasks={"T1": task("T1")}, next_number=2,
                          queues={"coder": [{"id": 1, "role": "coder", "text": "x",
                                             "what": "task", "task": "T1"}]},
                          next_injection=2, roles={"coder": {"paused": True}},
                          clocks={"T1": {"role": "coder", "seconds": 60, "left": 30.0,
                                         "since": 5.0}},
                          layout={"kind": "split", "children": [{"role": "coder"}]},
                          tokens={"coder": {"m": {"input": 3}}}, handoff={"at": 2.0})
    j = Journal(home, image=image)
    j.compact()
    j.close()
    again = journal.load(home)
    assert again.to_dict() == image.to_dict()
    assert again.tasks["T1"] is not image.tasks["T1"]  # read back, not shared


def test_a_callback_that_meets_a_closed_handle_does_not_kill_the_fsync_thread(tmp_path):
    """The core types a line once its record is durable: the tell runs on the
    fsync thread, and a role a reload removed in the window has a closed
    handle.  The fsync thread must go on, or every later ack waits out its
    timeout."""
    gone = Handle("coder")
    gone.close("removed by a reload")
    j = Journal(tmp_path / "state")
    reported: list[str] = []
    j.on_callback_error = reported.append
    j.start()
    try:
        called = threading.Event()

        def type_line() -> None:
            called.set()
            gone.tell("type this")

        j.append("inflight", id=1, role="coder")
        j.after_sync(type_line)
        assert called.wait(5)
        j.append("alive")  # a later ack's records
        assert j.wait_synced(timeout=3) == ""  # not "the journal was not on disk within 3s"
        assert j._syncer.is_alive()
        wait_until(lambda: reported, 5, message="the failed callback reported")
        assert "ActorGone" in reported[0] and "removed by a reload" in reported[0]
    finally:
        j.close()


def test_a_batch_goes_to_disk_in_one_write_all_or_none(tmp_path, monkeypatch):
    j = Journal(tmp_path / "state")
    j.append("task", task=task("T1"))
    size, seq = j.path.stat().st_size, j.image.seq
    with pytest.raises(RuntimeError), j.batch():  # an error inside: nothing written
        j.append("task", task=task("T2"))
        raise RuntimeError("the task file could not be written")
    real_write = os.write
    monkeypatch.setattr(journal.os, "write", lambda fd, data: real_write(fd, data[:10]))
    with pytest.raises(OSError, match="short write"), j.batch():
        j.append("task", task=task("T2"))
        j.append("task", task=task("T3"))
    assert (j.path.stat().st_size, j.image.seq, list(j.image.tasks)) == (size, seq, ["T1"])
    monkeypatch.undo()
    writes = []
    monkeypatch.setattr(journal.os, "write", lambda fd, data: writes.append(1) or
                        real_write(fd, data))
    with j.batch():
        j.append("task", task=task("T2"))
        j.append("task", task=task("T3"))
    j.close()
    assert writes == [1]
    assert [r["seq"] for r in journal.read_records(j.path)] == [seq, seq + 1, seq + 2]
    assert list(journal.load(j.directory).tasks) == ["T1", "T2", "T3"]


def test_a_compaction_in_the_background_holds_up_no_append_and_loses_no_record(
        tmp_path, monkeypatch):
    """With the fsync thread running, a compaction encodes and writes its
    snapshot off the journal's lock (a 10,000-task image: 60 ms of CPU and
    0.2 s of writing, during which every append, sync and ack used to wait).
    Here the snapshot's write is held until the test lets it go: meanwhile
    records are appended and synced.  A crash at that moment (the directory
    copied as it is) and the journal after its swap both load every record."""
    home, crashed = tmp_path / "state", tmp_path / "crashed"
    held, release = threading.Event(), threading.Event()
    write_atomic = journal.write_atomic
    acked: list[str] = []  # appended and synced: a caller was told
    acked_at_crash: list[str] = []

    def slow_snapshot(path, data):
        write_atomic(path, data)
        if path.name == journal.SNAPSHOT:
            acked_at_crash.extend(acked)
            journal.ensure_private_dir(crashed)  # the disk as a crash would leave it
            for name in (journal.SNAPSHOT, journal.JOURNAL):
                (crashed / name).write_bytes((home / name).read_bytes())
            held.set()
            release.wait(10)

    monkeypatch.setattr(journal, "write_atomic", slow_snapshot)
    j = Journal(home, compact_every=10)
    j.start()
    watchdog = threading.Timer(10, release.set)  # the old code would wait for it
    watchdog.start()
    try:
        for n in range(1, 21):
            j.append("task", task=task(f"T{n}"))
            assert j.wait_synced() == ""
            acked.append(f"T{n}")
        assert held.wait(5), "no compaction started"
        for n in range(21, 41):  # while the snapshot is being written
            j.append("task", task=task(f"T{n}"))
        assert j.wait_synced() == "" and not release.is_set(), "appends waited for it"
        assert acked_at_crash and set(acked_at_crash) <= set(journal.load(crashed).tasks)
        release.set()
        wait_until(lambda: len(journal.read_records(home / journal.JOURNAL)) < 40, 5,
                   message="the compaction's swap")
        j.append("task", task=task("T41"))
        assert j.wait_synced() == ""
    finally:
        release.set()
        watchdog.cancel()
        j.close()
    image = journal.load(home)
    assert list(image.tasks) == [f"T{n}" for n in range(1, 42)]
    kept = journal.read_records(home / journal.JOURNAL)
    # The journal was compacted (once, or again after T41 on a slow machine:
    # then T41 is in the snapshot, as the image above shows).
    assert len(kept) < 41
    assert not kept or kept[-1]["task"]["id"] == "T41"


def test_a_callback_asked_for_inside_a_batch_waits_for_the_batchs_records(tmp_path):
    """A line is typed only once its record is on disk: asked for inside a
    batch, the callback waits for the batch's write and sync, not only for
    what was written before it (which may all be synced already)."""
    home = tmp_path / "state"
    j = Journal(home)
    j.start()
    j.append("task", task=task("T1"))
    assert j.wait_synced() == ""
    seen: list[set] = []
    with j.batch():
        j.append("task", task=task("T2"))
        j.after_sync(lambda: seen.append(set(journal.load(home).tasks)))
        assert seen == []
    wait_until(lambda: seen, 5, message="the callback")
    assert seen == [{"T1", "T2"}]
    j.close()
