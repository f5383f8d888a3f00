"""Hooks under hostile text and floods: any task text still runs the hook,
a burst runs a bounded number of shells in order, one past the waiting line
is reported, and a shell that left a child behind is reported as such."""

from __future__ import annotations

from choragos.session import hooks as hooks_module
from choragos.session.hooks import MAX_VALUE
from tests.conftest import pid_alive, wait_until
from tests.unit.test_hooks_details import make


def test_any_task_text_reaches_the_hook_and_the_hook_runs(tmp_path):
    """A NUL, a lone surrogate (both legal in the JSON a worker sends) and a
    task past what the kernel takes in one variable each stopped the hook
    from starting at all: the person was never told."""
    out = tmp_path / "out"
    hooks, failures = make(tmp_path, {"on_gate": f'printf "%s|" "$CHORAGOS_TASK" >> {out}'})
    hostile = ["a\0b", "c\ud800d", "\x1b]0;x\x07\nline2 $(id)", "y" * 200_000]
    for text in hostile:
        hooks.fire("on_gate", role="r", task=text)
        hooks.wait(10)
    got = out.read_text().split("|")[:-1]
    assert got[:3] == ["ab", "c?d", "\x1b]0;x\x07\nline2 $(id)"]
    assert got[3] == "y" * MAX_VALUE + "… (cut)"
    assert failures == []


def test_a_burst_runs_a_bounded_number_of_hooks_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(hooks_module, "MAX_RUNNING", 2)
    monkeypatch.setattr(hooks_module, "MAX_WAITING", 3)
    started, release = tmp_path / "started", tmp_path / "release"
    script = (f'echo "$CHORAGOS_TASK" >> {started}; '
              f"while [ ! -e {release} ]; do sleep 0.02; done")
    hooks, failures = make(tmp_path, {"on_input": script}, timeout=30)
    fired = [hooks.fire("on_input", role="r", task=str(n)) for n in range(6)]
    assert fired == [True] * 5 + [False]
    assert failures == [{"hook": "on_input", "role": "r",
                         "reason": "not run: 3 hooks already wait behind 2 running"}]

    def lines():
        return started.read_text().split() if started.exists() else []

    wait_until(lambda: len(lines()) == 2, message="two hooks to start")
    assert len(hooks._waiting) == 3 and sorted(lines()) == ["0", "1"]
    release.touch()
    hooks.wait(10)
    assert sorted(lines()[2:]) == ["2", "3", "4"] and len(failures) == 1
    assert hooks._runners == 0


def test_a_hook_that_exited_but_left_a_child_is_told_apart_from_a_hung_one(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": "sleep 30 & echo left"}, timeout=0.5)
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert failures == [{"hook": "on_gate", "role": "r", "output": "left\n",
                         "reason": "exit status 0, but what it left in the background was "
                                   "still running after 0.5s; killed"}]


def test_at_the_sessions_stop_no_hook_is_left_running_or_silently_dropped(tmp_path,
                                                                        monkeypatch):
    """A hung hook used to outlive the server unwatched (its 30 s limit died
    with the server's thread), and one still waiting vanished unreported."""
    monkeypatch.setattr(hooks_module, "MAX_RUNNING", 1)
    pidfile = tmp_path / "child.pid"
    hooks, failures = make(tmp_path, {"on_exit": f"sleep 30 & echo $! > {pidfile}; wait"},
                           timeout=30)
    hooks.fire("on_exit", role="a")
    hooks.fire("on_exit", role="b")  # waits behind the hung one
    wait_until(pidfile.exists, message="the hung hook to start")
    hooks.close(grace=0.1)
    assert not hooks.fire("on_exit", role="c")
    assert [(f["role"], f["reason"]) for f in failures] == [
        ("b", hooks_module.STOPPED), ("a", hooks_module.KILLED_AT_STOP),
        ("c", hooks_module.STOPPED)]
    child = int(pidfile.read_text())
    wait_until(lambda: not pid_alive(child), 5, message="the hook's child to be gone")


def test_a_hook_that_floods_its_output_is_stopped_at_once_not_read_for_its_time(tmp_path):
    """Reading `yes` until the time limit cost the server a quarter of a core
    for 30 s; past 1 MiB it is killed, quoting the end of what it wrote."""
    hooks, failures = make(tmp_path, {"on_gate": "yes flood"}, timeout=30)
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    [failure] = failures
    assert failure["reason"] == "wrote more than 1 MiB of output; killed"
    assert "flood\nflood\n" in failure["output"] and hooks._runners == 0
