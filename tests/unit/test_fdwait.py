"""Waiting on a descriptor past 1024, where select() gives up: the wait
itself, and a hook whose output pipe lands there."""

from __future__ import annotations

import contextlib
import os
import resource
import select
from collections.abc import Iterator

import pytest

from choragos.fdwait import wait_ready
from choragos.session.hooks import Hooks

HIGH = 1100  # past select()'s FD_SETSIZE of 1024


@contextlib.contextmanager
def _descriptors_filled_past(number: int) -> Iterator[None]:
    """Every descriptor number up to ``number`` taken, so the next one made is past it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < number + 64:
        pytest.skip(f"the descriptor limit ({hard}) leaves no room past {number}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, number + 64), hard))
    taken: list[int] = []
    try:
        while not taken or taken[-1] < number:
            taken.append(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for fd in taken:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_pipe_past_1024_is_waited_on_for_reading_and_writing():
    with _descriptors_filled_past(HIGH):
        read_end, write_end = os.pipe()
    try:
        assert read_end > HIGH and write_end > HIGH
        with pytest.raises(ValueError):
            select.select([read_end], [], [], 0)  # what the wait must not use
        assert wait_ready(write_end, 0, write=True)
        assert not wait_ready(read_end, 0.05)  # nothing written yet: times out
        os.write(write_end, b"x")
        assert wait_ready(read_end, 0)
        os.close(write_end)
        write_end = -1
        assert os.read(read_end, 1) == b"x" and wait_ready(read_end, None)  # hung up
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_a_hook_fired_when_descriptors_pass_1024_runs_and_its_failure_is_reported(tmp_path):
    failures: list[dict] = []
    hooks = Hooks({"on_done": "echo the hook ran; exit 3"}, tmp_path,
                  lambda **f: failures.append(f), timeout=10)
    with _descriptors_filled_past(HIGH):
        assert hooks.fire("on_done", "coder")
        hooks.wait(10)
    assert failures == [{"hook": "on_done", "role": "coder", "output": "the hook ran\n",
                         "reason": "exit status 3"}]
