"""``daemon.spawn``: the caller's own set-up runs while the daemon starts.

``serve`` loads the deck's client there, so that import is done on the
machine's other core while the server starts, not after it said it is ready."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from choragos.session import daemon
from tests.conftest import wait_until

pytestmark = pytest.mark.timeout(60)


def test_the_caller_s_set_up_runs_before_the_daemon_answers(tmp_path: Path) -> None:
    marker = tmp_path / "loaded"

    def server(ready: daemon.Ready) -> int:
        # Says ok only once the caller did its part: run after the answer
        # instead, the part would never come and the start would fail.
        try:
            wait_until(marker.exists, 10)
        except AssertionError:
            ready.fail("the caller's set-up did not run while the server started")
            return 1
        ready.ok(pid=os.getpid())
        return 0

    started = daemon.spawn(server, tmp_path, tmp_path / "server.log", timeout=20,
                           meanwhile=marker.touch)
    assert started.ok, started.reason
    assert started.info["pid"] != os.getpid()
