"""The ``serve`` fixture: a real headless session per test, cleaned up after."""

from __future__ import annotations

import pytest

from tests.integration.harness import Serve


@pytest.fixture
def serve(short_tmp):
    """``serve(config)`` starts a session in a fresh git repo; teardown stops it
    and checks that it exited cleanly and left no agent and no socket behind."""
    started: list[Serve] = []

    def make(config: str, git: bool = True, env: dict[str, str] | None = None) -> Serve:
        work = short_tmp / "work"
        work.mkdir()
        session = Serve(work, config, sock=short_tmp / "s.sock", git=git)
        session.env.update(env or {})
        started.append(session)
        return session.start()

    yield make
    for session in started:
        assert session.stop() == 0, session.stderr()
        session.assert_no_leftovers()
