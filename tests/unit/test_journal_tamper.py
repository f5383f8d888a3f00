"""Tampered journals: every record choragos would not write is a refusal.

A record edited with its checksum recomputed (a wrong type, a missing
field, a kind no version writes, a huge number, an id that is no task id)
must end in one JournalError naming the record, never in another
exception, and nothing on disk may change.  What loads must be what a
resume can restore.
"""

from __future__ import annotations

import copy
import json
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.actors.durable import task_from
from choragos.board import journal, journalcheck
from choragos.board.journal import JournalDamaged, JournalError, frame


def task(tid: str, state: str = "queued") -> dict:
    return {"id": tid, "role": "coder", "text": f"do {tid}", "brief": None, "state": state,
            "created": 1.0, "delivered": None, "finished": None, "report": None,
            "summary": None, "checkpoint": None, "note": "", "changes": None,
            "changed": None, "checks": "", "rounds": 0, "waiting": None}


def good_records() -> list[dict]:
    """A short session as choragos writes it."""
    rows = [
        {"kind": "session", "version": 1, "config": "/p/.choragos.toml", "pid": 7,
         "resumed": False},
        {"kind": "task", "task": task("T1")},
        {"kind": "enqueue", "id": 1, "role": "coder", "text": "New task T1", "what": "task",
         "task": "T1", "front": False},
        {"kind": "inflight", "id": 1, "role": "coder"},
        {"kind": "injected", "id": 1, "role": "coder", "requeued": False},
        {"kind": "task", "task": {**task("T1", "delivered"), "delivered": 2.0}},
        {"kind": "clock", "action": "start", "task": "T1", "role": "coder", "seconds": 60,
         "left": 60},
        {"kind": "role", "role": "coder", "restarts_used": 0, "restarts_total": 0,
         "paused": False},
        {"kind": "tokens", "totals": {"coder": {"m1": {"input": 3, "output": 1}}}},
        {"kind": "layout", "layout": {"kind": "tile", "role": "coder"}},
        {"kind": "task", "task": {**task("T2", "gated"), "waiting": None}},
        {"kind": "handoff", "config": "/p/next.toml", "wait": 300},
        {"kind": "alive"},
    ]
    return [{**row, "seq": n, "t": 100.0 + n} for n, row in enumerate(rows, 1)]


def write(home, records: list[dict]) -> bytes:
    home.mkdir(exist_ok=True)
    data = b"".join(frame(r) for r in records)
    (home / journal.JOURNAL).write_bytes(data)
    return data


def test_the_untampered_session_loads():
    records = good_records()
    assert all(journalcheck.record_problem(r) is None for r in records)


@pytest.mark.parametrize(("where", "change", "said"), [
    (1, {"task": {**task("T1"), "text": 5}}, "'text' that is not a string"),
    (2, {"role": None}, "'role' that is not a role name"),
    (3, {"role": "coder", "id": "1"}, "'id' that is not a whole number"),
    (6, {"left": "soon"}, "'left' that is not a number"),
    (1, {"kind": "teleport"}, "a kind no choragos writes ('teleport')"),
    (2, {"id": 10**40}, "'id' that is out of range"),
    (4, {"seq": 10**30}, "'seq' that is out of range"),
    (5, {"t": 1e300}, "'t' that is out of range"),
    (0, {"pid": 2**40}, "'pid' that is out of range"),
    (6, {"seconds": float("inf")}, "'seconds' that is out of range"),
    (1, {"task": {**task("T1"), "id": "../../etc/passwd"}}, "is not a task id"),
    (1, {"task": {**task("T1"), "id": "T" + "9" * 5000}}, "is not a task id"),
    (1, {"task": {**task("T1"), "state": "teleported"}}, "'state' that is not one of"),
    (1, {"task": {**task("T1"), "waiting": {"kind": "merge", "branch": "--upload-pack=x",
                                            "diff": "d"}}}, "is not a role's branch"),
    (8, {"totals": {"coder": {"m1": {"input": -1}}}}, "out of range"),
    (9, {"layout": json.loads('{"a":' * 200 + "1" + "}" * 200)}, "nested more than 64"),
    (2, {"task": ["T1"]}, "'task' that is not a task id"),
])
def test_each_tampered_record_is_a_refusal_naming_it(tmp_path, where, change, said):
    records = good_records()
    records[where] = {**records[where], **change}
    home = tmp_path / "state"
    data = write(home, records)
    with pytest.raises(JournalDamaged) as caught:
        journal.load(home)
    message = str(caught.value)
    assert said in message, message
    assert f"record {where + 1}" in message
    with pytest.raises(JournalDamaged):
        journal.Journal(home)  # the writer refuses it too, and cuts nothing
    assert (home / journal.JOURNAL).read_bytes() == data


