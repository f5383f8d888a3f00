import os

from choragos.session.hooks import Hooks
from tests.conftest import pid_alive, wait_until


def make(tmp_path, commands, timeout=5.0):
    failures = []
    hooks = Hooks(commands, tmp_path, lambda **f: failures.append(f), timeout=timeout)
    return hooks, failures


def test_task_text_reaches_the_hook_only_through_the_environment(tmp_path):
    pwned = tmp_path / "pwned"
    out = tmp_path / "out"
    hooks, failures = make(tmp_path, {"on_gate": f'printf %s "$CHORAGOS_TASK" > {out}'})
    hostile = f'"; touch {pwned} # $(touch {pwned}) `touch {pwned}`'
    assert hooks.fire("on_gate", role="release", task=hostile, task_id="T4")
    hooks.wait()
    assert out.read_text() == hostile
    assert not pwned.exists() and failures == []


def test_documented_environment(tmp_path):
    out = tmp_path / "env"
    hooks, _ = make(tmp_path, {"on_timeout": f"env > {out}"})
    hooks.fire("on_timeout", role="coder", task="slow", task_id="T2")
    hooks.wait()
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["CHORAGOS_ROLE"] == "coder" and env["CHORAGOS_TASK_ID"] == "T2"
    assert env["CHORAGOS_HOOK"] == "on_timeout" and env["CHORAGOS_DIR"] == str(tmp_path)
    assert env["PATH"] == os.environ["PATH"]  # inherits the serve environment


def test_a_hook_never_finds_its_programs_in_the_workspace(tmp_path):
    """``sh`` and what the hook runs are looked up outside the workspace, where
    agents cannot plant them: a planted ``sh`` or ``notify-send`` never runs."""
    work, ran = tmp_path / "work", tmp_path / "ran"
    planted = work / ".choragos" / "bin"
    planted.mkdir(parents=True)
    for name in ("sh", "notify-send"):
        (planted / name).write_text(f"#!/bin/sh\necho planted {name} >> {ran}\n")
        (planted / name).chmod(0o755)
    failures = []
    hooks = Hooks({"on_gate": f"notify-send hi 2>/dev/null; echo \"$PATH\" >> {ran}"}, work,
                  lambda **f: failures.append(f), base_env={"PATH": f"{planted}:.:/usr/bin:/bin"})
    assert hooks.fire("on_gate", role="coder")
    hooks.wait()
    assert ran.read_text() == "/usr/bin:/bin\n" and failures == []


def test_failing_hook_is_reported(tmp_path):
    hooks, failures = make(tmp_path, {"on_input": "echo nope >&2; exit 7"})
    hooks.fire("on_input", role="coder")
    hooks.wait()
    assert failures == [{"hook": "on_input", "role": "coder", "output": "nope\n",
                         "reason": "exit status 7"}]


def test_hanging_hook_is_killed_with_its_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    hooks, failures = make(tmp_path, {"on_gate": f"sleep 30 & echo $! > {pidfile}; wait"},
                           timeout=0.5)
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert failures and "killed" in failures[0]["reason"]
    child = int(pidfile.read_text())
    wait_until(lambda: not pid_alive(child), 5, message="the hook's child to be gone")




def test_unconfigured_hook_does_nothing(tmp_path):
    hooks, _failures = make(tmp_path, {"on_gate": "  "})
    assert not hooks.fire("on_gate", role="r")
    assert not hooks.fire("on_timeout", role="r")
