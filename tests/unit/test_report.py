import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.board import reporttable
from choragos.board.report import build, read_log, split_runs
from choragos.cli import report as cli

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_780_000_000.0  # an arbitrary fixed epoch, so runs are reproducible


def ev(t, event, **fields):
    return {"t": T0 + t, "ts": "-", "event": event, **fields}


def start(t, workdir="/proj"):
    return ev(t, "deck starting", version="0.1.0", pid=1, mode="headless", dir=workdir,
              config="built-in")


def two_role_run(offset=0.0):
    """lead orchestrates; dev gets T1..T3 and never reports T3."""
    o = offset
    return [
        start(o + 0),
        ev(o + 1, "role state", role="lead", state="idle", was="booting"),
        ev(o + 2, "role state", role="dev", state="idle", was="booting"),
        ev(o + 10, "delegate", task="T1", role="dev", label="one", text="x", brief=None),
        ev(o + 12, "delivered", task="T1", role="dev"),
        ev(o + 72, "work-done", task="T1", role="dev", summary="ok", report=None,
           done=True, note=None),
        ev(o + 80, "delegate", task="T2", role="dev", label="two", text="y", brief=None),
        # no "delivered": the time counts from the delegation
        ev(o + 200, "work-done", task="T2", role="dev", summary="ok", report=None,
           done=True, note=None),
        ev(o + 205, "delegate", task="T3", role="dev", label="three", text="z", brief=None),
        ev(o + 206, "delivered", task="T3", role="dev"),
        ev(o + 230, "injection", role="lead", kind="report", ok=True, detail="", task="T2"),
        ev(o + 300, "deck stopped", pid=1),
    ]


