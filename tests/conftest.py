"""Shared test helpers: deadlines instead of sleeps, isolated paths."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

# No test may reach a real provider: strip every credential-like variable
# from the test process itself, so nothing we spawn can inherit one.
for _name in list(os.environ):
    if _name.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "GEMINI_", "CHORAGOS_")):
        del os.environ[_name]


def wait_until(predicate: Callable[[], object], timeout: float = 10.0,
               interval: float = 0.02, message: str = "condition") -> object:
    """Poll ``predicate`` until it returns something truthy or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


@pytest.fixture
def short_tmp(tmp_path_factory) -> Path:
    """A short temp dir: unix socket paths must stay under ~100 bytes."""
    import tempfile
    path = Path(tempfile.mkdtemp(prefix="chg-", dir="/tmp"))
    yield path
    import shutil
    shutil.rmtree(path, ignore_errors=True)


def pid_alive(pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie waits for init, not for us)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def pytest_collection_modifyitems(config, items) -> None:
    """Under `make mutate`, run a mutant's tests fastest first: it dies at its
    first failing test, so the order only changes how soon that comes."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if not mutant or mutant in ("stats", "fail", "list_all_tests"):
        return
    durations = _test_durations()
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))


_DURATIONS: dict[str, float] | None = None


def _test_durations() -> dict[str, float]:
    """How long each test took in mutmut's clean run (it runs from mutants/)."""
    global _DURATIONS
    if _DURATIONS is None:
        import json
        try:
            with open("mutmut-stats.json", encoding="utf-8") as handle:
                _DURATIONS = json.load(handle).get("duration_by_test", {})
        except (OSError, ValueError):
            _DURATIONS = {}
    return _DURATIONS
