"""Hooks: what a failure quotes of the hook's output (all of it as it came,
or nothing), a hook that closes its output but keeps running, and a hook
that never sees the session's own standard input."""

from __future__ import annotations

import os

from tests.unit.test_hooks_details import make


def test_output_that_comes_in_pieces_is_quoted_whole(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": "echo first; sleep 0.2; echo second; exit 1"})
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert failures == [{"hook": "on_gate", "role": "r", "output": "first\nsecond\n",
                         "reason": "exit status 1"}]


def test_a_silent_failure_quotes_no_output(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": "exit 3"})
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert [(f["output"], f["reason"]) for f in failures] == [("", "exit status 3")]


def test_the_end_of_output_past_the_buffer_is_what_is_quoted(tmp_path):
    # A little more than the bytes held while it runs, ending in a line to recognise.
    script = "yes x | head -c 65536; echo; echo the-end; exit 1"
    hooks, failures = make(tmp_path, {"on_gate": script})
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    [failure] = failures
    assert failure["output"].endswith("x\n\nthe-end\n") and len(failure["output"]) == 2000


def test_a_hook_that_closes_its_output_but_runs_on_is_killed(tmp_path):
    hooks, failures = make(tmp_path, {"on_gate": "exec >/dev/null 2>&1; sleep 30"},
                           timeout=1.0)
    hooks.fire("on_gate", role="r")
    hooks.wait(10)
    assert [f["reason"] for f in failures] == ["still running after 1s; killed"]


def test_a_hook_never_reads_the_sessions_stdin(tmp_path):
    out = tmp_path / "in"
    read, write = os.pipe()
    os.write(write, b"the operator's keystrokes\n")
    os.close(write)
    saved = os.dup(0)
    os.dup2(read, 0)  # what the session itself would read
    try:
        hooks, failures = make(tmp_path, {"on_gate": f"cat > {out}"})
        hooks.fire("on_gate", role="r")
        hooks.wait(10)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read)
    assert failures == [] and out.read_bytes() == b""
