"""What was typed into an agent's terminal and not read yet is known, so a
busy machine's slow agent is told from a deaf one.  Real PTYs and processes."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from choragos.terminal.ptyproc import PtyChild, Reader, process_state
from tests.conftest import wait_until
from tests.integration.test_pty_reader import Seen

# Raw mode, then no read until the test says so; then five bytes read.
SCRIPT = ("stty raw -echo; echo ready; while [ ! -e go ]; do sleep 0.02; done; "
          "head -c 5 >/dev/null; echo taken; exec sleep 60")


def test_typed_input_counts_as_unread_until_the_child_reads_it(tmp_path: Path) -> None:
    child = PtyChild.spawn(["/bin/sh", "-c", SCRIPT], tmp_path, {"PATH": os.defpath})
    seen = Seen()
    reader = Reader(child, seen.data, seen.exit)
    reader.start()
    try:
        wait_until(lambda: b"ready" in seen.output(), 10, message="the child's raw mode")
        assert child.unread_input() == 0
        assert child.write(b"hello")
        wait_until(lambda: child.unread_input() == 5, 10, message="five unread bytes")
        (tmp_path / "go").touch()
        wait_until(lambda: b"taken" in seen.output(), 10, message="the child's read")
        assert child.unread_input() == 0
    finally:
        child.terminate(1.0)
        reader.halt()
        reader.join(5)
        child.close()
    assert child.unread_input() == 0  # gone: nothing is waiting for it


SPIN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"


def test_a_child_at_work_reads_as_running_and_a_resting_one_does_not(tmp_path: Path) -> None:
    busy = PtyChild.spawn(["python3", "-c", SPIN], tmp_path, {"PATH": os.defpath})
    resting = PtyChild.spawn(["/bin/sh", "-c", "exec sleep 60"], tmp_path, {"PATH": os.defpath})
    try:
        wait_until(busy.running, 10, message="the spinning child on a CPU")
        # A sleeping one is never seen running once it has settled.
        wait_until(lambda: not resting.running(), 10, message="the sleeper at rest")
        assert not any(resting.running() for _ in range(20))
    finally:
        for child in (busy, resting):
            child.terminate(1.0)
            child.close()


def test_a_resting_wrapper_whose_child_is_at_work_reads_as_running(tmp_path: Path) -> None:
    # As Codex's launcher: the process on the terminal waits, its child works.
    wrapper = PtyChild.spawn(["/bin/sh", "-c", 'python3 -c "$0"; exit 0', SPIN], tmp_path,
                             {"PATH": os.defpath})
    try:
        # Once the shell has forked and sleeps in wait(), only its child works.
        wait_until(lambda: process_state(wrapper.pid) == b"S" and wrapper.running(), 10,
                   message="the wrapper at rest and its spinning child on a CPU")
    finally:
        wrapper.terminate(1.0)
        wrapper.close()



def test_a_child_stopped_from_outside_is_known_stopped_until_it_runs_again(tmp_path: Path):
    """The typist waits out a stopped agent (tests/unit/test_typist.py): this
    is the real process state it reads."""
    child = PtyChild.spawn(["/bin/sh", "-c", "exec sleep 60"], tmp_path, {"PATH": os.defpath})
    try:
        assert not child.stopped()
        os.kill(child.pid, signal.SIGSTOP)
        wait_until(child.stopped, 10, message="the child stopped")
        os.kill(child.pid, signal.SIGCONT)
        wait_until(lambda: not child.stopped(), 10, message="the child running again")
    finally:
        child.terminate(1.0)
        child.close()


def test_output_not_fed_yet_is_known_until_the_reader_has_fed_it(tmp_path: Path) -> None:
    """A screen read while the agent's last output waits in the PTY, or in the
    reader's hands, may miss the dialog it just drew: that output is known."""
    child = PtyChild.spawn(["/bin/sh", "-c", "echo 'Do you want to proceed?'; exec sleep 60"],
                           tmp_path, {"PATH": os.defpath})
    seen = Seen()
    fed = []

    def feed(data: bytes) -> None:
        fed.append(child.output_unseen())  # in the reader's hands: still unseen
        seen.data(data)
    reader = Reader(child, feed, seen.exit)
    try:
        wait_until(child.output_unseen, 10, message="the question waiting in the PTY")
        reader.start()
        wait_until(lambda: b"proceed?" in seen.output(), 10, message="the question read")
        assert fed and all(fed)
        assert not child.output_unseen()
    finally:
        child.terminate(1.0)
        reader.halt()
        reader.join(5)
        child.close()
    assert not child.output_unseen()  # closed: nothing to feed