@pytest.mark.parametrize("missing", [("enqueue", "role"), ("clock", "left"),
                                     ("task", "task"), ("session", "pid")])
def test_a_missing_field_is_named(tmp_path, missing):
    kind, name = missing
    records = good_records()
    index = next(i for i, r in enumerate(records) if r["kind"] == kind)
    del records[index][name]
    home = tmp_path / "state"
    write(home, records)
    with pytest.raises(JournalDamaged, match=f"has no field '{name}'"):
        journal.load(home)


def test_a_tampered_snapshot_is_refused(tmp_path):
    home = tmp_path / "state"
    home.mkdir()
    image = journal.fold(good_records()).to_dict()
    image["tasks"]["T1"]["role"] = "../x"
    (home / journal.SNAPSHOT).write_text(json.dumps({**image, "version": 1}))
    with pytest.raises(JournalError, match="is not a role name"):
        journal.load(home)


def test_a_lowered_task_counter_is_raised_past_every_task(tmp_path):
    records = good_records()
    records.append({"kind": "forget", "ids": [], "next_number": 1, "seq": 99, "t": 200.0})
    home = tmp_path / "state"
    write(home, records)
    assert journal.load(home).next_number == 3  # T1 and T2 exist: never handed out again


def test_damage_in_the_middle_is_refused_and_salvage_reads_past_it(tmp_path):
    home = tmp_path / "state"
    data = bytearray(write(home, good_records()))
    second = data.index(b"\n") + 1
    data[second + 30] ^= 0x01
    (home / journal.JOURNAL).write_bytes(bytes(data))
    with pytest.raises(JournalDamaged) as caught:
        journal.load(home)
    assert f"damaged at byte {second} (record 2" in str(caught.value)
    assert "with 11 whole records after it" in str(caught.value)
    image, damage = journal.load_readable(home)
    assert [d.offset for d in damage] == [second]
    assert set(image.tasks) == {"T1", "T2"} and image.clocks["T1"]["left"] == 60
    assert (home / journal.JOURNAL).read_bytes() == bytes(data)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats()
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=6)


@st.composite
def tampered(draw) -> list[dict]:
    """The good session with one field of one record (or of its task) replaced,
    added or removed."""
    records = copy.deepcopy(good_records())
    record = draw(st.sampled_from(records))
    target = record["task"] if "task" in record and isinstance(record["task"], dict) \
        and draw(st.booleans()) else record
    key = draw(st.sampled_from([*target, "extra"]))
    if draw(st.booleans()) and key in target:
        del target[key]
    else:
        target[key] = draw(JSON)
    return records


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(records=tampered())
def test_any_tampered_field_loads_cleanly_or_is_refused(tmp_path, records):
    home = tmp_path / "state"
    write(home, records)
    try:
        image = journal.load(home)
    except JournalError as exc:
        assert str(exc)
        return
    # What loads is what a resume can restore.
    assert journalcheck.snapshot_problem(image.to_dict()) is None
    for data in image.tasks.values():
        task_from(data)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0))
def test_a_journal_cut_anywhere_is_a_torn_tail_and_loads_its_whole_records(tmp_path, cut):
    home = tmp_path / "state"
    data = write(home, good_records())
    cut %= len(data) + 1
    (home / journal.JOURNAL).write_bytes(data[:cut])
    image = journal.load(home)
    whole = data[:cut].count(b"\n")
    assert image.seq == whole


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(min_value=0), flip=st.integers(min_value=1, max_value=255))
def test_any_byte_changed_before_the_last_record_is_refused_not_cut(tmp_path, at, flip):
    home = tmp_path / "state"
    data = bytearray(write(home, good_records()))
    last = data.rindex(b"\n", 0, len(data) - 1) + 1
    at %= last
    data[at] ^= flip
    (home / journal.JOURNAL).write_bytes(bytes(data))
    with pytest.raises(JournalDamaged):
        journal.load(home)
    with pytest.raises(JournalDamaged):
        journal.Journal(home)
    assert (home / journal.JOURNAL).read_bytes() == bytes(data)


def test_a_record_nested_past_the_parsers_depth_is_damage_not_a_crash(tmp_path):
    home = tmp_path / "state"
    records = good_records()
    data = bytearray(write(home, records[:3]))
    payload = b"[" * 100_000 + b"]" * 100_000
    data += b"%08x %08x " % (len(payload), zlib.crc32(payload)) + payload + b"\n"
    data += b"".join(frame(r) for r in records[3:])
    (home / journal.JOURNAL).write_bytes(bytes(data))
    with pytest.raises(JournalDamaged, match="record 4"):
        journal.load(home)
    (home / journal.JOURNAL).unlink()
    (home / journal.SNAPSHOT).write_bytes(payload)
    with pytest.raises(JournalError, match="cannot be read"):
        journal.load(home)
