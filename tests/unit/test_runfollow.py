"""The web page's timeline follows the event log: what a follower holds is
always what reading the whole log gives, and a look reads only what the log
gained."""

import dataclasses
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.board import events, report, runfollow, timeline

ROLES = ["a", "b"]

# What a session appends: the run markers the follower splits on, task
# records the timeline folds, and damage the report skips.
STEPS = st.lists(st.one_of(
    st.sampled_from(["deck starting", "session resumed", "poll", "poll", "damaged",
                     "empty", "torn"]),
    st.tuples(st.sampled_from(["delegate", "delivered", "work-done", "role state",
                               "tokens"]),
              st.sampled_from(ROLES), st.integers(0, 5)),
), max_size=60)


def _whole_run(path: Path) -> list[dict]:
    try:
        runs = report.split_runs(report.read_log(path).records)
    except FileNotFoundError:
        return []
    return runs[-1] if runs else []


def _append(log: events.EventLog, step: object) -> None:
    if isinstance(step, tuple):
        event, role, n = step
        log.append(event, role=role, task=f"T{n}", outcome="done", state="paused",
                   input=n * 100, output=n, cache_read=0, cache_creation=0, model="m")
    elif step in ("deck starting", "session resumed"):
        log.append(step)
    elif step in ("damaged", "empty"):
        with open(log.path, "ab") as handle:
            handle.write(b"{not json\n" if step == "damaged" else b"\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_a_follower_holds_what_the_whole_log_gives(steps):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        log = events.EventLog(path, max_bytes=900)  # rotates every few records
        follower = runfollow.RunFollower(path)
        builder = [timeline.Builder(ROLES, lambda model: None)]

        def look() -> None:
            fresh, records = follower.poll()
            if fresh:
                builder[0] = timeline.Builder(ROLES, lambda model: None)
                assert records is follower.run
            for record in records:
                builder[0].add(record)

        try:
            for step in [*steps, "poll"]:
                if step == "torn":  # a line still being written is not read yet
                    with open(path, "ab") as handle:
                        handle.write(b'{"t": 1.0, "event": "delegate"')
                    look()
                    with open(path, "ab") as handle:
                        handle.write(b', "task": "T9", "role": "a"}\n')
                if step != "poll":
                    _append(log, step)
                    continue
                look()
                whole = _whole_run(path)
                assert follower.run == whole
                line = builder[0].timeline()
                if whole:
                    built = timeline.build(whole, ROLES, lambda model: None)
                    assert timeline.to_wire(line) == dataclasses.asdict(built)
                else:
                    assert line is None
        finally:
            log.close()


def test_a_look_reads_only_what_the_log_gained(tmp_path, monkeypatch):
    path = tmp_path / "events.jsonl"
    log = events.EventLog(path)
    for n in range(200):
        log.append("delegate", role="a", task=f"T{n}")
    follower = runfollow.RunFollower(path)
    fresh, records = follower.poll()
    assert fresh and len(records) == 200

    def whole_read(*args, **kwargs):
        raise AssertionError("the whole log was read again")

    monkeypatch.setattr(report, "read_log", whole_read)
    assert follower.poll() == (False, [])
    added = log.append("work-done", role="a", task="T3")
    fresh, records = follower.poll()
    assert not fresh and [r["event"] for r in records] == ["work-done"]
    assert records[0]["t"] == added["t"]
    log.close()


def test_a_rotation_reads_the_log_again(tmp_path):
    path = tmp_path / "events.jsonl"
    log = events.EventLog(path, max_bytes=2000)
    log.append("deck starting")
    follower = runfollow.RunFollower(path)
    follower.poll()
    while not (tmp_path / "events.jsonl.1").exists():
        log.append("delegate", role="a", task="T1")
    fresh, records = follower.poll()
    assert fresh and records == _whole_run(path)
    assert records[0]["event"] == "deck starting"  # the run began in the rotated file
    log.close()


def test_a_new_log_that_reuses_the_followed_files_number_is_read_again(tmp_path, monkeypatch):
    """Rotations remove the oldest file, and a log made after them may get the
    number of the one that was followed (tmpfs and ext4 hand numbers out
    again): the follower still sees the rotation and reads the run again."""
    path = tmp_path / "events.jsonl"
    log = events.EventLog(path, max_bytes=900)
    follower = runfollow.RunFollower(path)
    assert follower.poll() == (True, [])  # the log is there, empty
    followed = runfollow._key(os.stat(path))
    log.append("deck starting")
    while os.stat(path).st_size:
        log.append("delegate", role="a", task="T1")
    real_key = runfollow._key
    monkeypatch.setattr(runfollow, "_key", lambda st: (
        followed if (st.st_dev, st.st_ino) == real_key(os.stat(path)) else real_key(st)))
    fresh, records = follower.poll()
    assert fresh and records == _whole_run(path) and records[0]["event"] == "deck starting"
    log.close()


def test_a_missing_log_is_an_empty_run(tmp_path):
    follower = runfollow.RunFollower(tmp_path / "events.jsonl")
    assert follower.poll() == (True, [])
    assert follower.run == []


def test_the_wire_form_is_the_dataclass_form():
    line = timeline.Timeline(1.0, 9.0, ["a"], [timeline.Bar("a", "T1", "x", 1.0, 2.0, "done",
                                                            (1.0, 1.5))],
                             [timeline.Mark("a", 3.0, "restart", "r")],
                             [timeline.Span("a", 4.0, None)], [(5.0, 0.25)])
    assert timeline.to_wire(line) == dataclasses.asdict(line)
    fields = {f.name for f in dataclasses.fields(timeline.Bar)}
    assert set(timeline.to_wire(line)["bars"][0]) == fields


@pytest.mark.parametrize("ending", [b"\r\n", b"\n"])
def test_line_endings_read_as_the_report_reads_them(tmp_path, ending):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"t": 1, "event": "deck starting"}' + ending
                     + b'{"t": 2, "event": "delegate", "task": "T1", "role": "\xff"}' + ending)
    follower = runfollow.RunFollower(path)
    follower.poll()
    assert follower.run == _whole_run(path)


