"""A damaged journal on a real server: refused with the way out, never cut.

A record damaged in the middle of ``journal.log`` (a disk error, an edit)
is not what a crash leaves: ``serve --resume`` refuses it and changes nothing;
``--salvage`` continues from every readable record and keeps the damaged
state aside.  A FIFO in place of the journal is refused, not waited on.
"""

from __future__ import annotations

import os
import subprocess
import sys

from choragos.board import journal
from tests.integration.harness import Serve, role_toml

TEAM = role_toml("lead", start=True) + role_toml("reviewer", approve=True)


def serve_fails(s, *args: str) -> str:
    """Run a ``serve`` that must refuse to start; what it said."""
    done = subprocess.run([sys.executable, "-m", "choragos", "serve", "--headless", *args],
                          cwd=s.workdir, env=s.env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode != 0, done.stderr
    return done.stderr


def seven_gated_tasks(s) -> list[str]:
    s.wait_booted(["lead"])
    for n in range(1, 8):
        out = s.cli("delegate", "--to", "reviewer", "--task", f"look at part {n}")
        assert out.returncode == 0, out.stderr
    return [f"T{n}" for n in range(1, 8)]


def damage_first_record_of(path, task_id: str) -> int:
    """Flip one byte inside the first record that names ``task_id``; its offset."""
    data = bytearray(path.read_bytes())
    offset = data.index(b'"id":"%s"' % task_id.encode())
    data[offset + 2] ^= 0x20
    path.write_bytes(bytes(data))
    return data.rindex(b"\n", 0, offset) + 1


def test_damage_in_the_middle_is_refused_with_the_way_out_and_salvaged_on_request(serve):
    s = serve(TEAM)
    ids = seven_gated_tasks(s)
    s.kill9()
    path = journal.state_dir(s.workdir) / journal.JOURNAL
    at = damage_first_record_of(path, "T3")
    damaged = path.read_bytes()

    err = serve_fails(s, "--resume")
    assert f"{path} is damaged at byte {at}" in err, err
    assert "nothing was cut or changed" in err
    assert "choragos serve --resume --salvage" in err
    assert "Traceback" not in err
    assert path.read_bytes() == damaged, "a refused resume changed the journal"
    err = serve_fails(s, "--resume")  # and again: the first refusal cut nothing
    assert f"damaged at byte {at}" in err

    s.start(args=("--resume", "--salvage"))
    err = s.wait(lambda: "skipped" in s.stderr() and s.stderr(), 10, "the salvage notice")
    assert f"1 damaged record of {path} skipped (the first at byte {at}" in err
    board = s.board()
    assert sorted(board, key=lambda t: int(t[1:])) == ids  # the 4 after it too
    assert {t["state"] for t in board.values()} == {"gated"}
    kept = [p for p in (s.workdir / ".choragos").iterdir() if p.name.startswith("state.kept-")]
    assert len(kept) == 1 and (kept[0] / journal.JOURNAL).read_bytes() == damaged
    out = s.cli("delegate", "--to", "reviewer", "--task", "after the salvage")
    assert out.stdout.split()[1] == "T8", out.stderr
    assert s.stop() == 0
    journal.load(journal.state_dir(s.workdir))  # the rewritten journal reads whole


def test_a_plain_serve_keeps_a_damaged_state_aside_uncut_and_names_the_salvage(serve):
    s = serve(TEAM)
    seven_gated_tasks(s)
    s.kill9()
    path = journal.state_dir(s.workdir) / journal.JOURNAL
    damage_first_record_of(path, "T3")
    damaged = path.read_bytes()
    s.start()
    err = s.wait(lambda: "choragos serve --resume" in s.stderr() and s.stderr(), 10,
                 "the notices")
    kept = next(p for p in (s.workdir / ".choragos").iterdir()
                if p.name.startswith("state.kept-"))
    assert (kept / journal.JOURNAL).read_bytes() == damaged
    assert f"choragos serve --resume .choragos/{kept.name} --salvage" in err
    assert s.board() == {}


def test_a_torn_tail_is_still_cut_and_resumed_without_a_word(serve):
    s = serve(TEAM)
    ids = seven_gated_tasks(s)
    s.kill9()
    path = journal.state_dir(s.workdir) / journal.JOURNAL
    with open(path, "ab") as out:
        out.write(journal.frame({"kind": "alive", "seq": 10_000, "t": 1.0})[:-9])
    s.start(args=("--resume",))
    assert sorted(s.board(), key=lambda t: int(t[1:])) == ids
    assert "damaged" not in s.stderr()


def test_a_fifo_in_place_of_the_journal_is_refused_not_waited_on(serve):
    s = serve(TEAM)
    s.wait_booted(["lead"])
    assert s.stop() == 0
    path = journal.state_dir(s.workdir) / journal.JOURNAL
    path.unlink()
    os.mkfifo(path, 0o600)
    for args in ((), ("--resume",)):
        err = serve_fails(s, *args)  # the 30 s timeout fails the test if serve blocks
        assert f"{path} is a FIFO, not a regular file" in err, err
        assert "remove it and start again" in err and "Traceback" not in err
    assert not [p for p in (s.workdir / ".choragos").iterdir()
                if p.name.startswith("state.kept-")]
    path.unlink()
    s.start()


def test_a_forged_record_is_refused_in_a_sentence(serve):
    s = serve(TEAM)
    seven_gated_tasks(s)
    s.kill9()
    path = journal.state_dir(s.workdir) / journal.JOURNAL
    forged = journal.frame({"kind": "task", "seq": 10_000, "t": 1.0,
                            "task": {"id": "../../escape", "role": "reviewer",
                                     "text": "x", "state": "queued"}})
    with open(path, "ab") as out:
        out.write(forged)
    before = path.read_bytes()
    err = serve_fails(s, "--resume")
    assert "is not a task id (T1, T2, ...)" in err and "Traceback" not in err, err
    assert path.read_bytes() == before
    s.start(args=("--resume", "--salvage"))
    assert len(s.board()) == 7


def test_a_plain_serve_after_a_kill_never_writes_over_the_old_task_files(serve):
    s = serve(TEAM)
    s.wait_booted(["lead"])
    assert s.cli("delegate", "--to", "reviewer", "--task", "the old task").returncode == 0
    s.kill9()
    s.start()
    tasks = s.workdir / ".choragos" / "tasks"
    made = s.cli("delegate", "--to", "reviewer", "--task", "the new task")
    assert "T2" in made.stdout, made.stdout
    assert "the old task" in (tasks / "T1.md").read_text()
    assert "the new task" in (tasks / "T2.md").read_text()
    kept = next(p for p in (s.workdir / ".choragos").iterdir()
                if p.name.startswith("state.kept-"))

    assert s.stop() == 0
    s.start(args=("--resume", f".choragos/{kept.name}"))
    assert s.board()["T1"]["text"] == "the old task"
    assert "the old task" in (tasks / "T1.md").read_text()
    assert "the new task" in (tasks / "T2.md").read_text()


# Runs choragos under a file size limit (RLIMIT_FSIZE): a write that
# crosses it is cut short, as a nearly full quota or disk does.
LIMITED = """
import os, resource, runpy, sys
limit = int(os.environ["FSIZE_LIMIT"])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv = ["choragos", *sys.argv[1:]]
runpy.run_module("choragos", run_name="__main__", alter_sys=True)
"""


def test_delegations_refused_by_a_short_journal_write_leave_nothing_behind(short_tmp):
    work = short_tmp / "work"
    work.mkdir()
    s = Serve(work, TEAM, sock=short_tmp / "s.sock")
    # Each delegation writes its long text twice to the journal (created,
    # then gated) and once to the event log: the journal reaches the limit first.
    s.env["FSIZE_LIMIT"] = str(48 * 1024)
    s.start(command=[sys.executable, "-c", LIMITED])
    try:
        s.wait_booted(["lead"])
        acked, refused = [], []
        for n in range(32):
            out = s.cli("delegate", "--to", "reviewer", "--task", f"part {n} " + "x" * 3000)
            if out.returncode == 0:
                acked.append(out.stdout.split()[1])
            else:
                assert "the delegation was not recorded" in out.stderr, out.stderr
                refused.append(out.stderr)
        assert acked and refused, (acked, refused)
        assert any("short write to the journal" in err for err in refused), refused
        board = s.board()
        assert sorted(board) == sorted(acked), "a refused delegation left a task"
        assert {t["state"] for t in board.values()} == {"gated"}
        files = {p.stem for p in (work / ".choragos" / "tasks").glob("*.md")}
        assert files == set(acked), "a refused delegation left its task file"
    finally:
        code = s.stop(timeout=30)
    assert code == 0, s.stderr()  # its "stop" record is refused too: said, not fatal
    s.assert_no_leftovers()
