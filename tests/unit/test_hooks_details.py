"""Hooks: where and how a hook runs, and exactly what a failure reports."""

from __future__ import annotations

import os

from choragos.session.hooks import KEEP_OUTPUT, Hooks


def make(tmp_path, commands, timeout=5.0, base_env=None):
    failures = []
    hooks = Hooks(commands, tmp_path, lambda **f: failures.append(f), timeout=timeout,
                  base_env=base_env)
    return hooks, failures


def test_a_hook_runs_in_the_work_dir_alone_in_its_session_with_no_stdin(tmp_path):
    out = tmp_path / "out"
    leader = "import os; print(os.getsid(0) in (os.getpid(), os.getppid()))"
    script = f"pwd > {out}; cat >> {out}; python3 -c '{leader}' >> {out}"
    hooks, failures = make(tmp_path, {"on_gate": script})
    assert hooks.fire("on_gate", role="r") is True
    hooks.wait(10)
    assert failures == []
    assert out.read_text().splitlines() == [str(tmp_path), "True"]


def test_the_given_environment_replaces_the_process_one(tmp_path):
    out = tmp_path / "env"
    base = {"PATH": os.environ["PATH"], "ONLY_THIS": "1"}
    hooks, _ = make(tmp_path, {"on_input": f"env > {out}"}, base_env=base)
    hooks.fire("on_input", role="coder", task="t", task_id="T1")
    hooks.wait(10)
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    env.pop("PWD", None)  # sh adds PWD, SHLVL and _ itself
    env.pop("SHLVL", None)
    env.pop("_", None)
    assert env == {**base, "CHORAGOS_HOOK": "on_input", "CHORAGOS_ROLE": "coder",
                   "CHORAGOS_TASK": "t", "CHORAGOS_TASK_ID": "T1",
                   "CHORAGOS_DIR": str(tmp_path)}


def test_only_the_tail_of_a_long_output_is_kept(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": "printf 'a%.0s' $(seq 500); "
                                                 f"printf 'b%.0s' $(seq {KEEP_OUTPUT}); exit 1"})
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert failures == [{"hook": "on_gate", "role": "r", "output": "b" * KEEP_OUTPUT,
                         "reason": "exit status 1"}]


def test_a_hook_that_cannot_start_says_why(tmp_path):
    hooks, failures = make(tmp_path / "gone", {"on_gate": "true"})
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert len(failures) == 1 and failures[0]["hook"] == "on_gate"
    assert failures[0]["role"] == "r"
    assert failures[0]["reason"].startswith("could not start: [Errno 2]")


def test_a_hook_past_its_time_is_killed_and_its_output_kept(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": "echo started; exec sleep 30"}, timeout=0.5)
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert failures == [{"hook": "on_gate", "role": "r", "output": "started\n",
                         "reason": "still running after 0.5s; killed"}]


def test_a_successful_hook_reports_nothing(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": "echo fine"})
    assert hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert failures == []


def test_a_hook_fired_without_a_task_gets_empty_task_variables(tmp_path):
    out = tmp_path / "env"
    hooks, _ = make(tmp_path, {"on_input": f"env > {out}"})
    hooks.fire("on_input", role="coder")
    hooks.wait(10)
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert (env["CHORAGOS_TASK"], env["CHORAGOS_TASK_ID"]) == ("", "")


def test_undecodable_output_is_kept_readable(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": r"printf 'bad \377 byte'; exit 2"})
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert failures[0]["output"] == "bad \ufffd byte"


def test_waiting_for_hooks_is_bounded(tmp_path):
    # The hook is killed after 2 s (the test stays short); a wait that did
    # not return after its own 0.2 s would see that kill reported.
    hooks, failures = make(tmp_path, {"on_gate": "sleep 30"}, timeout=2.0)
    hooks.fire("on_gate", role="r")
    hooks.wait(0.2)  # returns though the hook still runs
    assert failures == []
    hooks.wait(10)
    assert [f["reason"] for f in failures] == ["still running after 2s; killed"]
