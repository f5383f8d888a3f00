"""A role's PTY traffic off the actor's thread, with real PTYs: the deck's
keys go into the PTY on the deck's thread, the agent's output is fed to the
terminal on the reader thread, and the actor still classifies the screen,
waits for injection echoes, holds keys while paused and takes over cleanly
when it is replaced or the process restarts."""

from __future__ import annotations

import sys
import threading
import time
from types import SimpleNamespace

import pytest

from choragos.actors import messages as m
from choragos.actors import roleio, rolewatch
from choragos.config.model import RoleSpec
from choragos.roles.rolestatus import RoleStatus
from choragos.terminal.emulator import Terminal
from choragos.terminal.ptyproc import PtyChild
from tests.conftest import wait_until
from tests.integration import test_role_actor as role_actor
from tests.integration.harness import AGENT, read_agent_log
from tests.integration.test_role_actor import stop_role

FLOOD = "i=0; while :; do i=$((i+1)); echo \"$1 line $i\"; sleep 0.002; done"


def start_role(tmp_path, command: str, args: tuple[str, ...]) -> SimpleNamespace:
    role = role_actor.start_role(tmp_path, command, args)
    role.typed = lambda data: roleio.type_keys(role.state, data, role.handle.tell)
    return role


@pytest.fixture
def agent_args() -> tuple[str, ...]:
    return ()


@pytest.fixture
def agent(tmp_path, agent_args):
    role = start_role(tmp_path, sys.executable, (str(AGENT), *agent_args))
    wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
    yield role
    stop_role(role)


@pytest.fixture
def flood(tmp_path):
    role = start_role(tmp_path, "/bin/sh", ("-c", FLOOD, "sh", "first"))
    yield role
    stop_role(role)


class Threads:
    """The threads that wrote to PTYs and fed terminals, by what they did."""

    def __init__(self, monkeypatch) -> None:
        self.seen: list[tuple[str, bytes]] = []
        real_try, real_write, real_feed = PtyChild.try_write, PtyChild.write, Terminal.feed

        def try_write(child, data):
            self.seen.append(("write", bytes(data)))
            return real_try(child, data)

        def write(child, data):
            self.seen.append(("write", bytes(data)))
            return real_write(child, data)

        def feed(terminal, data, **kwargs):
            self.seen.append(("feed", threading.current_thread().name.encode()))
            return real_feed(terminal, data, **kwargs)

        self.writers: dict[bytes, str] = {}
        monkeypatch.setattr(PtyChild, "try_write", self._named(try_write))
        monkeypatch.setattr(PtyChild, "write", self._named(write))
        monkeypatch.setattr(Terminal, "feed", feed)

    def _named(self, write):
        def named(child, data):
            self.writers.setdefault(bytes(data), threading.current_thread().name)
            return write(child, data)
        return named

    def feeders(self) -> set[bytes]:
        return {who for what, who in self.seen if what == "feed"}


def test_keys_go_in_on_the_typing_thread_and_the_echo_is_fed_by_the_reader(
        monkeypatch, agent):
    threads = Threads(monkeypatch)
    agent.typed(b"direct keys")
    wait_until(lambda: "direct keys" in agent.state.terminal.text(), 5,
               message="the echo on the pane's screen")
    assert threads.writers[b"direct keys"] == threading.current_thread().name
    assert threads.feeders() == {b"pty-coder"}  # never the actor's thread
    assert not agent.state.keys.waiting


def status(role: SimpleNamespace) -> RoleStatus | None:
    view = role.core.view()
    return view.status if view is not None else None


@pytest.mark.parametrize("agent_args", [("--ask", "proceed")])
def test_output_fed_on_the_reader_thread_is_classified(agent):
    wait_until(lambda: status(agent) is RoleStatus.IDLE, 5, message="idle after the brief")
    agent.typed(b"please proceed")
    wait_until(lambda: "please proceed" in agent.state.terminal.text(), 5)
    agent.typed(b"\r")
    # The agent asks "Do you want to proceed? (y/n)": the actor sees the dialog
    # on the screen the reader fed and classifies the role as waiting.
    wait_until(lambda: status(agent) is RoleStatus.WAITING, 5,
               message="the dialog classified as waiting")
    agent.typed(b"y")
    wait_until(lambda: status(agent) is not RoleStatus.WAITING, 5,
               message="the answered dialog classified again")


