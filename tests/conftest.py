"""Shared test helpers: deadlines instead of sleeps, isolated paths."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

# No test may reach a real provider: strip every credential-like variable
# from the test process itself, so nothing we spawn can inherit one.
for _name in list(os.environ):
    if _name.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "GEMINI_", "CHORAGOS_")):
        del os.environ[_name]

# A verb that finds no session for its directory falls back to the one
# session running for the user.  The suite gets a runtime directory of its
# own (each xdist worker one), so a test never finds the user's sessions or
# those of another run of the suite on the same machine.
_RUNTIME = tempfile.mkdtemp(prefix="chg-rt-", dir="/tmp")
os.environ["XDG_RUNTIME_DIR"] = _RUNTIME
atexit.register(shutil.rmtree, _RUNTIME, True)

# A run started with SIGINT ignored (a background job of a script, nohup)
# passes that on to every child it starts, and the tests that interrupt one
# (Ctrl-C in a verb, in a terminal) saw nothing happen.  With a handler
# here, a child starts with the default, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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


class Told:
    """Stands in for an actor's handle: records every message told to it."""

    def __init__(self) -> None:
        self.told: list = []

    def tell(self, message) -> None:
        self.told.append(message)


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
    if os.environ.get("MUTANT_UNDER_TEST") == "":
        # mutmut's clean run, in the process that forks every mutant's: the
        # record is read once here instead of once per mutant, and what is
        # loaded by now is frozen, so a mutant's garbage collections skip it
        # (and leave its pages shared with this process).
        _test_durations()
        gc.freeze()
        return
    if not _judging_a_mutant():
        return
    durations = _test_durations()
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))


# Under `make mutate`, a test may use this many times its clean run's time
# plus this many seconds (setup, a slower machine) of CPU time before its
# mutant counts as one that loops.  CPU time, not wall time: a test starved
# by a busy machine uses none, a loop uses it all.
HANG_FACTOR, HANG_SLACK = 10.0, 5.0
MUTMUT_TIMEOUT = 36  # the exit status mutmut reports as "timeout"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under `make mutate`, end a mutant's run as timed out as soon as one
    test overruns its limit: a mutant that loops would otherwise hold a
    worker and a core until mutmut's limit for the whole run, many times
    longer."""
    if not _judging_a_mutant():
        yield
        return
    limit = HANG_SLACK + HANG_FACTOR * _test_durations().get(item.nodeid, 0.0)
    done = threading.Event()
    watch = threading.Thread(target=_end_if_looping, args=(done, time.process_time() + limit),
                             name="mutant-loop-watch", daemon=True)
    watch.start()
    try:
        yield
    finally:
        done.set()
        watch.join()


def _end_if_looping(done: threading.Event, cpu_deadline: float) -> None:
    while not done.wait(0.25):
        if time.process_time() > cpu_deadline:
            os._exit(MUTMUT_TIMEOUT)


def _judging_a_mutant() -> bool:
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    return bool(mutant) and mutant not in ("stats", "fail", "list_all_tests",
                                           "mutant_generation")


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
