"""The verify runner: argv split without a shell, the log, the tail, the timeout."""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from choragos.roles import verify


def _cmd(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def test_a_passing_command_is_logged(tmp_path: Path) -> None:
    result = verify.run(_cmd("print('all good')"), tmp_path, tmp_path, "T1", 30)
    assert (result.ok, result.code, result.why) == (True, 0, "")
    assert result.log == ".choragos/reports/T1.verify.log"
    log = (tmp_path / result.log).read_text()
    assert "all good" in log and log.endswith(f"# exit 0 after {result.seconds:g}s\n")


def test_a_failure_keeps_the_tail(tmp_path: Path) -> None:
    code = "import sys\nfor n in range(100): print('line', n)\nsys.exit(3)"
    result = verify.run(_cmd(code), tmp_path, tmp_path, "T2", 30)
    assert (result.ok, result.code, result.why) == (False, 3, "exit 3")
    lines = result.tail.splitlines()
    assert len(lines) == verify.TAIL_LINES and lines[-1] == "line 99"


def test_no_shell_is_involved(tmp_path: Path) -> None:
    result = verify.run(_cmd("import sys; print(sys.argv[1:])") + " '$HOME; rm -rf x' '*'",
                        tmp_path, tmp_path, "T3", 30)
    assert result.ok and "['$HOME; rm -rf x', '*']" in result.tail


def test_a_timeout_kills_the_group_and_fails(tmp_path: Path) -> None:
    began = time.monotonic()
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', " \
           "'import time; time.sleep(60)']); time.sleep(60)"
    result = verify.run(_cmd(code), tmp_path, tmp_path, "T4", 1)
    assert not result.ok and result.code is None and result.why == "timed out after 1s"
    assert time.monotonic() - began < 15


def test_a_missing_program_fails_with_the_reason(tmp_path: Path) -> None:
    result = verify.run("no-such-program-here --x", tmp_path, tmp_path, "T5", 5)
    assert not result.ok and result.why.startswith("could not start: ")


def test_what_a_verify_leaves_running_is_killed_and_it_counts_as_its_role_meanwhile(
        tmp_path: Path) -> None:
    """A process left behind would be orphaned out of the role's tree (and
    taken for the operator); the tracker holds the pid exactly while it runs."""
    from choragos.control import authority
    from tests.conftest import pid_alive, wait_until

    pidfile, behalf, seen = tmp_path / "left.pid", authority.Behalf(), []

    @contextmanager
    def tracker(pid: int) -> Iterator[None]:
        with behalf.acting_for("coder")(pid):
            seen.append(behalf.pids())
            yield

    command = f"/bin/sh -c 'sleep 60 >/dev/null 2>&1 & echo $! > {pidfile}'"
    result = verify.run(command, tmp_path, tmp_path, "T5", 30, None, tracker)
    assert result.ok and [list(p.values()) for p in seen] == [["coder"]]
    assert behalf.pids() == {}
    left = int(pidfile.read_text())
    wait_until(lambda: not pid_alive(left), 5, message="the left-over sleep to be killed")
