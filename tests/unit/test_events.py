import json

from choragos.board.events import EventLog, read_events


def test_records_are_whole_lines(tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    log.write("delegate", task="T1", text="multi\nline \x1b[31m")
    log.close()
    records = list(read_events(tmp_path / "events.jsonl"))
    assert records[0]["event"] == "delegate"
    assert records[0]["text"] == "multi\nline \x1b[31m"
    assert (tmp_path / "events.jsonl").read_text().count("\n") == 1


def test_torn_tail_is_skipped(tmp_path):
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.write("a")
    log.write("b")
    log.close()
    with open(path, "a") as handle:
        handle.write('{"event": "c", "tor')
    assert [r["event"] for r in read_events(path)] == ["a", "b"]


def test_rotation(tmp_path):
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=2000)
    for n in range(200):
        log.write("tick", n=n)
    log.close()
    rotated = path.with_name("events.jsonl.1")
    assert rotated.exists() and path.stat().st_size < 2000 + 200
    numbers = [r["n"] for r in read_events(rotated)] + [r["n"] for r in read_events(path)]
    assert numbers == sorted(numbers)
    assert json.loads(path.read_text().splitlines()[-1])["n"] == 199