def test_an_injection_waits_for_its_echo_on_the_reader_fed_screen(monkeypatch, agent):
    threads = Threads(monkeypatch)
    agent.handle.tell(m.Inject(m.Injection(7, "coder", "injected after the change", "notice")))
    wait_until(lambda: len(agent.core.outcomes()) == 2, 10, message="the injection's outcome")
    outcome = agent.core.outcomes()[-1]
    assert outcome.ok, outcome.detail
    assert "Enter" in outcome.detail
    submits = [r["text"] for r in read_agent_log(agent.state.workdir / "agent.jsonl",
                                                 "submit")]
    assert submits[-1] == "injected after the change"  # typed once, submitted once
    assert threads.feeders() == {b"pty-coder"}


def test_keys_typed_into_a_paused_role_wait_for_the_resume_in_order(agent):
    assert agent.handle.ask(m.Pause(), timeout=5) == "paused"
    agent.typed(b"first ")
    agent.typed(b"second")
    assert list(agent.state.keys.waiting) == [b"first ", b"second"]
    assert "first" not in agent.state.terminal.text()
    assert agent.handle.ask(m.Resume(), timeout=5) == "resumed"
    agent.typed(b" third")  # typed after the resume: behind the held keys
    wait_until(lambda: "first second third" in agent.state.terminal.text(), 5,
               message="the held keys, then the new ones, on the screen")
    # Keys leave the queue once written, and their echo may be drawn first.
    wait_until(lambda: not agent.state.keys.waiting, 5, message="the queue emptied")


def test_keys_for_an_exited_role_are_dropped(agent):
    agent.handle.ask(m.StopProcess(1.0), timeout=10)
    agent.typed(b"into the void")
    assert not agent.state.keys.waiting


def test_a_replaced_actor_takes_over_the_reader_mid_stream(flood):
    wait_until(lambda: "first line 20" in "\n".join(flood.state.terminal.history()
                                                    + flood.state.terminal.display()), 10)
    flood.handle.tell("not a message any handler knows")  # the handler raises
    wait_until(lambda: flood.events, 5, message="the supervisor to replace the actor")
    assert flood.events[0][0] == "actor restarted"
    seen = len(flood.core.told)
    gen = flood.state.terminal.generation
    # The reader kept feeding, and the new actor still gets notices: it
    # classifies and publishes the moving screen.
    wait_until(lambda: flood.state.terminal.generation > gen + 20, 5)
    wait_until(lambda: any(isinstance(x, m.RoleReported) for x in flood.core.told[seen:]), 5,
               message="a classification by the new actor")


def test_a_flooding_role_wakes_its_actor_once_per_classification_not_per_chunk(
        monkeypatch, flood):
    """While a classification is on its way it will read everything fed so
    far, so the reader tells the actor nothing more: counted, the notices
    stay near one per classification however many chunks the flood is
    read in."""
    feeds, notices = [0], [0]
    real_feed = Terminal.feed

    def feed(terminal, data, **kwargs):
        feeds[0] += 1
        return real_feed(terminal, data, **kwargs)

    class Seen(roleio.OutputSeen):
        def __init__(self, gen: int) -> None:
            notices[0] += 1
            super().__init__(gen)

    monkeypatch.setattr(Terminal, "feed", feed)
    monkeypatch.setattr(roleio, "OutputSeen", Seen)
    started = time.monotonic()
    wait_until(lambda: feeds[0] >= 200, 20, message="200 chunks of the flood")
    # Each notice arms a classification, and none comes while one is armed:
    # however slowly a loaded machine reads the flood, no more than one a
    # CLASSIFY_DELAY (a few more for the brief's own classifications).
    allowed = (time.monotonic() - started) / rolewatch.CLASSIFY_DELAY + 3
    assert notices[0] <= allowed < feeds[0], (notices[0], allowed, feeds[0])
    # The screen still moves on in the role's published view.
    seen = len(flood.core.told)
    wait_until(lambda: any(isinstance(x, m.RoleReported) for x in flood.core.told[seen:]), 5,
               message="a classification of the moving screen")


