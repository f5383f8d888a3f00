"""Whom a caller acts for, read from real process trees: deep chains, double
forks, the session's own children, and a walk that cannot finish."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from choragos.control import authority
from tests.conftest import wait_until

pytestmark = pytest.mark.timeout(60)

# Each level is a shell waiting for the next (the `exit $?` keeps a shell from
# exec'ing its last command, which would flatten the chain); the last level
# writes its pid to the file named first, then sleeps.
DEEP = """n=$1; shift
if [ "$n" -gt 0 ]; then /bin/sh "$0" $((n - 1)) "$@"; exit $?; fi
echo $$ > "$1"; exec sleep 60
"""
GATE_APPROVE = {"cmd": "gate", "action": "approve", "id": "T1"}


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2:].split()[1])


def _lineage(pid: int) -> list[int]:
    pids = [pid]
    while pids[-1] > 1:
        pids.append(_parent(pids[-1]))
    return pids


def _pid_in(path: Path) -> int:
    return int(wait_until(lambda: path.exists() and path.read_text().strip(), 20,
                          message=f"a pid in {path.name}"))


@contextmanager
def group(argv: list[str]) -> Iterator[subprocess.Popen]:
    """``argv`` as the leader of a session and process group of its own,
    the whole group killed afterwards."""
    proc = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[list[int]]:
    """A real chain of 75 nested shells; the pids from the leaf upwards."""
    script, leaf_file = tmp_path / "deep.sh", tmp_path / "leaf"
    script.write_text(DEEP)
    with group(["/bin/sh", str(script), "75", str(leaf_file)]) as top:
        pids = [_pid_in(leaf_file)]
        while pids[-1] != top.pid:
            pids.append(_parent(pids[-1]))
        yield pids


def test_a_role_seventy_levels_up_is_still_the_role(chain):
    role = chain[70]  # not the session leader: only the walk itself can find it
    assert authority.caller_role(chain[0], {role: "coder"}) == "coder"


def test_a_walk_that_runs_out_is_never_the_operator(chain, monkeypatch):
    monkeypatch.setattr(authority, "MAX_DEPTH", 40)
    caller = authority.caller_role(chain[0], {chain[70]: "coder"}, None)
    assert caller == authority.UNTRACED
    refused = authority.refusal(dict(GATE_APPROVE), caller, may_delegate=False)
    assert refused and "could not be traced" in refused
    for cmd in ("delegate", "work-done"):
        assert "no role" in authority.refusal({"cmd": cmd}, caller, may_delegate=True)
    # The whole chain traced is the operator again: it leads to init, not to a role.
    monkeypatch.setattr(authority, "MAX_DEPTH", 4096)
    assert authority.caller_role(chain[0], {}, None) is None


def test_a_double_forked_process_stays_in_its_roles_session(tmp_path: Path):
    orphan_file = tmp_path / "orphan"
    inner = f"echo $$ > {orphan_file}; exec sleep 60"
    with group(["/bin/sh", "-c", f"(/bin/sh -c '{inner}' &); exec sleep 60"]) as role:
        orphan = _pid_in(orphan_file)
        wait_until(lambda: _parent(orphan) != role.pid and _parent(orphan) > 0, 10,
                   message="the orphan to be reparented")
        assert role.pid not in _lineage(orphan)  # no longer its ancestor: only its session
        assert authority.caller_role(orphan, {role.pid: "coder"}) == "coder"


@pytest.mark.parametrize("own_session", [False, True])
def test_what_the_session_starts_itself_is_not_the_operator(own_session: bool):
    proc = subprocess.Popen(["sleep", "60"], start_new_session=own_session)
    try:
        caller = authority.caller_role(proc.pid, {}, os.getpid())
        assert caller == authority.SESSION
        refused = authority.refusal(dict(GATE_APPROVE), caller, may_delegate=True)
        assert refused and "the session started itself" in refused
        assert authority.caller_role(os.getpid(), {}, os.getpid()) is None  # the deck's own
    finally:
        proc.kill()
        proc.wait()


def test_a_process_run_for_a_role_counts_as_that_role_while_it_runs():
    behalf = authority.Behalf()
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        with behalf.acting_for("coder")(proc.pid):
            assert authority.caller_role(proc.pid, behalf.pids(), os.getpid()) == "coder"
        assert behalf.pids() == {}
        assert authority.caller_role(proc.pid, behalf.pids(), os.getpid()) == authority.SESSION
    finally:
        proc.kill()
        proc.wait()
