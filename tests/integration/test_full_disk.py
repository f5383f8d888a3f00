"""A full disk under the workspace: the session keeps answering and recovers.

The workspace lives on a small tmpfs mounted for the test (root only; the
test is skipped, saying so, where mounting is not permitted).
"""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest

from tests.integration.harness import Serve, role_toml

TEAM = role_toml("orchestrator", start=True) + role_toml("coder", "--worker")


@pytest.fixture
def small_fs(short_tmp):
    mount = short_tmp / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path) -> int:
    """Write ``path`` until the file system is full; the bytes written."""
    written = 0
    block = b"\0" * (1 << 16)
    with open(path, "wb", buffering=0) as out:
        while True:
            try:
                written += out.write(block)
            except OSError:
                break
        for size in (4096, 512, 1):  # the last crumbs, so even a small write fails
            with contextlib.suppress(OSError):
                while True:
                    written += out.write(block[:size])
    return written


def start_on(small_fs, short_tmp) -> Serve:
    """A session whose workspace is on the small disk; what the test reads is not."""
    work = small_fs / "work"
    work.mkdir()
    s = Serve(work, TEAM, sock=short_tmp / "s.sock")
    s.agent_log = short_tmp / "agents.jsonl"
    s.env["AGENT_LOG"] = str(s.agent_log)
    s.stderr_path = short_tmp / "serve.err"
    return s.start()


def test_a_full_disk_refuses_delegations_then_recovers(small_fs, short_tmp):
    s = start_on(small_fs, short_tmp)
    work = s.workdir
    try:
        s.wait_booted(["orchestrator", "coder"])
        assert s.cli("delegate", "--to", "coder", "--task", "before the disk filled"
                     ).returncode == 0
        s.wait(lambda: s.board()["T1"]["state"] == "done", 20, message="T1 done")
        filler = work / "filler.bin"
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
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(work / "filler.bin")
        code = s.stop(timeout=30)
    assert code == 0, s.stderr()
    s.assert_no_leftovers()


def test_sigterm_stops_a_session_whose_disk_is_full(small_fs, short_tmp):
    s = start_on(small_fs, short_tmp)
    try:
        s.wait_booted(["orchestrator", "coder"])
        fill(s.workdir / "filler.bin")
        for _ in range(5):
            s.cli("delegate", "--to", "coder", "--task", "refused")
        assert s.cli("ping").returncode == 0
    finally:
        code = s.stop(timeout=30)
    assert code == 0, s.stderr()
    s.assert_no_leftovers()
