"""Fixtures for end-to-end tests: the fake model server and the real Claude CLI.

``claude_tui`` starts the real Claude Code CLI in a PTY against ``fake_model``
with an isolated HOME and workspace; ``crew`` starts a real ``choragos serve
--headless`` whose roles are all real claudes.  Every process either starts
is stopped and checked gone after the test.  Tests using them carry the
``claude`` marker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.e2e.claudeenv import (
    CLAUDE_BIN,
    DEFAULT_ALLOW,
    Terminal,
    claude_env,
    install_cli,
    prepare_home,
    prepare_workspace,
)
from tests.e2e.fakegemini import FakeGemini
from tests.e2e.fakemodel import FakeModel
from tests.e2e.fakeopenai import FakeOpenAI
from tests.e2e.scenario import ClaudeCrew
from tests.e2e.seats import CODEX_BIN, GEMINI_BIN, Fakes, SeatCrew


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    with FakeModel() as model:
        yield model


def require_cli(target: str, binary: Path, what: str) -> Path:
    """``binary``, installed under .cache/ if missing; skipped only outside CI."""
    path, reason = install_cli(target, binary, what)
    if path is None:
        # CI installs the CLIs up front (.ci/run); there a missing CLI is a failure.
        if os.environ.get("CI"):
            pytest.fail(f"{what} is required in CI: {reason}")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The Claude Code CLI, installed once under .cache/ if it is missing."""
    return require_cli("claude", CLAUDE_BIN, "the Claude Code CLI")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture
def claude_tui(claude_bin: Path, fake_model: FakeModel,
               short_tmp: Path) -> Iterator[Callable[..., Terminal]]:
    """A factory: ``claude_tui(allow=..., rows=..., cols=...)`` -> a running Terminal."""
    started: list[Terminal] = []

    def start(allow: Iterable[str] = DEFAULT_ALLOW, rows: int = 40, cols: int = 120,
              args: Iterable[str] = (), extra_env: dict[str, str] | None = None) -> Terminal:
        seat = short_tmp / f"seat{len(started)}"
        workspace = prepare_workspace(seat / "ws", allow)
        home = prepare_home(seat / "home", workspace)
        env = claude_env(home, fake_model.base_url, extra_env)
        terminal = Terminal([str(claude_bin), *args], env, workspace, rows, cols)
        started.append(terminal)
        return terminal

    yield start
    for terminal in started:
        terminal.close()
    for terminal in started:
        wait_until(lambda t=terminal: not _group_alive(t.proc.pid), timeout=5,
                   message=f"claude process group {terminal.proc.pid} to be gone")


@pytest.fixture
def crew(claude_bin: Path, fake_model: FakeModel,
         short_tmp: Path) -> Iterator[Callable[..., ClaudeCrew]]:
    """A factory: ``crew(config_toml, allow=..., trusted=...)`` -> a started crew."""
    started: list[ClaudeCrew] = []

    def start(config: str, allow: Iterable[str] = DEFAULT_ALLOW,
              trusted: bool = True) -> ClaudeCrew:
        session = ClaudeCrew(short_tmp, config, fake_model, claude_bin, allow, trusted)
        started.append(session)
        return session.start()

    yield start
    for session in started:
        session.finish()


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return require_cli("gemini", GEMINI_BIN, "the Gemini CLI")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return require_cli("codex", CODEX_BIN, "the Codex CLI")


@pytest.fixture
def fakes(fake_model: FakeModel) -> Iterator[Fakes]:
    with FakeGemini() as gemini, FakeOpenAI() as openai:
        yield Fakes(fake_model, gemini, openai)


@pytest.fixture
def seat_crew(claude_bin: Path, gemini_bin: Path, codex_bin: Path, fakes: Fakes,
              short_tmp: Path) -> Iterator[Callable[..., SeatCrew]]:
    """A factory: ``seat_crew(config_toml, trusted=...)`` -> a started crew of any CLIs."""
    started: list[SeatCrew] = []
    bins = {"claude": claude_bin, "gemini": gemini_bin, "codex": codex_bin}

    def start(config: str, trusted: bool = True) -> SeatCrew:
        session = SeatCrew(short_tmp, config, fakes, bins, trusted)
        started.append(session)
        return session.start()

    yield start
    for session in started:
        session.finish()
