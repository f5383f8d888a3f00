"""A full disk under the workspace: the session keeps answering and recovers.

The workspace lives on a small tmpfs mounted for the test (the ``small_fs`` fixture).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator

from tests.integration.harness import Serve, role_toml
from tests.integration.smallfs import fill

TEAM = role_toml("orchestrator", start=True) + role_toml("coder", "--worker")


@contextlib.contextmanager
def running_on(small_fs, short_tmp) -> Iterator[Serve]:
    """A session whose workspace is on the small disk (what the test reads
    is not); it must stop cleanly at the end, full disk or not."""
    work = small_fs / "work"
    work.mkdir()
    s = Serve(work, TEAM, sock=short_tmp / "s.sock")
    s.agent_log = short_tmp / "agents.jsonl"
    s.env["AGENT_LOG"] = str(s.agent_log)
    s.stderr_path = short_tmp / "serve.err"
    s.start()
    try:
        yield s
    finally:
        code = s.stop(timeout=30)
    assert code == 0, s.stderr()
    s.assert_no_leftovers()


def test_a_full_disk_refuses_delegations_then_recovers(small_fs, short_tmp):
    with running_on(small_fs, short_tmp) as s:
        s.wait_booted(["orchestrator", "coder"])
        assert s.cli("delegate", "--to", "coder", "--task", "before the disk filled"
                     ).returncode == 0
        s.wait(lambda: s.board()["T1"]["state"] == "done", 20, message="T1 done")
        filler = s.workdir / "filler.bin"
        assert fill(filler) > 0

        assert s.cli("ping").returncode == 0
        out = s.cli("delegate", "--to", "coder", "--task", "while the disk is full")
        assert out.returncode == 1, (out.stdout, out.stderr)
        assert "no space left on device: the delegation was not recorded" in out.stderr
        assert list(s.board()) == ["T1"], "a refused delegation changed the board"
        for _ in range(3):  # it keeps answering, also after more failed writes
            assert s.cli("status").returncode == 0
            assert s.cli("ping").returncode == 0

        filler.unlink()
        out = s.cli("delegate", "--to", "coder", "--task", "after the space came back")
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "delegated T2 to coder"
        s.wait(lambda: s.board()["T2"]["state"] == "done", 20, message="T2 done")
        assert s.proc.poll() is None


def test_sigterm_stops_a_session_whose_disk_is_full(small_fs, short_tmp):
    with running_on(small_fs, short_tmp) as s:
        s.wait_booted(["orchestrator", "coder"])
        fill(s.workdir / "filler.bin")
        for _ in range(5):
            s.cli("delegate", "--to", "coder", "--task", "refused")
        assert s.cli("ping").returncode == 0


def test_a_checkpoint_the_disk_cannot_hold_fails_loudly_and_the_task_goes_out(
        small_fs, short_tmp):
    data = os.urandom(2 << 20)  # random: it does not compress, and it is stored loose
    with running_on(small_fs, short_tmp) as s:
        work = s.workdir
        s.wait_booted(["orchestrator", "coder"])
        (work / "data.bin").write_bytes(data)
        filler = work / "filler.bin"
        fill(filler, leave=512 << 10)  # room for the journal and the log, not for data.bin
        assert s.cli("delegate", "--to", "coder", "--task", "on a nearly full disk"
                     ).returncode == 0
        failed = s.wait_event(lambda e: e["event"] == "checkpoint failed", 20,
                              message="the checkpoint's failure")
        assert failed["task"] == "T1"
        assert failed["error"] == ("checkpoint for T1 failed: cannot write to the "
                                   "repository's objects: No space left on device")
        s.wait(lambda: s.board()["T1"]["state"] == "done", 20, message="T1 done anyway")
        assert s.board()["T1"]["checkpoint"] is None  # not one missing data.bin

        filler.unlink()
        assert s.cli("delegate", "--to", "coder", "--task", "with room again").returncode == 0
        s.wait(lambda: s.board()["T2"]["state"] == "done", 20, message="T2 done")
        ref = s.board()["T2"]["checkpoint"]
        assert ref, s.events()
        held = subprocess.run(["git", "cat-file", "blob", f"{ref}:data.bin"], cwd=work,
                              capture_output=True, check=True).stdout
        assert held == data
        assert [e["event"] for e in s.events()].count("checkpoint failed") == 1
        assert s.proc.poll() is None