def write_log(path, records, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return path


def run_cli(capsys, *argv):
    code = cli.run([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def hms(t):
    return time.strftime("%H:%M:%S", time.localtime(T0 + t))


def test_two_role_run_table(tmp_path, capsys):
    log = write_log(tmp_path / "events.jsonl", two_role_run())
    code, out, _ = run_cli(capsys, log)
    assert code == 0
    lines = out.splitlines()
    local = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(T0))
    assert lines[0] == f"run {local} · wall 5m · /proj"
    assert lines[1] == "" and lines[2].split() == ["ROLE", "TASKS", "DONE", "FAILED",
                                                   "BLOCKED", "BUDGET", "BUSY", "AVG",
                                                   "FIRST", "LAST", "TOKENS", "COST"]
    rows = {line.split()[0]: line.split() for line in lines[3:5]}
    # T1: 12 -> 72 = 60 s; T2: 80 -> 200 = 120 s (no delivery); avg 90 s
    assert rows["dev"] == ["dev", "3", "2", "0", "0", "-", "3m", "1m30s", hms(2), hms(206),
                           "n/a", "n/a"]
    assert rows["lead"] == ["lead", "-", "-", "-", "-", "-", "-", "-", hms(1), hms(230), "n/a",
                            "n/a"]
    assert lines[5:] == ["", "1 task never reported work-done", "T3"]


def test_busy_avg_and_first_last_numbers(tmp_path):
    read = read_log(write_log(tmp_path / "e.jsonl", two_role_run()))
    summary = build(split_runs(read.records))
    dev = next(r for r in summary.roles if r.name == "dev")
    assert (dev.tasks, dev.done, dev.busy, dev.avg) == (3, 2, 180.0, 90.0)
    assert (dev.first, dev.last) == (T0 + 2, T0 + 206)
    assert summary.never_reported == ["T3"] and summary.wall == 300


def test_rejected_and_unmatched_reports_are_not_counted(tmp_path):
    records = [start(0),
               ev(1, "delegate", task="T1", role="dev", label="a", text="a", brief=None),
               ev(2, "gate rejected", task="T1", role="dev", reason="no"),
               ev(3, "work-done", task="T9", role="unknown", summary="?", report=None,
                  done=True, note="unknown task id T9")]
    summary = build(split_runs(records))
    assert [r.name for r in summary.roles] == ["dev"]
    assert summary.roles[0].done == 0 and summary.never_reported == []


def test_a_second_work_done_for_one_task_counts_once(tmp_path):
    done = {"summary": "ok", "report": None, "done": True, "note": None}
    records = [start(0),
               ev(10, "delegate", task="T1", role="dev", label="a", text="a", brief=None),
               ev(12, "delivered", task="T1", role="dev"),
               ev(40, "work-done", task="T1", role="dev", **done),
               ev(90, "work-done", task="T1", role="dev", **done)]  # a repeated report
    dev = build(split_runs(records)).roles[0]
    assert (dev.tasks, dev.done, dev.busy, dev.avg) == (1, 1, 28.0, 28.0)


def test_a_rerouted_task_is_counted_for_the_role_that_took_it():
    """A limited role's queued task given to a free one is the taker's on the
    board: its row (tasks, done, time) is the taker's, as the board says."""
    done = {"summary": "ok", "report": None, "done": True, "note": None}
    records = [start(0),
               ev(10, "delegate", task="T1", role="dev", label="a", text="a", brief=None),
               ev(11, "task rerouted", task="T1", role="ops", was="dev", reason="limit"),
               ev(12, "delivered", task="T1", role="ops"),
               ev(40, "work-done", task="T1", role="ops", **done)]
    rows = {r.name: (r.tasks, r.done, r.busy, r.timed) for r in build(split_runs(records)).roles}
    assert rows == {"dev": (0, 0, 0.0, 0), "ops": (1, 1, 28.0, 1)}


def test_work_failed_by_its_checks_counts_as_the_board_says():
    """Reported done, then failed by its verify or rejected at a hold: failed
    on the board, and was counted done here; a fixed one is done again."""
    done = {"summary": "ok", "report": None, "done": True, "note": None}

    def delegated(t, task):
        return [ev(t, "delegate", task=task, role="dev", label="a", text="a", brief=None),
                ev(t, "delivered", task=task, role="dev"),
                ev(t + 1, "work-done", task=task, role="dev", **done)]

    records = [start(0), *delegated(1, "T1"), *delegated(2, "T2"), *delegated(3, "T3"),
               *delegated(4, "T4"),
               ev(10, "verify failed", task="T1", role="dev", round=1, rounds=0),
               ev(11, "verify failed", task="T2", role="dev", round=1, rounds=1),
               ev(20, "work-done", task="T2", role="dev", **done),  # fixed
               ev(21, "held work rejected", task="T3", role="dev", kind="owner"),
               ev(22, "held work approved", task="T4", role="dev", kind="judge")]
    dev = build(split_runs(records)).roles[0]
    assert (dev.tasks, dev.done, dev.failed) == (4, 2, 2)


def test_failed_and_blocked_outcomes_are_counted_apart(tmp_path):
    def delegate(t, task):
        return ev(t, "delegate", task=task, role="dev", label="a", text="a", brief=None)

    def report(t, task, outcome=None):
        extra = {"outcome": outcome} if outcome else {}
        return ev(t, "work-done", task=task, role="dev", summary="s", report=None,
                  done=False, **extra)

    records = [start(0), *(delegate(n, f"T{n}") for n in range(1, 6)),
               report(10, "T1", "failed"), report(11, "T2", "blocked"), report(12, "T3"),
               ev(13, "task failed", task="T4", role="dev", reason="dev exited"),
               ev(14, "task failed", task="T5", role="dev", reason="dev exited"),
               report(15, "T5", "done"), report(16, "T2", "done")]
    dev = build(split_runs(records)).roles[0]
    # T1 failed; T2 blocked then done; T3 done (no outcome: done, as before);
    # T4 failed by the session; T5 failed by the session, then reported done.
    assert (dev.done, dev.failed, dev.blocked) == (3, 2, 0)
    assert dev.timed == 4


def test_budgets_and_their_crossings_are_shown(tmp_path, capsys):
    records = [start(0), ev(0.5, "budgets", roles={"dev": {"usd": 1.5, "tokens": None},
                                                    "qa": {"usd": None, "tokens": 500000}},
                            session=20.0),
               ev(1, "delegate", task="T1", role="dev", label="a", text="a", brief=None),
               ev(2, "over budget", role="dev", spent="$1.60 of $1.50"),
               ev(3, "over budget", scope="session", spent="$21.00 of $20.00")]
    log = write_log(tmp_path / "e.jsonl", records)
    _, out, _ = run_cli(capsys, log)
    lines = out.splitlines()
    assert lines[1] == "session budget $20.00; crossed: every role was paused"
    rows = {line.split()[0]: line for line in lines[4:6]}
    assert "$1.50 over" in rows["dev"] and "500.0k tok" in rows["qa"]
    _, out, _ = run_cli(capsys, log, "--json")
    data = json.loads(out)
    assert data["session_budget"] == {"usd": 20.0, "over": True}
    budgets = {r["role"]: r["budget"] for r in data["roles"]}
    assert budgets == {"dev": {"usd": 1.5, "tokens": None, "over": True},
                       "qa": {"usd": None, "tokens": 500000, "over": False}}


def test_last_run_by_default_and_all_adds_up(tmp_path, capsys):
    log = write_log(tmp_path / "e.jsonl", two_role_run() + two_role_run(offset=1000))
    _, last, _ = run_cli(capsys, log, "--json")
    _, both, _ = run_cli(capsys, log, "--all", "--json")
    last, both = json.loads(last), json.loads(both)
    assert last["runs"] == 1 and last["start"] == T0 + 1000 and last["wall"] == 300
    assert both["runs"] == 2 and both["start"] == T0 and both["wall"] == 600
    dev = {r["role"]: r for r in both["roles"]}["dev"]
    assert (dev["tasks"], dev["done"], dev["busy"]) == (6, 4, 360.0)
    assert (dev["first"], dev["last"]) == (T0 + 2, T0 + 1206)
    assert both["never_reported"] == ["T3", "T3"]
    _, text, _ = run_cli(capsys, log, "--all")
    assert text.startswith("2 runs from ") and "· wall 10m · /proj" in text.splitlines()[0]


def test_torn_last_line_reads_up_to_it_with_a_note(tmp_path, capsys):
    log = write_log(tmp_path / "e.jsonl", two_role_run(), tail='{"t": 1, "event": "deleg')
    code, out, err = run_cli(capsys, log)
    assert code == 0 and "1 task never reported" in out
    assert f"{log} is damaged after line 12; read up to there" in err


def test_garbage_middle_lines_are_skipped_and_the_rest_is_read(tmp_path, capsys):
    records = two_role_run()
    clean = write_log(tmp_path / "clean.jsonl", records)
    _, whole, _ = run_cli(capsys, clean, "--json")
    lines = [json.dumps(r) for r in records[:6]] + ["\x00\x01 not json"]
    lines += [json.dumps(r) for r in records[6:9]] + ['{"t": 1e300, "event": "delegate"}']
    lines += [json.dumps(r) for r in records[9:]]
    log = tmp_path / "e.jsonl"
    log.write_text("\n".join(lines) + "\n")
    read = read_log(log)
    assert read.damaged_after == 6 and read.records == records and read.damaged_lines == 2
    code, out, err = run_cli(capsys, log, "--json")
    data = json.loads(out)
    assert code == 0 and data["damaged_after"] == 6 and data["damaged_in"] == str(log)
    assert data["roles"] == json.loads(whole)["roles"]  # nothing after the garbage lost
    assert "damaged after line 6: 2 damaged lines skipped, every other line read" in err


def test_a_forged_timestamp_is_a_damaged_line_not_a_crash(tmp_path, capsys):
    records = two_role_run()
    records[3] = {**records[3], "t": 1e300}
    log = write_log(tmp_path / "e.jsonl", records)
    code, out, err = run_cli(capsys, log)
    assert code == 0 and "dev" in out
    assert "damaged after line 3: 1 damaged line skipped" in err


def test_a_run_that_outlived_rotations_is_read_whole_oldest_file_first(tmp_path, capsys):
    records = two_role_run()
    log = tmp_path / "events.jsonl"
    parts = {log.with_name("events.jsonl.2"): records[:4], log.with_name("events.jsonl.1"):
             records[4:8], log: records[8:]}
    for path, part in parts.items():
        write_log(path, part)
    read = read_log(log)
    assert read.records == records and read.damaged_after is None
    assert read.files == [str(p) for p in parts]
    code, out, _ = run_cli(capsys, log, "--json")
    assert code == 0 and json.loads(out)["runs"] == 1  # from its start in the oldest file
    assert {r["role"]: r["tasks"] for r in json.loads(out)["roles"]}["dev"] == 3
    # A rotated file named on its own is read alone.
    assert read_log(log.with_name("events.jsonl.1")).records == records[4:8]


def test_a_damaged_rotated_file_keeps_its_good_lines_and_the_newer_files(tmp_path, capsys):
    records = two_role_run()
    older = tmp_path / "events.jsonl.1"
    older.write_text("".join(json.dumps(r) + "\n" for r in records[:5]) + "garbage\n"
                     + json.dumps(records[5]) + "\n")
    log = write_log(tmp_path / "events.jsonl", records[6:])
    read = read_log(log)
    assert read.records == records
    assert (read.damaged_after, read.damaged_in) == (5, str(older))
    code, _, err = run_cli(capsys, log)
    assert code == 0 and f"{older} is damaged after line 5: 1 damaged line skipped" in err


def test_a_rotated_name_that_is_a_link_or_a_fifo_is_skipped_never_followed(tmp_path, capsys):
    """Rotated logs are found by name in a directory agents can write to: a
    link planted there (to a file of events from elsewhere, or anything)
    is not read, and a FIFO does not hang the report."""
    records = two_role_run()
    outside = write_log(tmp_path / "elsewhere.jsonl", records[:4])
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "events.jsonl.2").symlink_to(outside)
    os.mkfifo(logs / "events.jsonl.1")
    log = write_log(logs / "events.jsonl", records[4:])
    read = read_log(log)
    assert read.records == records[4:] and read.files == [str(log)]
    assert read.skipped == [f"{logs / 'events.jsonl.2'} (a symbolic link; rotated logs are "
                            "read only as regular files)",
                            f"{logs / 'events.jsonl.1'} (not a regular file)"]
    code, _, err = run_cli(capsys, log)
    assert code == 0 and err.count("note: skipped") == 2
    code, out, _ = run_cli(capsys, log, "--json")
    assert code == 0 and json.loads(out)["skipped"] == read.skipped
    # The log named on the command line is the reader's choice, link or not.
    named = tmp_path / "named.jsonl"
    named.symlink_to(outside)
    assert read_log(named).records == records[:4]


def test_missing_log_is_one_sentence_and_exit_1(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "no event log at" in err
    assert ".choragos/logs/events.jsonl" in err


def test_json_shape(tmp_path, capsys):
    log = write_log(tmp_path / "e.jsonl", two_role_run())
    code, out, _ = run_cli(capsys, log, "--json")
    data = json.loads(out)
    assert code == 0
    assert set(data) == {"ok", "verb", "runs", "start", "start_local", "wall", "dirs",
                         "damaged_after", "damaged_in", "skipped", "roles", "never_reported",
                         "session_budget", "changes", "rollbacks"}
    assert (data["ok"], data["verb"]) == (True, "report")
    assert data["dirs"] == ["/proj"] and data["damaged_after"] is None
    dev = {r["role"]: r for r in data["roles"]}["dev"]
    assert dev == {"role": "dev", "tasks": 3, "done": 2, "failed": 0, "blocked": 0,
                   "budget": None, "busy": 180.0, "avg": 90.0,
                   "limits": 0, "limited": 0.0, "refused": 0,
                   "first": T0 + 2, "last": T0 + 206, "tokens": None, "models": {},
                   "cost": None, "estimated": []}


def test_rollbacks_are_listed_with_who_asked_and_the_undo(tmp_path, capsys):
    records = [
        *two_role_run()[:-1],
        ev(240, "rollback", target="refs/choragos/checkpoints/1-T1", task="T1",
           checkpoint="refs/choragos/checkpoints/1-T1", restored=3, deleted=1,
           saved="pre-rollback-T1", by="operator"),
        ev(250, "rollback failed", target="T9", error="no checkpoint for 'T9'",
           by="operator"),
        ev(260, "rollback", target="x", task="pre-rollback-T1", checkpoint="x", restored=1,
           deleted=0, saved=None, by="operator"),
        ev(300, "deck stopped", pid=1)]
    log = write_log(tmp_path / "events.jsonl", records)
    code, out, _ = run_cli(capsys, log)
    assert code == 0
    tail = out.splitlines()[-4:]
    assert tail == [
        "3 rollbacks:",
        f"  {hms(240)}  to before T1 by operator: restored 3, deleted 1; "
        "undo: choragos rollback pre-rollback-T1",
        f"  {hms(250)}  T9 by operator: failed: no checkpoint for 'T9'",
        f"  {hms(260)}  to before pre-rollback-T1 by operator: restored 1, deleted 0"]
    code, out, _ = run_cli(capsys, log, "--json")
    first, failed, undo = json.loads(out)["rollbacks"]
    assert first == {"run": 1, "t": T0 + 240, "ok": True, "task": "T1",
                     "target": "refs/choragos/checkpoints/1-T1", "by": "operator",
                     "restored": 3, "deleted": 1, "undo": "pre-rollback-T1", "error": None}
    assert (failed["ok"], failed["target"], failed["error"]) == (False, "T9",
                                                                 "no checkpoint for 'T9'")
    assert (undo["task"], undo["undo"]) == ("pre-rollback-T1", None)


def test_a_run_without_rollbacks_says_nothing_of_them(tmp_path, capsys):
    code, out, _ = run_cli(capsys, write_log(tmp_path / "e.jsonl", two_role_run()))
    assert code == 0 and "rollback" not in out


def test_tokens_events_fill_the_column(tmp_path, capsys):
    def tokens(t, n, model="m1"):
        return ev(t, "tokens", role="dev", model=model, input=n, output=n // 10,
                  cache_read=0, cache_creation=0)

    # cumulative counters: the last value counts, a drop means a restart
    records = [*two_role_run()[:-1], tokens(240, 100_000), tokens(250, 160_000),
               tokens(260, 20_000), tokens(270, 1_000, "m2")]
    code, out, _ = run_cli(capsys, write_log(tmp_path / "e.jsonl", records))
    assert code == 0
    dev = next(line for line in out.splitlines() if line.startswith("dev"))
    # (160_000 + 16_000) + (20_000 + 2_000) + (1_000 + 100)
    assert dev.split()[-2:] == ["199.1k", "n/a"]  # no [pricing] here
    assert reporttable.tokens_text({"input": 1_400_000}) == "1.4M"
    assert reporttable.tokens_text({"input": 950}) == "950"


def test_tokens_are_priced_per_model_with_the_pricing_table(tmp_path, capsys):
    def tokens(t, role, model, n):
        return ev(t, "tokens", role=role, model=model, input=n, output=n // 10,
                  cache_read=2 * n, cache_creation=0)

    records = [*two_role_run()[:-1], tokens(240, "dev", "opus-4", 1_000_000),
               tokens(241, "dev", "haiku", 2_000_000), tokens(242, "lead", "mystery", 10)]
    config = tmp_path / "c.toml"
    config.write_text('[[roles]]\nname = "lead"\ncommand = "sh"\nstart = true\n\n'
                      '[pricing."opus"]\ninput = 15.0\noutput = 75.0\ncache_read = 1.5\n\n'
                      '[pricing."haiku"]\ninput = 1.0\noutput = 5.0\n')
    log = write_log(tmp_path / "e.jsonl", records)
    code, out, _ = run_cli(capsys, log, "--config", config)
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:5]}
    # opus: 15 + 0.1 * 75 + 2 * 1.5 = 25.50; haiku: 2 * 1 + 0.2 * 5 = 3.00
    assert rows["dev"][-1] == "$28.50"
    # A model [pricing] lacks: each direction at the highest price the table has
    # (15 + 0.1 * 75 + 2 * 1.5 per million of 10), marked an estimate.
    assert rows["lead"][-1] == "~$0.0003"
    _, as_json, _ = run_cli(capsys, log, "--config", config, "--json")
    roles = {r["role"]: r for r in json.loads(as_json)["roles"]}
    assert roles["dev"]["cost"] == pytest.approx(28.5)
    assert roles["dev"]["models"]["haiku"]["input"] == 2_000_000
    assert roles["lead"]["cost"] == pytest.approx(255e-6)
    assert roles["lead"]["estimated"] == ["mystery"] and roles["dev"]["estimated"] == []


