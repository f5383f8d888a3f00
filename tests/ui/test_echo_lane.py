"""The echo lane: a typed pane's echo is drawn by the thread that fed it,
never while the loop is mid-change, and never over a dialog.

Counted, not timed: the lane's frames, the loop's wake-ups, and what the
client's terminal shows against what the deck painted.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator

from choragos.terminal.emulator import ECHO_SETTLE, Terminal
from choragos.ui.deckdraw import join_pieces
from choragos.ui.ptyscreen import _UNSURE
from tests.conftest import wait_until
from tests.ui.test_deck import drain as _drain
from tests.ui.test_redraw import _Sent, _settled


@contextlib.contextmanager
def _loop_busy(deck) -> Iterator[None]:
    """The deck's loop, as far as the lane can tell, busy for the block: its
    drawing lock held by another thread."""
    held, release = threading.Event(), threading.Event()

    def busy_loop() -> None:
        with deck.lane.drawing:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=busy_loop)
    holder.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        holder.join(10)


def _client_shows_the_painted_frame(deck, client: Terminal) -> bool:
    client.feed(_drain(deck))
    painted = deck.screen._painted
    if painted is None:
        return False
    cursor = deck.screen._painted_cursor
    return (client.display() == [raw.decode("utf-8").rstrip() for raw, _ in painted]
            and (cursor is None or client.cursor == cursor))


def test_an_echo_is_drawn_before_the_feed_returns(running):
    deck, port = running
    deck.feed_input(b"k")
    assert port.typed("orchestrator") == b"k"
    wakeups, echoes = deck.wakeups, deck.lane.frames
    port.terminals["orchestrator"].feed(b"kQZX")  # the echo, fed on this thread
    assert deck.lane.frames == echoes + 1  # drawn right here ...
    assert deck.wakeups == wakeups  # ... with no wake-up of the loop
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"kQZX"), 10, message="the echo on the client")
    _settled(deck)
    assert deck.lane.frames == echoes + 1


def test_an_echo_that_misses_the_lane_tries_it_again_on_the_next_feed(running):
    """While the loop holds the lock the echo is left to it, and the pane's
    next feed still tries the lane (not silent until the loop caught up)."""
    deck, port = running
    terminal = port.terminals["orchestrator"]
    with _loop_busy(deck):
        missed, echoes = deck.lane.missed, deck.lane.frames
        deck.feed_input(b"m")
        terminal.feed(b"m")
        assert deck.lane.missed == missed + 1
        deck.feed_input(b"n")
        terminal.feed(b"n")
        assert deck.lane.missed == missed + 2  # tried again, missed again
        assert deck.lane.frames == echoes
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"mn"), 10, message="the echo, drawn by the loop")


def test_a_key_written_straight_to_the_agent_announces_its_echo_and_the_lane_ends_the_wait(
        running):
    """The other panes' output waits for the echo (keys first) from the
    moment the key is written until the lane has drawn it."""
    deck, port = running
    port.echoes.clear()
    deck.feed_input(b"w")
    assert port.echoes == [("expect", "orchestrator")]
    assert port.typed("orchestrator") == b"w"
    port.terminals["orchestrator"].feed(b"w")
    assert port.echoes == [("expect", "orchestrator"), ("drawn", "orchestrator")]
    deck.feed_input(b"xyz")
    assert port.echo_sizes[-1] == 3  # what the echo owes, for the neighbours' release


def test_an_echo_left_to_the_loop_ends_the_wait_with_the_loops_frame(running):
    deck, port = running
    with _loop_busy(deck):
        port.echoes.clear()
        deck.feed_input(b"v")
        port.terminals["orchestrator"].feed(b"vQZX")  # the lane misses: the loop's
        assert port.echoes == [("expect", "orchestrator")]
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"vQZX"), 10, message="the echo, drawn by the loop")
    wait_until(lambda: ("drawn", "orchestrator") in port.echoes, 10,
               message="the wait ended by the loop's frame")


def test_output_of_a_pane_not_typed_into_is_the_loops(running):
    deck, port = running
    echoes, frames = deck.lane.frames, deck.frames
    port.terminals["orchestrator"].feed(b"no key was typed")
    assert deck.lane.frames == echoes
    wait_until(lambda: deck.frames > frames, 10, message="the loop's frame")
    assert deck.lane.frames == echoes


def test_the_lane_keeps_a_neighbours_waiting_output_for_its_frame(running):
    deck, port = running
    deck.feed_input(b"e")
    port.terminals["coder"].feed(b"neighbour news\r\n")  # waits for the frame budget
    port.terminals["orchestrator"].feed(b"eQZX")
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"eQZX"), 10, message="the echo")
    assert b"neighbour news" not in sent.data.split(b"eQZX")[0]
    # The neighbour is drawn all the same, by the loop, when its budget is up.
    wait_until(lambda: sent.has(b"neighbour news"), 10, message="the neighbour's output")


def test_an_open_dialog_leaves_the_echo_to_the_loop(running):
    deck, port = running
    deck.feed_input(b"t")  # typed at the agent: its echo would take the lane
    deck.feed_input(b"\x02?")  # but the help dialog opens over the panes
    wait_until(lambda: deck.overlays.kind == "help", 10)
    echoes = deck.lane.frames
    port.terminals["orchestrator"].feed(b"tQZX")
    _settled(deck)
    assert deck.lane.frames == echoes
    assert deck.overlays.kind == "help"  # the dialog is still what the client sees
    deck.feed_input(b"\x1b")
    wait_until(lambda: deck.overlays.widget is None, 10)


def test_the_lane_is_closed_while_nobody_is_attached(running):
    deck, port = running
    deck.feed_input(b"d")
    deck.client_detached()
    wait_until(lambda: not deck.attached, 10)
    echoes = deck.lane.frames
    port.terminals["orchestrator"].feed(b"dQZX")
    assert deck.lane.frames == echoes


def test_typing_beside_a_busy_loop_leaves_the_client_showing_the_last_frame(running):
    """The lane and the loop draw from different threads; whatever their
    interleaving, the client ends up showing exactly the deck's last frame,
    and that frame is what a fresh render of the deck gives."""
    deck, port = running
    client = Terminal(120, 40, scrollback=0)
    deck.client_attached(deck.client)  # a fresh client: a whole frame first
    wait_until(lambda: _client_shows_the_painted_frame(deck, client), 10,
               message="the first frame")
    rng = random.Random(7)
    stop = threading.Event()

    def neighbours() -> None:
        for i in range(400):
            if stop.is_set():
                return
            port.terminals["coder"].feed(b"\x1b[3%dmflood %d\x1b[0m\r\n" % (i % 7, i))
            deck.post(lambda: None)  # work for the loop: it holds the lock

    flooder = threading.Thread(target=neighbours)
    flooder.start()
    # At least 150 keys, and on until the lane drew some of them: on a busy
    # machine the loop can hold the lock at every one of the first tries.
    end = time.monotonic() + 30
    try:
        i = 0
        while i < 150 or (deck.lane.frames == 0 and time.monotonic() < end):
            key = bytes([rng.choice(b"abcdefghij")])
            deck.feed_input(key)
            port.terminals["orchestrator"].feed(key + (b"\r\n" if i % 20 == 19 else b""))
            client.feed(_drain(deck))  # a client that reads: the deck's PTY never fills
            i += 1
    finally:
        stop.set()
        flooder.join(10)
    assert deck.lane.frames > 0
    # Quiet (the same frame count for a while), the client fed all along.
    seen = [-1, 0.0]

    def quiet_and_shown() -> bool:
        shown = _client_shows_the_painted_frame(deck, client)
        if deck.frames != seen[0]:
            seen[:] = [deck.frames, time.monotonic()]
        return shown and time.monotonic() - seen[1] > 0.3
    wait_until(quiet_and_shown, 10, message="the client showing the deck's last frame")
    with deck.lane.drawing:
        fresh, _ = deck.render_base(120, 40, True)
    assert [raw for raw, _ in fresh] == [raw for raw, _ in deck.screen._painted]


def test_each_echo_frame_is_what_a_whole_render_gives(running):
    """The lane puts only the typed pane's changed rows into the last frame;
    every such frame equals the deck rendered whole, text and colours (an é
    typed on the left moves the bytes of the panes to its right)."""
    deck, port = running
    rng = random.Random(11)
    terminal = port.terminals["orchestrator"]
    for i in range(80):
        key = bytes([rng.choice(b"abcdefghij \xc3")])
        deck.feed_input(key[:1] if key != b"\xc3" else b"e")
        echo = {b"\xc3": "é".encode(), b" ": b" "}.get(key, key)
        terminal.feed(echo + (b"\r\n" if i % 9 == 8 else b"")
                      + (b"\x1b[31mred\x1b[0m" if i % 13 == 0 else b""))
        _drain(deck)
        with deck.lane.drawing:
            painted = list(deck.screen._painted)
            whole, cursor = deck.render_base(120, 40, True)
        assert painted == whole, i
        assert deck.screen._painted_cursor == cursor, i
    assert deck.lane.frames >= 80
    assert deck.renderer.lane_rows >= 70  # joined row by row, not rendered whole


def test_a_failing_lane_leaves_the_echo_to_the_loop(running, monkeypatch, caplog):
    deck, port = running

    def broken(*_args):
        raise RuntimeError("a bug in the lane")
    monkeypatch.setattr(deck.renderer, "echo_rows", broken)
    deck.feed_input(b"f")
    echoes = deck.lane.frames
    port.terminals["orchestrator"].feed(b"fQZX")  # the lane fails on this thread ...
    assert deck.lane.frames == echoes
    assert "the echo lane failed" in caplog.text
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"fQZX"), 10, message="the echo, drawn by the loop")
    wait_until(lambda: deck.lane.open, 10, message="the lane open again after a frame")



def test_a_row_swapped_piece_by_piece_equals_the_row_joined_whole(running):
    """The lane replaces a pane's piece of a screen row in place; a piece
    that takes more bytes than the one it replaced moves the pieces right of
    it, and those are found where they moved to."""
    deck, _ = running
    with deck.lane.drawing:
        deck.render_base(120, 40, True)
        y = next(y for y, held in enumerate(deck.renderer.rows_memo)
                 if held is not None and len(held[0][0]) >= 3)
        (pieces, side, width), _, _ = deck.renderer.rows_memo[y]
        frame = list(deck.screen._painted)
        swapped = 0
        for n, (x, was) in enumerate(sorted(pieces, key=lambda piece: piece[0])):
            raw, runs = was
            if not runs or runs[0][1] <= n + 1 or not raw[:n + 1].isascii():
                continue  # no room for the text in its first run
            text = ("é" * (n + 1)).encode()  # wider in bytes, as wide in columns
            line = (text + raw[n + 1:], [("typed", len(text)), *runs[1:]])
            assert deck.renderer.swap_row(frame, y, x, was, line)
            pieces = [(px, line if px == x else piece) for px, piece in pieces]
            row = join_pieces(sorted(pieces, key=lambda piece: piece[0]), width)
            if side is not None:
                row = (row[0] + side[0], row[1] + side[1])
            assert frame[y] == row, n
            swapped += 1
    assert swapped >= 2


def test_where_each_piece_of_a_row_went_and_a_column_two_pieces_share():
    from choragos.ui.deckdraw import placed_pieces
    row, where = placed_pieces([(0, (b"ab", [(None, 2)])), (0, (b"cd", [("x", 2)])),
                                (5, ("é".encode(), [("y", 2)]))], 8)
    assert row == (b"abcd \xc3\xa9  ", [(None, 2), ("x", 2), (None, 1), ("y", 2), (None, 2)])
    assert where == {0: None, 5: (5, 3)}  # two pieces at column 0: found by neither


# -- an echo's characters sent ahead of its frame ---------------------------------------

def _frames(deck, client: Terminal) -> list[bytes]:
    """Every frame the deck hands the client from now on, one item each
    (what it wrote to its PTY until now fed to ``client`` first)."""
    frames: list[bytes] = []
    deck.screen.set_sink(frames.append)
    client.feed(_drain(deck))
    return frames


def _echo(terminal: Terminal, data: bytes) -> float | None:
    """``data`` fed as a role's reader feeds an awaited echo, and the frame
    put off after an echo shown drawn when the reader would (its lull)."""
    due = terminal.feed(data, eager=True)
    if due is not None:
        terminal.catch_up()
    return due


def _client(deck) -> Terminal:
    """A client's terminal showing what the deck painted last, the deck quiet."""
    client = Terminal(120, 40, scrollback=0)
    deck.client_attached(deck.client)  # a fresh client: a whole frame first
    wait_until(lambda: _client_shows_the_painted_frame(deck, client), 10,
               message="the first frame")
    _settled(deck, feeding=client)
    return client


