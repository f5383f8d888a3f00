"""What one keystroke costs the session's Python on its own way: the Python
calls from the client's key bytes to their write into the agent's PTY, and
from the agent's echo read off that PTY to its bytes handed to the client.

The real pieces on both halves: the deck (its key path, echo lane and
screen), the roles' view with a real role actor, its agent (the echo
fixture) in a real PTY, that role's reader thread, terminal and echo wait.
Counted with a profile hook on the two threads, not timed: every call on
these halves costs about a microsecond on a core the floods left cold.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from choragos.actors.rolesview import RolesView
from choragos.ui.deck import Deck
from choragos.ui.uiactor import SessionAccess
from tests.conftest import wait_until
from tests.integration.harness import AGENT
from tests.integration.test_role_actor import start_role, stop_role
from tests.ui.test_deck import FakePort
from tests.ui.test_redraw import _settled

pytestmark = pytest.mark.timeout(120)

KEYS = 12
# Python calls on each half (the median key), measured: the key's way in
# 12 (22 before this pass: the deck's port, the roles' view and the echo
# wait each took a layer or more), the echo's way out 23 (35 before: the
# reader's look-ups, the echo wait's Event, the deck's hand-on to the lane,
# the screen's write and flush, the attach server's contextlib).  Each
# bound sits between the two.  (The way in is 11 since the deck's own
# feed_input went; test_key_bytecodes.py counts bytecodes on both.)
MOST_IN = 15
MOST_OUT = 26


class _Calls:
    """Python calls on one thread between a read (or ``begin``) and the next
    write: one count per key."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self._n: int | None = None

    def begin(self) -> None:
        self._n = 0

    def profile(self, _frame, event: str, arg) -> None:
        if event == "call":
            if self._n is not None:
                self._n += 1
        elif event == "c_call":
            name = getattr(arg, "__name__", "")
            if name == "read" and getattr(arg, "__module__", "") == "posix":
                self._n = 0  # what was read: the echo's way starts here
            elif name == "write" and getattr(arg, "__module__", "") == "posix" \
                    and self._n is not None:
                self.counts.append(self._n)
                self._n = None


class _Port(FakePort):
    """The deck's port with the session's own way to the roles (SessionAccess
    over a real roles' view) for everything a keystroke and its echo touch."""

    def __init__(self, workdir: Path, roles: RolesView) -> None:
        super().__init__(workdir)
        access = SessionAccess(roles, None, workdir)
        for name in ("type_keys", "expect_echo", "echo_drawn", "terminal", "type_echoed"):
            if hasattr(access, name):  # (type_echoed: as the session's port has it or not)
                setattr(self, name, getattr(access, name))


@pytest.fixture
def typed_at(tmp_path):
    """A deck typing at a real echoing agent: (deck, the reader's calls)."""
    echo = _Calls()
    reader = "pty-orchestrator"

    def on_reader(frame, event, arg):
        if threading.current_thread().name == reader:
            echo.profile(frame, event, arg)

    # Every thread started from now on, the reader's turns among them.
    threading.setprofile(on_reader)
    try:
        with typing_deck(tmp_path) as (deck, read):
            yield deck, echo, read
    finally:
        threading.setprofile(None)


@contextlib.contextmanager
def typing_deck(tmp_path: Path) -> Iterator[tuple[Deck, int]]:
    """A started deck attached to a pipe, typing at a real role "orchestrator"
    (the echo fixture) through the session's roles' view: (deck, the pipe's
    end the client's bytes come out of).  Hooks on the role's threads are
    the caller's to set first."""
    role = start_role(tmp_path, sys.executable, (str(AGENT),), name="orchestrator")
    try:
        wait_until(lambda: role.core.outcomes(), 15, message="the boot brief")
        roles = RolesView(FakePort(tmp_path).config)
        roles.add("orchestrator", role.state, role.handle)
        deck = Deck(_Port(tmp_path, roles), 120, 40)
        read, write = os.pipe()
        deck.screen.set_sink(lambda data: os.write(write, data))  # as the attach server's
        deck.start()
        deck.client_attached(deck.client)
        try:
            wait_until(lambda: deck.lane.open, 10, message="a first frame")
            _settled(deck)
            yield deck, read
        finally:
            deck.stop()
            deck.screen.close()
            os.close(read)
            os.close(write)
    finally:
        stop_role(role)


def test_a_keystroke_and_its_echo_take_few_python_calls(typed_at):
    deck, echo, client = typed_at
    typing = _Calls()
    echoes: list[int] = []
    for i in range(KEYS):
        key = b"abcdefghijkl"[i:i + 1]
        echo.counts.clear()

        def hooked(on: bool) -> None:
            if on:
                typing.begin()
            sys.setprofile(typing.profile if on else None)
        typed(deck, client, key, hooked, lambda: bool(echo.counts))
        echoes.append(echo.counts[0])  # the echo's piece read and sent ahead
        _settled(deck, quiet=0.05)
        _take(client)
    assert len(typing.counts) == KEYS  # every key went straight into the PTY
    assert deck.lane.sent_ahead >= KEYS // 2, deck.lane.sent_ahead
    assert sorted(typing.counts)[KEYS // 2] <= MOST_IN, typing.counts
    assert sorted(echoes)[KEYS // 2] <= MOST_OUT, echoes


def typed(deck: Deck, client: int, key: bytes, hooked: Callable[[bool], None],
          heard: Callable[[], bool]) -> None:
    """``key`` given to the deck with this thread's hooks on (``hooked(True)``,
    ``hooked(False)`` after), then its echo awaited on ``client`` until
    ``heard()`` too."""
    shown = bytearray()
    hooked(True)
    try:
        deck.feed_input(key)
    finally:
        hooked(False)

    def echoed() -> bool:
        shown.extend(_take(client))
        return key in shown and heard()
    wait_until(echoed, 10, message="the echo sent ahead to the client")


def _take(fd: int) -> bytes:
    """What the deck sent the client so far."""
    data = b""
    while select.select([fd], [], [], 0)[0]:
        data += os.read(fd, 65536)
    return data
