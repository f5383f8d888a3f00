"""Both ways of starting a role's agent in its terminal (posix_spawn where the C
library allows, ptyprocess's fork elsewhere) give the child the same world:
its own session and process group, the terminal as its controlling one (so
Ctrl-C reaches it), the size, directory and environment asked for, no
descriptor of ours, and the signal dispositions the fork gave."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from choragos.terminal import ptyspawn
from choragos.terminal.ptyproc import PtyChild, SpawnError, stat_fields
from tests.conftest import wait_until

pytestmark = pytest.mark.timeout(30)

WAYS = [pytest.param(ptyspawn.forked, id="fork"),
        pytest.param(ptyspawn.NATIVE, id="posix_spawn",
                     marks=pytest.mark.skipif(ptyspawn.NATIVE is None,
                                              reason="no posix_spawn with a terminal here"))]
ENV = {"PATH": os.defpath, "ONLY": "this"}


@pytest.fixture(params=WAYS)
def way(request, monkeypatch):
    monkeypatch.setattr(ptyspawn, "NATIVE", request.param)
    return request.param


def _output(child: PtyChild, until: bytes) -> bytes:
    seen = bytearray()

    def more() -> bool:
        try:
            seen.extend(os.read(child.fd, 4096))
        except BlockingIOError:
            pass
        except OSError:
            return True  # the terminal's end: everything was read
        return until in seen

    wait_until(more, 10, interval=0.01, message=f"{until!r} in {bytes(seen)!r}")
    return bytes(seen)


def _finish(child: PtyChild) -> None:
    child.terminate(grace=1.0)
    child.close()


def test_the_child_leads_its_own_session_on_its_terminal(way, tmp_path: Path) -> None:
    child = PtyChild.spawn(["/bin/sh", "-c", "stty size; pwd; echo READY; exec sleep 60"],
                           tmp_path, ENV, cols=97, rows=31)
    try:
        out = _output(child, b"READY")
        assert b"31 97" in out and str(tmp_path).encode() in out
        _state, _ppid, group, session, tty = stat_fields(child.pid)[:5]
        assert int(group) == int(session) == child.pid
        assert int(tty) == os.stat(_slave(child)).st_rdev
        os.write(child.fd, b"\x03")  # the terminal's interrupt reaches its foreground group
        wait_until(lambda: child.poll() is not None, 10, message="Ctrl-C ended the child")
        assert child.poll().signal == signal.SIGINT
    finally:
        _finish(child)


def _slave(child: PtyChild) -> str:
    from choragos.terminal.ptyproc import _slave_path

    path = _slave_path(child.fd)
    assert path is not None
    return path


def test_the_environment_is_exactly_the_one_given(way, tmp_path: Path) -> None:
    child = PtyChild.spawn(["/usr/bin/env"], tmp_path, ENV)
    try:
        out = _output(child, b"ONLY=this")
        lines = sorted(line for line in out.decode().split("\r\n") if line)
        assert lines == sorted(f"{name}={value}" for name, value in ENV.items())
    finally:
        _finish(child)


def test_no_descriptor_of_ours_reaches_the_child(way, tmp_path: Path) -> None:
    leaked = os.dup(1)  # inheritable on purpose: a careless spawn would pass it on
    os.set_inheritable(leaked, True)
    # The spawned shell itself, waiting in its own `read`: a program it
    # exec'd (a `sleep`) holds its loader's descriptor (3) for a moment as it
    # starts, which a busy machine let the listing see (1 in 150 spawns).
    child = PtyChild.spawn(["/bin/sh", "-c", "echo READY; read line"], tmp_path, ENV)
    try:
        _output(child, b"READY")
        assert sorted(os.listdir(f"/proc/{child.pid}/fd")) == ["0", "1", "2"]
    finally:
        os.close(leaked)
        _finish(child)


def test_both_ways_leave_the_same_signals_ignored_and_blocked(tmp_path: Path,
                                                              monkeypatch) -> None:
    if ptyspawn.NATIVE is None:
        pytest.skip("no posix_spawn with a terminal here")
    masks = []
    for way in (ptyspawn.forked, ptyspawn.NATIVE):
        monkeypatch.setattr(ptyspawn, "NATIVE", way)
        child = PtyChild.spawn(["/bin/sh", "-c", "echo READY; exec sleep 60"], tmp_path, ENV)
        try:
            _output(child, b"READY")
            status = Path(f"/proc/{child.pid}/status").read_text().splitlines()
            masks.append({line.split(":")[0]: int(line.split()[1], 16) for line in status
                          if line.startswith(("SigIgn", "SigBlk"))})
        finally:
            _finish(child)
    # The C library's own signals (32 up to SIGRTMIN) are set back to their
    # default by posix_spawn even where this process ignores them (as a shell
    # that started it may have left them), where a fork passes that on.
    internal = sum(1 << (n - 1) for n in range(32, signal.SIGRTMIN))
    assert masks[1]["SigIgn"] & internal == 0
    assert masks[0]["SigBlk"] == masks[1]["SigBlk"]
    assert masks[0]["SigIgn"] & ~internal == masks[1]["SigIgn"] & ~internal


def test_a_program_that_cannot_start_is_said_in_one_sentence(way, tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("echo hi\n")
    script.chmod(0o644)
    with pytest.raises(SpawnError, match="is not an executable file"):
        PtyChild.spawn([str(script)], tmp_path, ENV)
    if way is ptyspawn.forked:
        return  # a missing directory is the forked child's own error, after the fork
    with pytest.raises(SpawnError, match=r"could not start .*: No such file or directory"):
        PtyChild.spawn([sys.executable, "-c", "pass"], tmp_path / "gone", ENV)