def _shows(deck, client: Terminal, frames: list[bytes], *, ahead: bool = False) -> bool:
    """The client, fed the frames handed to it so far, shows exactly what the
    deck painted last.  ``ahead``: with the echoes sent ahead of their frame
    since over it, as the screen noted them (what the client shows until that
    frame; a row noted as not known is not compared)."""
    while frames:  # one at a time: the loop may hand on another meanwhile
        client.feed(frames.pop(0))
    screen = deck.screen
    shown = client.display()
    rows = [raw.decode("utf-8").rstrip() for raw, _ in screen._painted]
    for y, line in screen._ahead.items() if ahead else ():
        rows[y] = shown[y] if line is _UNSURE else line[0].decode("utf-8").rstrip()
    return shown == rows and client.cursor == screen._painted_cursor


def _settles(deck, client: Terminal, frames: list[bytes]) -> None:
    """Wait for the client to show exactly the deck's last frame, looked at
    with the loop kept out (it draws under the same lock)."""
    def shown() -> bool:
        with deck.lane.drawing:
            return _shows(deck, client, frames)
    wait_until(shown, 10, message="the client showing the deck's last frame")


def test_a_plain_echo_goes_out_before_its_frame_and_the_frame_settles_the_screen(running):
    deck, port = running
    client = _client(deck)
    frames = _frames(deck, client)
    terminal = port.terminals["orchestrator"]
    deck.feed_input(b"k")
    ahead, echoes, wakeups = deck.lane.sent_ahead, deck.lane.frames, deck.wakeups
    due = terminal.feed(b"kQZX", eager=True)  # the echo awaited, fed on this thread
    # The characters where the pane shows the cursor's cell, before any
    # frame; the frame waits for the output to pause (the reader's lull),
    # so the reader does not build it while the client wakes to read the echo.
    assert deck.lane.sent_ahead == ahead + 1 and deck.lane.frames == echoes
    assert due == ECHO_SETTLE and deck.wakeups == wakeups
    assert len(frames) == 1 and frames[0].endswith(b"kQZX"), frames
    terminal.catch_up()  # the lull: the frame, with nothing left to write
    assert deck.lane.frames == echoes + 1 and deck.wakeups == wakeups
    assert len(frames) == 1, frames
    _, y = deck.screen._painted_cursor
    assert _shows(deck, client, frames)
    assert "orchestrator> kQZX" in client.display()[y]
    # An echo in two pieces: the frame waits for the pause after them, and
    # each piece goes out as the frame would have written it.
    deck.feed_input(b"abc")
    assert terminal.feed(b"a", eager=True) == ECHO_SETTLE
    assert terminal.feed(b"bc", eager=True) == ECHO_SETTLE
    assert deck.lane.frames == echoes + 1
    terminal.catch_up()
    assert deck.lane.frames == echoes + 2
    assert frames == [b"a", b"bc"]
    assert _shows(deck, client, frames)
    # Colours next to it: the frame writes what the early bytes did not.
    deck.feed_input(b"d")
    _echo(terminal, b"d")
    terminal.feed(b"\x1b[31mred\x1b[0m", eager=True)  # the put-off frame comes with this
    assert _shows(deck, client, frames)
    deck.feed_input(b"e")
    _echo(terminal, b"e")
    assert len(frames) == 1 and frames[0].endswith(b"e")
    assert _shows(deck, client, frames)