@pytest.mark.parametrize("body", ["[[roles]\nname = ", None])
def test_a_config_named_with_config_that_does_not_load_is_a_usage_error(
        tmp_path, capsys, body):
    """Named to price the table: a table without prices would pass for priced."""
    config = tmp_path / "c.toml"
    if body is not None:
        config.write_text(body)
    log = write_log(tmp_path / "e.jsonl", two_role_run())
    page = tmp_path / "page.html"
    code, out, err = run_cli(capsys, log, "--config", config, "--html", page)
    assert code == 2 and out == "" and not page.exists()
    assert err.startswith(f"choragos report: the --config file does not load: {config}")
    assert err.endswith("; fix it, or leave --config out\n") and err.count("\n") == 1
    code, out, _ = run_cli(capsys, log, "--config", config, "--json")
    assert code == 2 and json.loads(out)["ok"] is False


@pytest.mark.parametrize(("argv", "said"), [
    (["--html", ""], "argument --html: an empty path; give one, or leave it out"),
    (["--html", "."], "argument --html: . is a directory; name the page's file"),
    (["--html", ".."], "argument --html: .. is a directory; name the page's file"),
    (["--config", ""], "argument --config: an empty path; give one, or leave it out"),
    ([""], "argument LOG: an empty path; give one, or leave it out"),
])
def test_an_empty_name_or_a_directory_for_a_file_is_one_usage_line(
        tmp_path, capsys, monkeypatch, argv, said):
    """``--html ''`` was a traceback (the page's name taken from ``.``); an
    empty LOG or --config quietly meant the default."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".choragos" / "logs").mkdir(parents=True)
    write_log(tmp_path / ".choragos" / "logs" / "events.jsonl", two_role_run())
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 2 and json.loads(out)["ok"] is False
    assert err.startswith(f"choragos report: {said}") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".choragos"]  # nothing written


def test_a_broken_project_config_only_leaves_cost_unpriced(tmp_path, capsys, monkeypatch):
    (tmp_path / ".choragos.toml").write_text("[[roles]\nname = ")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, write_log(tmp_path / "e.jsonl", two_role_run()))
    assert code == 0 and "COST" in out and "note: no prices (" in err


def test_escape_sequences_from_the_log_are_never_printed_raw(tmp_path, capsys):
    evil = "dev\x1b]0;pwned\x07\x1b[2J"
    records = [start(0, workdir="/p\x1b[31mroj"),
               ev(1, "delegate", task="T\x1b[1m1", role=evil, label="\x1b[5mx", text="x",
                  brief=None)]
    code, out, err = run_cli(capsys, write_log(tmp_path / "e.jsonl", records))
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\x1b" not in err
    _, as_json, _ = run_cli(capsys, tmp_path / "e.jsonl", "--json")
    assert "\x1b" not in as_json and json.loads(as_json)["roles"][0]["role"] == evil


def test_empty_log_says_so(tmp_path, capsys):
    code, out, err = run_cli(capsys, write_log(tmp_path / "e.jsonl", []))
    assert code == 1 and out == "" and "holds no events" in err


def test_cli_as_a_real_subprocess(tmp_path):
    log = write_log(tmp_path / "events.jsonl", two_role_run())
    done = subprocess.run([sys.executable, "-m", "choragos", "report", str(log)],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("run ") and "1 task never reported work-done" in done.stdout
    missing = subprocess.run([sys.executable, "-m", "choragos", "report"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=30,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                  "XDG_RUNTIME_DIR": str(tmp_path)})
    assert missing.returncode == 1 and "no event log" in missing.stderr


def test_report_module_imports_no_heavy_dependency():
    code = ("import sys, choragos.cli.report; "
            "print(sorted(m for m in ('pykka', 'pyte', 'urwid', 'dulwich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    assert done.stdout.strip() == "[]", done.stderr


def test_a_resumed_run_continues_its_session_and_counts_each_task_once():
    before = two_role_run()  # T3 delivered, never reported before the server died
    after = [start(400), ev(401, "session resumed", from_pid=1, tasks=3,
                            board={"T1": "done", "T2": "done", "T3": "delivered"}),
             ev(460, "work-done", task="T3", role="dev", summary="ok", report=None,
                done=True, note=None)]
    runs = split_runs(before + after)
    assert len(runs) == 1
    summary = build(runs)
    dev = next(r for r in summary.roles if r.name == "dev")
    assert (dev.tasks, dev.done) == (3, 3)
    assert summary.never_reported == []


FORGED = st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**40, max_value=10**40),
                   st.floats(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_forged_field_of_any_type_is_never_a_crash(tmp_path, capsys, data):
    """An agent can write the event log: whatever one field of one record
    holds, the report (table, JSON and page) ends with a status, not a traceback."""
    records = two_role_run()
    record = data.draw(st.sampled_from(records))
    record[data.draw(st.sampled_from([*sorted(record), "extra"]))] = data.draw(FORGED)
    log = write_log(tmp_path / "e.jsonl", records)
    for extra in ((), ("--json",), ("--html", str(tmp_path / "page.html"))):
        code, _, _ = run_cli(capsys, log, *extra)
        assert code in (0, 1)


def test_a_line_nested_past_the_parsers_depth_is_a_damaged_line(tmp_path, capsys):
    records = two_role_run()
    log = tmp_path / "e.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records[:4]) + "[" * 100_000 + "\n"
                   + "".join(json.dumps(r) + "\n" for r in records[4:]))
    code, _, err = run_cli(capsys, log)
    assert code == 0 and "damaged after line 4: 1 damaged line skipped" in err


def test_limits_waited_out_and_calls_refused_are_reported(tmp_path, capsys):
    records = [
        *two_role_run()[:-1],
        ev(240, "role limited", role="dev", kind="rate limit", source="anthropic",
           until=T0 + 300, repeats=0, said="slow down"),
        ev(300, "limit over", role="dev", lasted=60.0, by="reset"),
        ev(310, "role limited", role="dev", kind="usage limit", source="screen",
           until=T0 + 400, repeats=1, said="limit reached"),
        ev(400, "limit given up", role="dev", lasted=90.0),
        ev(405, "limit over", role="dev", lasted=float("inf"), by="forged"),
        ev(406, "limit over", role="dev", lasted=-5, by="forged"),
        ev(410, "model call refused", role="lead", why="choragos: the budget of role lead"),
        ev(420, "deck stopped", pid=1),
    ]
    log = write_log(tmp_path / "events.jsonl", records)
    code, out, _ = run_cli(capsys, log)
    assert code == 0
    assert out.splitlines()[-2:] == ["provider limits: dev 2 (waited 2m30s)",
                                     "model calls refused by a budget: lead 1"]
    code, out, _ = run_cli(capsys, log, "--json")
    roles = {r["role"]: r for r in json.loads(out)["roles"]}
    assert (roles["dev"]["limits"], roles["dev"]["limited"], roles["lead"]["refused"]) == \
        (2, 150.0, 1)