@pytest.mark.parametrize("agent_args", [("--ask", "proceed")])
def test_a_replaced_actor_classifies_even_when_its_predecessor_took_a_pending_one_with_it(
        agent):
    """A classification armed by the instance that crashed went with its
    mailbox: the new instance must not take it for one still on its way,
    or the role's status would never move again."""
    wait_until(lambda: status(agent) is RoleStatus.IDLE, 5, message="idle after the brief")
    # Quiet, and no classification of the brief's output still on its way.
    wait_until(lambda: not agent.state.classify_pending
               and time.monotonic() - agent.state.last_output > 2 * rolewatch.CLASSIFY_DELAY, 5,
               message="the screen settled")
    agent.state.classify_pending = True  # armed, its message lost with the old instance
    agent.handle.tell("not a message any handler knows")  # the handler raises
    wait_until(lambda: agent.events, 5, message="the supervisor to replace the actor")
    agent.typed(b"please proceed")
    wait_until(lambda: "please proceed" in agent.state.terminal.text(), 5)
    agent.typed(b"\r")
    wait_until(lambda: status(agent) is RoleStatus.WAITING, 5,
               message="the dialog classified by the new instance")


def test_a_restart_mid_stream_shows_only_the_new_process(flood):
    wait_until(lambda: "first line 50" in "\n".join(flood.state.terminal.history()
                                                    + flood.state.terminal.display()), 10)
    flood.state.spec = RoleSpec(name="coder", command="/bin/sh",
                                args=("-c", FLOOD, "sh", "second"))
    flood.handle.tell(m.Restart())
    wait_until(lambda: "second line" in flood.state.terminal.text(), 10)
    # The old process's reader was stopped before the screen was reset: no late
    # chunk of it is fed afterwards.
    for _ in range(20):
        assert "first line" not in flood.state.terminal.text()
        threading.Event().wait(0.01)


def test_queued_keys_keep_their_order_when_the_pty_takes_only_part():
    class HalfFull:
        def __init__(self) -> None:
            self.got: list[bytes] = []

        def try_write(self, data: bytes) -> bytes:
            self.got.append(data[:2])
            return data[2:]

        def write(self, data: bytes) -> bool:
            self.got.append(data)
            return True

    state = SimpleNamespace(child=HalfFull(), status=RoleStatus.IDLE, keys=roleio.KeyQueue())
    told: list = []
    roleio.type_keys(state, b"abcd", told.append)
    roleio.type_keys(state, b"ef", told.append)  # waits behind "cd": no try_write
    assert state.child.got == [b"ab"] and list(state.keys.waiting) == [b"cd", b"ef"]
    assert told == [roleio.FlushKeys(), roleio.FlushKeys()]
    for _ in told:
        roleio.flush_one(state)
    assert state.child.got == [b"ab", b"cd", b"ef"] and not state.keys.waiting


COLOURED_FLOOD = """
import sys, time
out = sys.stdout.buffer
for start in range(0, 6000, 300):
    out.write("".join(f"\\x1b[3{i % 7}m[{i:06d}]\\x1b[0m compiling module_{i % 97}.py ... ok\\n"
                      for i in range(start, start + 300)).encode())
    out.flush()
    time.sleep(0.002)
time.sleep(60)
"""


def test_a_flood_held_back_in_batches_loses_no_line_and_is_drawn_when_it_stops(tmp_path):
    """A real role floods coloured log lines and stops: its terminal holds
    them back to draw a batch at a time, and still every line reaches the
    transcript, once and in order, and nothing stays held once the flood
    stopped (the reader's lull, or the actor's classification, drew it)."""
    role = start_role(tmp_path, sys.executable, ("-c", COLOURED_FLOOD))
    term = role.state.terminal
    held = []
    real_feed = term.feed

    def feed(data: bytes, **kwargs) -> float | None:
        due = real_feed(data, **kwargs)
        held.append(due is not None)
        return due

    term.feed = feed  # type: ignore[method-assign]
    try:
        wait_until(lambda: len(held) > 50 and not term.held
                   and time.monotonic() - role.state.last_output > 0.5, 20,
                   message="the flood over and drawn")
        assert sum(held) > len(held) / 2  # most pieces were held for the next ones
        assert "[005999]" in term.display()[-2]
        logged = (tmp_path / ".choragos" / "logs" / "coder.log").read_text().splitlines()
        numbers = [int(line[1:7]) for line in logged if line.startswith("[")]
        assert numbers == list(range(len(numbers))) and numbers[-1] >= 6000 - term.rows
    finally:
        stop_role(role)
