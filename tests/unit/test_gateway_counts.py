"""The built-in gateway's counts journal: what it keeps, what it refuses, how it seeds."""

from __future__ import annotations

import json
import os
import threading

import pytest

from choragos.gateway.counts import (
    HEADER,
    CountsError,
    CountsFile,
    decode,
    load,
    session_path,
    whole_file,
)
from choragos.gateway.metrics import Tally


def _tally(path, report=None, **options) -> Tally:
    tally = Tally(CountsFile(path, report, **options))
    tally.persist(whole=True)  # as the gateway does at start
    return tally


def _answer(tally: Tally, tokens: int = 10) -> None:
    tally.add_tokens("coder", "m", {"input": tokens, "output": 3})
    tally.add_request("coder", "anthropic", 200)
    tally.persist()


def test_each_answer_is_one_appended_line_and_the_sum_reads_back(tmp_path):
    path = tmp_path / "counts.jsonl"
    tally = _tally(path)
    _answer(tally)
    tally.add_error("coder", "anthropic", "usage_unreadable")
    _answer(tally, 5)
    lines = path.read_text().splitlines()
    assert lines[0] == HEADER and len(lines) == 4  # header, start totals, two answers
    assert os.stat(path).st_mode & 0o777 == 0o600
    again = Tally()
    again.restore(load(path))
    assert again.counts() == tally.counts()
    assert again.tokens["coder", "m", "input"] == 15
    assert again.errors["coder", "anthropic", "usage_unreadable"] == 1


def test_nothing_new_appends_nothing(tmp_path):
    path = tmp_path / "counts.jsonl"
    tally = _tally(path)
    size = path.stat().st_size
    tally.persist()
    assert path.stat().st_size == size


def test_the_journal_is_compacted_past_its_limit_and_at_start(tmp_path):
    path = tmp_path / "counts.jsonl"
    tally = _tally(path, compact_at=300)
    for _ in range(20):
        _answer(tally)
    assert path.stat().st_size < 300 + 200
    assert load(path)["tokens"][("coder", "m", "input")] == 200
    restarted = Tally(CountsFile(path))
    restarted.restore(load(path))
    restarted.persist(whole=True)
    assert len(path.read_text().splitlines()) == 2
    assert load(path)["tokens"][("coder", "m", "input")] == 200


def test_no_file_is_nothing_to_restore_and_junk_is_a_clear_error(tmp_path):
    assert load(tmp_path / "absent.jsonl") is None
    for text, why in (("not json", r"counts file \(not JSON\)"),
                      ('{"version": 1}\n', "not a choragos gateway counts file$"),
                      ("", "not a choragos")):
        (tmp_path / "bad").write_text(text)
        with pytest.raises(CountsError, match=why):
            load(tmp_path / "bad")
    (tmp_path / "big").write_bytes(HEADER.encode() + b" " * (16 << 20))
    with pytest.raises(CountsError, match="larger than"):
        load(tmp_path / "big")


def test_a_link_is_not_read_through(tmp_path):
    (tmp_path / "real.jsonl").write_text(whole_file({}))
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "real.jsonl")
    with pytest.raises(CountsError, match="cannot read it"):
        load(tmp_path / "link.jsonl")


def test_a_line_cut_short_and_bad_rows_are_skipped_good_ones_kept():
    text = (HEADER + '\n{"tokens":[["a","m","input",5],["a","m","output",-1],["a","m",3,4],'
            '["a","m","input"],["b","m","input",true],["a","m","input",1e40],'
            '["a","m","output",10000000000000000000000000000000000000000],"x"],"requests":7}\n'
            '[1]\n'
            '{"tokens":[["a","m","input",2]]}\n{"tokens":[["a","m","inp')
    assert decode(text) == {"tokens": {("a", "m", "input"): 7}, "requests": {}, "errors": {}}


def test_the_sessions_totals_are_a_floor_not_an_addition():
    tally = Tally()
    tally.restore({"tokens": {("coder", "m", "input"): 500, ("coder", "m", "output"): 9}})
    tally.seed({"coder": {"m": {"input": 300, "output": 20, "cache_read": "x"}},
                "junk": ["not", "a", "dict"]})
    assert tally.tokens == {("coder", "m", "input"): 500, ("coder", "m", "output"): 20}


def test_concurrent_answers_are_each_counted_once(tmp_path):
    path = tmp_path / "counts.jsonl"
    tally = _tally(path, compact_at=2000)  # compactions interleave with the appends

    def answers() -> None:
        for _ in range(50):
            _answer(tally, 1)

    threads = [threading.Thread(target=answers) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert load(path)["tokens"][("coder", "m", "input")] == 200
    assert load(path)["requests"][("coder", "anthropic", "200")] == 200


def test_a_failed_write_is_reported_once_and_the_next_good_one_holds_everything(tmp_path):
    import resource

    lines: list[str] = []
    path = tmp_path / "counts.jsonl"
    tally = _tally(path, lines.append)
    _answer(tally)
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    # Files may not grow past 50 bytes (root too): as good as a full disk.
    resource.setrlimit(resource.RLIMIT_FSIZE, (50, limits[1]))
    try:
        for _ in range(3):
            _answer(tally)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
    assert len(lines) == 1 and "cannot write the counts file" in lines[0]
    assert tally.tokens["coder", "m", "input"] == 40
    assert load(path)["tokens"][("coder", "m", "input")] == 10
    _answer(tally)
    assert lines[-1].endswith("written again")
    assert load(path)["tokens"][("coder", "m", "input")] == 50


def test_the_session_keeps_its_file_in_the_state_directory(tmp_path):
    assert session_path(tmp_path) == tmp_path / ".choragos" / "state" / "gateway-counts.jsonl"


def test_a_counts_file_full_of_made_up_roles_is_restored_bounded(tmp_path):
    """Counts the gateway once kept for thousands of made-up roles (a file written
    before labels were bounded, or tampered with) must not come back as thousands
    of /metrics lines: the restored tally is bounded like a live one."""
    from choragos.gateway.labels import MAX_AGENTS, UNKNOWN
    from choragos.gateway.metrics import exposition

    rows = [[f"made-up-{n}", "anthropic", "404", 1] for n in range(10_000)]
    tokens = [[f"made-up-{n}", f"model-{n}", "input", 5] for n in range(10_000)]
    path = tmp_path / "counts.jsonl"
    path.write_text(HEADER + "\n" + json.dumps({"requests": rows, "tokens": tokens}) + "\n")
    tally = Tally()
    tally.restore(load(path))
    agents = {key[0] for key in tally.requests}
    assert len(agents) == MAX_AGENTS + 1 and UNKNOWN in agents
    assert sum(tally.requests.values()) == 10_000  # folded, not dropped
    assert sum(tally.tokens.values()) == 50_000
    assert len(exposition(tally)) < 32 << 10
