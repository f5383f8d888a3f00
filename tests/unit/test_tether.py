"""A tethered command ends with the process that started it, however it ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

from choragos.remote import tether
from tests.conftest import wait_until

# A parent that tethers a sleep, says the sleep's pid, then waits to be killed.
PARENT = """
import subprocess, sys, time
from choragos.remote import tether
child = tether.spawn(["sleep", "300"], stderr=subprocess.DEVNULL, start_new_session=True)
print(child.pid, flush=True)
time.sleep(300)
"""


@contextlib.contextmanager
def _killed_after(process: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """``process`` for the block; then killed if still running, its pipes closed."""
    with process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()


def _ps(pid: int, field: str) -> str:
    return subprocess.run(["ps", "-o", f"{field}=", "-p", str(pid)], capture_output=True,
                          text=True).stdout.strip()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _ps(pid, "stat").startswith("Z")


def test_the_command_ends_when_its_parent_is_killed_outright() -> None:
    with _killed_after(subprocess.Popen([sys.executable, "-c", PARENT],
                                        stdout=subprocess.PIPE, text=True)) as parent:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.kill()
        parent.wait()
        wait_until(lambda: not _alive(child), 10, message="the tethered sleep to end")


def test_the_process_is_the_command_itself_and_letting_go_ends_it() -> None:
    with _killed_after(tether.spawn(["sleep", "300"], stderr=subprocess.PIPE)) as child:
        wait_until(lambda: _ps(child.pid, "args") == "sleep 300", 10,
                   message="the process to become the command")
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(10) == -signal.SIGTERM
        assert child.stderr is not None and child.stderr.read() == b""


def test_the_watcher_leaves_when_the_command_ends_first() -> None:
    with _killed_after(tether.spawn(["sleep", "300"])) as child:
        found = wait_until(lambda: subprocess.run(
            ["pgrep", "-P", str(child.pid)], capture_output=True, text=True).stdout.split(),
            10, message="the watcher")
        child.kill()
        child.wait()
        wait_until(lambda: not _alive(int(found[0])), 5, message="the watcher to leave")


def test_a_command_that_cannot_run_says_why() -> None:
    child = tether.spawn(["no-such-program-here"], stderr=subprocess.PIPE)
    # Not communicate(): it closes stdin, and that lets go of the command on
    # purpose (SIGTERM), racing the failed exec's own message.
    assert child.stderr is not None and child.stdin is not None
    err = child.stderr.read()
    assert child.wait(10) == 1
    child.stdin.close()
    assert b"cannot run no-such-program-here" in err
