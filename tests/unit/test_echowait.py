"""Keys first: another role's output waits for a typed key's echo, and only
as long as the echo takes or the hold allows."""

from __future__ import annotations

import threading

from choragos.terminal.echowait import EchoWait
from tests.conftest import wait_until


def _reader(wait: EchoWait, role: str) -> threading.Thread:
    """A reader thread about to feed ``role``'s output."""
    thread = threading.Thread(target=wait.take_turn, args=(role,), daemon=True)
    thread.start()
    return thread


def test_nothing_awaited_holds_nobody():
    wait = EchoWait(hold=30)
    wait.take_turn("coder")
    assert wait.held == 0


def test_the_typed_role_itself_is_never_held():
    wait = EchoWait(hold=30)
    wait.expect("orchestrator")
    wait.take_turn("orchestrator")
    assert wait.held == 0


def test_another_role_waits_for_the_echo_to_be_drawn():
    wait = EchoWait(hold=30)
    wait.expect("orchestrator")
    reader = _reader(wait, "coder")
    wait_until(lambda: wait.waiting == 1, 5, message="the coder's reader holding")
    wait.drawn("reviewer")  # not the echo awaited: still held
    reader.join(0.2)
    assert reader.is_alive() and wait.waiting == 1
    wait.fed("orchestrator", 1)
    wait.drawn("orchestrator")
    reader.join(5)
    assert not reader.is_alive() and wait.waiting == 0 and wait.held == 1
    wait.take_turn("coder")  # drawn: nothing awaited any more
    assert wait.held == 1


def test_the_hold_ends_by_itself_when_no_echo_comes():
    wait = EchoWait(hold=0.2)
    wait.expect("orchestrator")
    reader = _reader(wait, "coder")
    reader.join(10)
    assert not reader.is_alive() and wait.held == 1
    wait.take_turn("coder")  # the hold is over: no second wait for the same key
    assert wait.held == 1


def test_a_new_key_restarts_the_hold_and_drawn_without_a_role_releases_it():
    wait = EchoWait(hold=30)
    wait.expect("orchestrator")
    wait.drawn()
    wait.take_turn("coder")
    assert wait.held == 0
    wait.expect("orchestrator")
    readers = [_reader(wait, "coder"), _reader(wait, "tester")]
    wait_until(lambda: wait.waiting == 2, 5, message="both readers holding")
    wait.drawn()
    for reader in readers:
        reader.join(5)
        assert not reader.is_alive()


def test_an_echo_drawn_in_pieces_holds_the_others_until_it_is_whole():
    """Four keys typed, their echo read one byte first: drawing that byte
    does not let the neighbours in ahead of the other three."""
    wait = EchoWait(hold=30)
    wait.expect("orchestrator", 4)
    reader = _reader(wait, "coder")
    wait_until(lambda: wait.waiting == 1, 5, message="the coder's reader holding")
    wait.fed("coder", 4000)  # the neighbour's own output counts for nothing
    wait.fed("orchestrator", 1)
    wait.drawn("orchestrator")
    reader.join(0.2)
    assert reader.is_alive() and wait.waiting == 1
    wait.fed("orchestrator", 3)
    wait.drawn("orchestrator")
    reader.join(5)
    assert not reader.is_alive() and wait.waiting == 0


def test_keys_typed_before_the_last_echo_came_back_add_to_what_is_owed():
    wait = EchoWait(hold=30)
    wait.expect("orchestrator", 2)
    wait.fed("orchestrator", 1)
    wait.expect("orchestrator", 2)  # one byte of the first echo and two more to come
    wait.fed("orchestrator", 2)
    wait.drawn("orchestrator")
    reader = _reader(wait, "coder")
    wait_until(lambda: wait.waiting == 1, 5, message="still held: one byte owed")
    wait.fed("orchestrator", 1)
    wait.drawn("orchestrator")
    reader.join(5)
    assert not reader.is_alive()


def test_a_new_echo_owes_only_its_own_keys():
    """Once an echo was whole, what the agent printed past it is not credit
    for the next key."""
    wait = EchoWait(hold=30)
    wait.expect("orchestrator", 1)
    wait.fed("orchestrator", 500)  # an agent redrawing its whole input line
    wait.drawn("orchestrator")
    wait.expect("orchestrator", 3)
    wait.fed("orchestrator", 2)
    wait.drawn("orchestrator")
    reader = _reader(wait, "coder")
    wait_until(lambda: wait.waiting == 1, 5, message="held: the new echo is not whole")
    wait.drawn()  # no role named: released whatever is owed
    reader.join(5)
    assert not reader.is_alive()


def test_an_echo_that_never_came_back_is_not_owed_by_the_next_key():
    """The hold for a key that was never echoed ran out: the next key owes
    only its own echo."""
    wait = EchoWait(hold=0.05)
    wait.expect("orchestrator", 5)  # an agent showing nothing for these
    wait_until(lambda: (wait.take_turn("coder"), wait.held)[1] == 1, 5,
               message="the first hold to run out")
    wait.hold = 30
    wait.expect("orchestrator", 1)
    wait.fed("orchestrator", 1)
    wait.drawn("orchestrator")
    wait.take_turn("coder")  # released: nothing of the first keys is owed
    assert wait.held == 1


def test_a_readers_one_call_takes_its_turn_counts_the_echo_and_says_whose_it_is():
    wait = EchoWait(hold=30)
    assert wait.reading("coder", 4096) is False  # nothing awaited: no wait, no echo
    wait.expect("orchestrator", 2)
    assert wait.reading("orchestrator", 1) is True  # half of the echo
    wait.drawn("orchestrator")  # not whole yet: the others stay held
    result: list[bool] = []
    reader = threading.Thread(target=lambda: result.append(wait.reading("coder", 4096)),
                              daemon=True)
    reader.start()
    wait_until(lambda: wait.waiting == 1, 5, message="the coder's reader holding")
    assert wait.reading("orchestrator", 1) is True  # the rest of the echo
    wait.drawn("orchestrator")
    reader.join(5)
    assert result == [False] and wait.held == 1
    assert wait.reading("orchestrator", 1) is False  # drawn: not awaited any more