def test_a_log_cut_short_is_read_again(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"t": 1, "event": "deck starting"}\n{"t": 2, "event": "delegate"}\n')
    follower = runfollow.RunFollower(path)
    follower.poll()
    with open(path, "r+") as handle:  # emptied in place, the same file
        handle.truncate(0)
        handle.write('{"t": 3, "event": "delegate", "task": "T1"}\n')
    fresh, records = follower.poll()
    assert fresh and [r["t"] for r in records] == [3]


def test_the_web_view_folds_on_from_its_last_look(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from choragos.actors.websession import WebAccess

    log = events.EventLog(events.default_path(tmp_path))
    log.append("deck starting")
    log.append("delegate", role="a", task="T1", label="first")
    spec = SimpleNamespace
    roles = SimpleNamespace(config=SimpleNamespace(roles=[spec(name="a")],
                                                   price_for=lambda model: None))
    access = WebAccess(roles, None, tmp_path)
    assert [b["task"] for b in access.timeline()["bars"]] == ["T1"]

    def whole_read(*args, **kwargs):
        raise AssertionError("the whole log was read again")

    monkeypatch.setattr(report, "read_log", whole_read)
    log.append("work-done", role="a", task="T1")
    log.append("delegate", role="a", task="T2", label="second")
    line = access.timeline()
    assert [(b["task"], b["outcome"]) for b in line["bars"]] == [("T1", "done"), ("T2", "open")]
    roles.config = SimpleNamespace(roles=[spec(name="a"), spec(name="b")],
                                   price_for=lambda model: None)  # a reload added a role
    assert access.timeline()["roles"] == ["a", "b"]
    log.close()
