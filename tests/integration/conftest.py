"""The ``serve`` fixture: a real headless session per test, cleaned up after."""

from __future__ import annotations

import pytest

from tests.integration.gitrepo import init_repo
from tests.integration.harness import Serve
from tests.integration.smallfs import small_fs  # noqa: F401 - a fixture for the tests here


@pytest.fixture
def repo(tmp_path):
    """A new, empty git repository (gitrepo.init_repo); a module with a
    ``repo`` of its own uses that one."""
    return init_repo(tmp_path / "repo")


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