def test_only_a_plain_echo_at_the_cursor_is_sent_ahead(running):
    deck, port = running
    client = _client(deck)
    frames = _frames(deck, client)
    terminal = port.terminals["orchestrator"]
    ahead = deck.lane.sent_ahead
    for echo in (b"\x1b[31mred\x1b[0m",  # colours: drawn by the frame alone
                 b"ab\r\n",  # a new line
                 b"\x1b(0qq\x1b(B"):  # the line-drawing set
        deck.feed_input(b"x")
        assert _echo(terminal, echo) is None
        assert _shows(deck, client, frames), echo
    terminal.feed(b"not typed", eager=False)  # no echo awaited: the loop's, in its time
    assert deck.lane.sent_ahead == ahead
    deck.feed_input(b"y")
    port.terminals["coder"].feed(b"y", eager=True)  # a pane not focused
    deck.feed_input(b"y")
    terminal.feed(b"x" * 60, eager=True)  # on past the tile's edge
    assert deck.lane.sent_ahead == ahead
    with deck.lane.drawing:
        deck.state.broadcast = True  # keys to every shown pane: their echoes drawn whole
    try:
        deck.feed_input(b"z")
        terminal.feed(b"z", eager=True)
        assert deck.lane.sent_ahead == ahead
    finally:
        with deck.lane.drawing:
            deck.state.broadcast = False
    wait_until(lambda: _shows(deck, client, frames), 10, message="the client settled")


