"""The deck's commands run off the loop's thread, on workers that end once
idle (a pool's idle threads and concurrent.futures stayed in the server)."""

from __future__ import annotations

import logging
import threading

import pytest

from choragos.ui.deckcommands import CommandRunner, Workers
from tests.conftest import wait_until

pytestmark = pytest.mark.timeout(30)


class Port:
    """A session that answers each command once the test lets it."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.seen: list[tuple[str, str]] = []
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def dispatch(self, request: dict) -> dict:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.go.wait(10)
        with self._lock:
            self.running -= 1
            self.seen.append((request["cmd"], threading.current_thread().name))
        if request["cmd"] == "bad":
            return {"status": "error", "error": "no such thing"}
        return {"status": "ok", "n": request["n"]}


class Host:
    def __init__(self) -> None:
        self.posted: list = []
        self.said: list[str] = []

    def post(self, work, wake: bool = True) -> None:
        self.posted.append(work)

    def say(self, text: str, style: str = "", seconds: float = 0) -> None:
        self.said.append(text)


def _workers_alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("deck-cmd")]


def test_commands_run_two_at_a_time_and_their_threads_end_when_done() -> None:
    port, host = Port(), Host()
    runner = CommandRunner(port, host)
    answers: list[dict] = []
    for n in range(5):
        runner.command({"cmd": "status", "n": n}, then=answers.append)
    runner.command({"cmd": "bad", "n": 5})
    wait_until(lambda: port.running == 2, message="two commands running")
    assert len(_workers_alive()) == 2
    port.go.set()
    wait_until(lambda: len(host.posted) == 6, message="every answer posted")
    wait_until(lambda: not _workers_alive(), message="the workers ended")
    assert port.most == 2
    assert threading.current_thread().name not in {name for _, name in port.seen}
    for work in host.posted:  # on the loop's thread, as the deck runs them
        work()
    assert sorted(a["n"] for a in answers) == [0, 1, 2, 3, 4]
    assert host.said == ["bad: no such thing"]
    # More work later starts a worker again.
    port.go.clear()
    runner.command({"cmd": "status", "n": 6})
    wait_until(lambda: port.running == 1, message="a new worker")
    port.go.set()
    wait_until(lambda: not _workers_alive(), message="the worker ended again")


def test_shutdown_drops_what_waits_finishes_what_runs_and_refuses_more() -> None:
    port, host = Port(), Host()
    runner = CommandRunner(port, host)
    for n in range(4):
        runner.command({"cmd": "status", "n": n})
    wait_until(lambda: port.running == 2, message="two commands running")
    runner.shutdown()
    runner.command({"cmd": "status", "n": 9})  # refused quietly: the deck is closing
    port.go.set()
    wait_until(lambda: not _workers_alive(), message="the workers ended")
    assert sorted(port.seen)[0][0] == "status" and len(port.seen) == 2


def test_shutdown_with_wait_runs_what_was_queued_first() -> None:
    done: list[int] = []
    workers = Workers(1, "deck-cmd")
    gate = threading.Event()
    workers.submit(lambda: (gate.wait(10), done.append(0)))
    workers.submit(lambda: done.append(1))
    gate.set()
    workers.shutdown(wait=True)
    assert done == [0, 1] and not _workers_alive()
    with pytest.raises(RuntimeError):
        workers.submit(lambda: None)


def test_work_that_raises_is_logged_and_the_rest_still_runs(caplog) -> None:
    done: list[str] = []
    workers = Workers(1, "deck-cmd")

    def broken() -> None:
        raise ValueError("broken read")

    with caplog.at_level(logging.ERROR, logger="choragos"):
        workers.submit(broken)
        workers.submit(lambda: done.append("after"))
        workers.shutdown(wait=True)
    assert done == ["after"]
    assert "broken read" in caplog.text