def test_echoes_sent_ahead_leave_the_client_showing_every_frame(running):
    """Keys typed, echoed plainly and otherwise, in a pane that scrolls and
    wraps, with a flooding neighbour: after every echo the client shows
    exactly what the deck painted (with the echo sent ahead over it while
    the loop owes its frame, then that frame), and most echoes went out ahead."""
    deck, port = running
    client = _client(deck)
    frames = _frames(deck, client)
    terminal = port.terminals["orchestrator"]
    rng = random.Random(5)
    for i in range(120):
        key = bytes([rng.choice(b"abcdefghij ")])
        deck.feed_input(key)
        tail = b"\r\n" if i % 11 == 10 else b"\x1b[32mok\x1b[0m" if i % 17 == 16 else b""
        _echo(terminal, key + tail)
        if i % 5 == 0:
            port.terminals["coder"].feed(b"flood %d\r\n" % i)
        with deck.lane.drawing:
            assert _shows(deck, client, frames, ahead=True), i
            owed = bool(deck.screen._ahead)
        if owed:
            # The lane found the loop holding the lock when the echo's frame
            # was due (a busy machine): the echo is on the client, and the
            # loop's frame, in its turn, leaves it showing exactly that frame.
            _settles(deck, client, frames)
    assert deck.lane.sent_ahead >= 60
    _settles(deck, client, frames)


def test_an_echo_sent_ahead_whose_frame_finds_the_loop_busy_is_settled_by_the_loops_frame(
        running):
    """The reader's lull finds the loop holding the drawing lock: the echo is
    on the client already, as the screen noted it, and the loop's frame (not
    the lane's) then leaves the client showing exactly what it painted."""
    deck, port = running
    client = _client(deck)
    frames = _frames(deck, client)
    terminal = port.terminals["orchestrator"]
    for key in b"kmn":
        deck.feed_input(bytes([key]))
        ahead, echoes, missed = deck.lane.sent_ahead, deck.lane.frames, deck.lane.missed
        assert terminal.feed(bytes([key]) + b"QZX", eager=True) == ECHO_SETTLE
        assert deck.lane.sent_ahead == ahead + 1
        with _loop_busy(deck):
            # On a loaded machine the loop may have drawn the echo's frame in
            # its own turn before the lock was held: nothing owed, no race to
            # see, and the next key tries again.
            owed = bool(deck.screen._ahead)
            if owed:
                terminal.catch_up()  # the lull: the lane misses, the frame is the loop's
                assert deck.lane.missed == missed + 1 and deck.lane.frames == echoes
                # Nothing draws while the loop is held: looked at without the lock.
                assert _shows(deck, client, frames, ahead=True)
                assert not _shows(deck, client, frames)  # not in the last frame yet
                _, y = deck.screen._painted_cursor
                assert chr(key) + "QZX" in client.display()[y]
        if owed:
            break
        terminal.catch_up()
        _settles(deck, client, frames)
    assert owed
    _settles(deck, client, frames)
    assert deck.lane.frames == echoes and not deck.screen._ahead


def test_an_echo_sent_ahead_on_a_row_not_known_cell_by_cell_has_its_row_written_whole(running):
    deck, port = running
    client = _client(deck)
    terminal = port.terminals["orchestrator"]
    terminal.feed("\r\nnaïve> ".encode())  # a character of two bytes left of the echo
    wait_until(lambda: _client_shows_the_painted_frame(deck, client)
               and "naïve> " in "".join(client.display()), 10, message="the prompt drawn")
    _settled(deck, feeding=client)
    frames = _frames(deck, client)
    deck.feed_input(b"k")
    ahead = deck.lane.sent_ahead
    _echo(terminal, b"kk")
    assert deck.lane.sent_ahead == ahead + 1
    assert len(frames) == 2 and frames[0].endswith(b"kk")
    assert "naïve> kk".encode() in frames[1]  # the row written whole
    assert _shows(deck, client, frames)
