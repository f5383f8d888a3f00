"""Redraw driven by change: incremental renders equal full ones, only changed
rows are rebuilt, and an idle attached deck does not wake at all.

Counts, not timings: wake-ups of the deck's loop, frames drawn, rows rebuilt
and bytes written to the client are the same on an idle or a loaded machine.
"""

from __future__ import annotations

import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from choragos.terminal.emulator import Terminal
from choragos.ui.deck import FRAME, Deck
from choragos.ui.deckbase import PACE_BACKLOG
from choragos.ui.pane import PaneView
from tests.conftest import wait_until
from tests.ui.test_deck import FakePort
from tests.ui.test_deck import drain as _drain

# -- the property: incremental == full -------------------------------------------------

_TEXT = st.text(alphabet="abcdefghij klmnopqrstuvwxyz0123456789─│é中", min_size=1, max_size=30)
_SGR = st.sampled_from(["\x1b[0m", "\x1b[31m", "\x1b[1;32m", "\x1b[38;5;202m", "\x1b[44m",
                        "\x1b[7m", "\x1b[38;2;10;200;30m", "\x1b[39;49m"])
_MOVES = st.builds(lambda y, x: f"\x1b[{y};{x}H", st.integers(1, 30), st.integers(1, 90))
_CONTROLS = st.sampled_from(["\r\n", "\n", "\r", "\x1b[K", "\x1b[2K", "\x1b[J", "\x1b[2J",
                             "\x1b[L", "\x1b[M", "\x1b[3S", "\x1b[2T", "\x1bM", "\x1b[5;15r",
                             "\x1b[r", "\x1b[?1049h", "\x1b[?1049l", "\x1b[?25l",
                             "\x1b[?25h", "\x1b[4@", "\x1b[3P", "\x1b[5X", "\t"])
_OUTPUT = st.lists(st.one_of(_TEXT, _SGR, _MOVES, _CONTROLS), min_size=1, max_size=25).map("".join)
_LOG = st.lists(st.tuples(_SGR, _TEXT), min_size=4, max_size=30).map(
    lambda lines: "".join(f"{sgr}{text}\x1b[0m\r\n" for sgr, text in lines))
_STEP = st.one_of(
    st.tuples(st.just("feed"), _OUTPUT),
    st.tuples(st.just("feed"), _LOG),
    st.tuples(st.just("resize"), st.tuples(st.integers(5, 90), st.integers(3, 30))),
    st.tuples(st.just("tile"), st.tuples(st.integers(5, 100), st.integers(3, 32))),
    st.tuples(st.just("scroll"), st.integers(-12, 12)),
    st.tuples(st.just("live"), st.none()),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=1, max_size=25), st.booleans())
def test_incremental_render_equals_a_full_render(steps, focused):
    terminal = Terminal(60, 20, scrollback=200)
    view = PaneView("r")
    width, height = 60, 20
    for kind, arg in steps:
        if kind == "feed":
            terminal.feed(arg.encode())
        elif kind == "resize":
            terminal.resize(*arg)
        elif kind == "tile":
            width, height = arg
        elif kind == "scroll":
            view.scroll_by(terminal, arg, height)
        else:
            view.end_scroll()
        incremental = view.content(terminal, width, height, focused=focused, colors=256)
        fresh = PaneView("r")
        fresh.scroll = view.scroll
        assert incremental == fresh.content(terminal, width, height, focused=focused,
                                            colors=256)


def test_a_scrolled_pane_moves_with_lines_that_left_a_screen_looking_the_same():
    """A repeated line scrolled off leaves the screen as it was, but the
    history grew: a pane scrolled back shows it (found by the property above)."""
    terminal = Terminal(5, 3, scrollback=200)
    terminal.feed(b"0\r\n" * 4)
    view = PaneView("r")
    view.scroll_by(terminal, 1, 20)
    before = view.content(terminal, 60, 20, focused=False, colors=256)
    terminal.feed(b"0\r\n" * 4)
    after = view.content(terminal, 60, 20, focused=False, colors=256)
    assert after != before
    assert sum(line[0].strip() == b"0" for line in after[0]) == 8  # 6 kept, 2 on the screen


def test_only_the_changed_rows_are_built_again():
    terminal = Terminal(80, 24)
    terminal.feed(b"".join(b"line %d\r\n" % i for i in range(23)))
    view = PaneView("r")
    view.content(terminal, 80, 24, focused=True, colors=256)
    assert view.rendered_rows == 24
    terminal.feed(b"\x1b[5;1Hchanged")
    lines, _ = view.content(terminal, 80, 24, focused=True, colors=256)
    assert view.rendered_rows == 25  # row 5 only
    assert lines[4][0].startswith(b"changed")
    terminal.feed(b"\x1b[10;1H")  # a cursor move rebuilds no row
    view.content(terminal, 80, 24, focused=True, colors=256)
    assert view.rendered_rows == 25
    view.content(terminal, 80, 24, focused=True, colors=256)  # nothing changed at all
    assert view.rendered_rows == 25


def test_the_terminal_wakes_its_reader_once_per_frame_taken():
    woke = []
    terminal = Terminal(40, 10, on_change=lambda: woke.append(1))
    for i in range(100):
        terminal.feed(b"flood %d\r\n" % i)
    assert len(woke) == 1  # nobody took the frame: no more wake-ups
    assert terminal.take_dirty()
    terminal.feed(b"x")
    assert len(woke) == 2
    terminal.take_dirty()
    terminal.feed(b"")  # nothing changed, nothing wakes
    assert len(woke) == 2


# -- the deck's loop, for real ---------------------------------------------------------

class _Sent:
    """Everything the deck wrote to the client since it was made."""

    def __init__(self, deck: Deck) -> None:
        self.deck, self.data = deck, b""

    def has(self, needle: bytes) -> bool:
        self.data += _drain(self.deck)
        return needle in self.data


def _settled(deck: Deck, quiet: float = 0.3, timeout: float = 10.0,
             feeding: Terminal | None = None) -> None:
    """Wait until the deck went ``quiet`` seconds without waking or drawing;
    what it wrote meanwhile is dropped, or fed to ``feeding`` (a client's
    terminal)."""
    end = time.monotonic() + timeout
    seen = (deck.wakeups, deck.frames)
    since = time.monotonic()
    while time.monotonic() < end:
        drawn = _drain(deck)
        if feeding is not None:
            feeding.feed(drawn)
        time.sleep(0.05)
        now = (deck.wakeups, deck.frames)
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise AssertionError("the deck never went quiet")


def _running_deck(tmp_path) -> tuple[Deck, FakePort]:
    port = FakePort(tmp_path)
    deck = Deck(port, 120, 40)
    deck.start()
    deck.client_attached(deck.client)
    wait_until(lambda: b"C-b ? help" in _drain(deck), 10, message="a first frame")
    wait_until(lambda: len(port.requests) >= 3, 10, message="the first sync")
    _settled(deck)
    return deck, port


def test_an_idle_attached_deck_does_not_wake(running):
    deck, port = running
    wakeups, frames = deck.wakeups, deck.frames
    time.sleep(1.0)  # the observation window: nothing may happen in it
    assert (deck.wakeups, deck.frames) == (wakeups, frames)
    assert _drain(deck) == b""
    # One line of output is one wake-up and one frame, not a polling loop.
    port.terminals["coder"].feed(b"news\r\n")
    wait_until(lambda: deck.frames > frames, 10, message="the change drawn")
    _settled(deck)
    assert deck.wakeups - wakeups <= 2
    assert deck.frames - frames == 1


def test_news_without_effects_is_drawn_too(running):
    """A view that only changes what a card or the status line shows asks
    for no effect; the deck draws it all the same."""
    from choragos.session import news

    deck, _ = running
    _settled(deck)
    sent = _Sent(deck)
    deck.news(news.GatewayChanged("down"))
    wait_until(lambda: sent.has(b"gateway down"), 10, message="the news drawn")


def test_one_changed_row_sends_the_client_about_one_row(running):
    deck, port = running
    port.terminals["orchestrator"].feed(b"\x1b[10;1Hhello there")
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"hello there"), 10, message="the row drawn")
    _settled(deck)
    sent.has(b"")
    # The row, not the screen: a full frame is over 5000 bytes.
    assert len(sent.data) < 120 + 100, sent.data


def test_a_neighbour_flood_is_coalesced_into_frames(running):
    deck, port = running
    frames = deck.frames
    started = time.monotonic()
    for i in range(2000):
        port.terminals["coder"].feed(b"flood line %d\r\n" % i)
    elapsed = time.monotonic() - started
    wait_until(lambda: b"flood line 1999" in _drain(deck) or
               "flood line 1999" in port.terminals["coder"].text(), 10)
    _settled(deck)
    # At most one frame per budget while the flood lasted, plus the last one.
    assert deck.frames - frames <= elapsed / FRAME + 3
    assert deck.frames - frames < 2000 / 20


def test_an_echo_is_drawn_at_once_while_a_neighbour_floods(running):
    deck, port = running
    deck.feed_input(b"k")  # typed into the focused pane
    wait_until(lambda: port.typed("orchestrator") == b"k", 10)
    coder = port.terminals["coder"]
    coder.feed(b"flood that must wait\r\n")
    port.terminals["orchestrator"].feed(b"kQZX")  # the echo
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"kQZX"), 10, message="the echo")
    # The frame with the echo did not carry the neighbour's flood: that
    # waits for the frame budget, after the echo.
    assert b"flood that must wait" not in sent.data
    wait_until(lambda: sent.has(b"flood that must wait"), 10,
               message="the flood drawn later")


def test_the_clients_screen_is_what_the_deck_painted(running):
    """Frames written row by row (and whole ones around a dialog) leave the
    client's terminal showing exactly the deck's last frame."""
    deck, port = running
    client = Terminal(120, 40, scrollback=0)
    deck.client_attached(deck.client)  # a fresh client: a whole frame first

    def shows_last_frame() -> bool:
        client.feed(_drain(deck))
        painted = deck.screen._painted
        if painted is None:
            return False
        want = [raw.decode("utf-8").rstrip() for raw, _ in painted]
        cursor = deck.screen._painted_cursor
        return client.display() == want and (cursor is None or client.cursor == cursor)

    def shows(text: str) -> bool:
        return shows_last_frame() and text in client.text()

    wait_until(lambda: shows("C-b ? help"), 10, message="the first frame on the client")
    port.terminals["coder"].feed(b"\x1b[31mred\x1b[0m and plain\r\n" * 30)
    port.terminals["orchestrator"].feed(b"\x1b[2J\x1b[Hcleared \xe4\xb8\xad\xe6\x96\x87 wide")
    wait_until(lambda: shows("cleared 中文 wide") and client.text().count("red and plain")
               > 5, 10, message="the changed rows on the client")
    deck.feed_input(b"\x02l")  # focus moves: titles and cursor change
    wait_until(lambda: shows("▸ coder"), 10, message="the new focus on the client")
    deck.feed_input(b"\x02?")  # the help dialog: a whole urwid frame ...
    wait_until(lambda: deck.overlays.kind == "help", 10)
    deck.feed_input(b"\x1b")
    wait_until(lambda: deck.overlays.widget is None, 10)
    port.terminals["coder"].feed(b"\x1b[2;1Hafter the dialog")  # ... then row by row again
    wait_until(lambda: shows("after the dialog"), 10, message="the frame after the dialog")
    assert deck.screen.rows_written > 0


def test_only_an_open_dialog_with_clocks_ticks(running):
    from choragos.board.tasks import Task, TaskState
    from choragos.session.news import GateOpened, GateView

    deck, _port = running
    gate = Task("T4", "release", "Tag v2", state=TaskState.GATED, created=1.0)
    deck.news(GateOpened(GateView(gate)))
    wait_until(lambda: deck.overlays.kind == "gate", 10)
    wakeups = deck.wakeups
    time.sleep(3.5)  # the observation window: its clock ticks once a second
    assert 2 <= deck.wakeups - wakeups <= 5
    deck.feed_input(b"\x1b")  # dismissed: nothing ticks any more
    wait_until(lambda: deck.overlays.widget is None, 10)
    _settled(deck, quiet=1.2)
    wakeups = deck.wakeups
    time.sleep(1.5)
    assert deck.wakeups == wakeups


def test_after_a_resize_the_client_shows_the_whole_new_frame(running):
    deck, port = running
    client = Terminal(120, 40, scrollback=0)
    client.feed(_drain(deck))
    client.resize(100, 30)
    deck.resize(100, 30)
    port.terminals["coder"].feed(b"\x1b[3;1Hafter the resize")

    def shows_it() -> bool:
        client.feed(_drain(deck))
        painted = deck.screen._painted
        return (painted is not None and len(painted) == 30
                and client.display() == [raw.decode().rstrip() for raw, _ in painted]
                and "after the resize" in client.text())
    wait_until(shows_it, 10, message="the new size drawn on the client")


def test_keys_typed_at_an_agent_draw_no_frame_of_their_own(running):
    """Keys that only go to the focused agent change nothing the deck shows:
    the frame comes with the echo, not before it (counted frames)."""
    deck, port = running
    frames = deck.frames
    deck.feed_input(b"abc")
    wait_until(lambda: port.typed("orchestrator") == b"abc", 10)
    _settled(deck)
    assert deck.frames == frames
    assert _drain(deck) == b""
    port.terminals["orchestrator"].feed(b"abc")  # the echo: one frame
    wait_until(lambda: deck.frames > frames, 10, message="the echo drawn")
    _settled(deck)
    assert deck.frames - frames == 1
    # A key the deck acts on (the prefix) still draws: the status line shows it.
    deck.feed_input(b"\x02")
    wait_until(lambda: deck.frames > frames + 1, 10, message="the prefix drawn")
    deck.feed_input(b"\x1b")


def test_titles_are_built_again_only_when_what_they_show_changed(tmp_path, monkeypatch):
    deck = Deck(FakePort(tmp_path), 120, 40)
    built: list[str] = []
    build = deck.renderer._build_title
    monkeypatch.setattr(deck.renderer, "_build_title", lambda role, *a: built.append(role)
                        or build(role, *a))
    try:
        first = deck.render_base(120, 40, True)
        tiles = len(built)
        assert tiles >= 2
        assert deck.render_base(120, 40, True) == first
        assert len(built) == tiles  # nothing changed: no title built again
        deck.state.roles["coder"].status = "working"
        lines, _ = deck.render_base(120, 40, True)
        assert built[tiles:] == ["coder"]
        assert any(b"working" in line[0] for line in lines)
    finally:
        deck.stop()
        deck.screen.close()


# -- plain typing skips the deck's thread ------------------------------------------------

def test_plain_keys_reach_the_agent_while_the_loop_is_busy(running):
    """Typing for the focused agent is written on the thread that reads it
    (the attach pump's), even while the deck's loop is busy; the echo is
    still drawn at once, as a typed pane's."""
    deck, port = running
    release = threading.Event()
    deck.post(lambda: release.wait(10) and False)  # the loop is busy with this
    deck.feed_input(b"typed\r")
    assert port.typed("orchestrator") == b"typed\r"  # here, not on the loop
    release.set()
    echoes = deck.lane.frames
    port.terminals["orchestrator"].feed(b"typedQZX")  # the echo
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"typedQZX"), 10, message="the echo")
    # The pane counts as typed into, so its echo was not held to the frame
    # budget: drawn by the echo lane, or by the loop, which noted the typing
    # before the echo's wake-up.
    assert deck.lane.frames > echoes or "orchestrator" in deck.pacer.typed


def test_keys_the_deck_acts_on_keep_their_order_and_meaning(running):
    deck, port = running
    release = threading.Event()
    deck.post(lambda: release.wait(10) and False)
    deck.feed_input(b"\x1b[A")  # a cursor key: the loop's to translate
    deck.feed_input(b"x")  # plain, but must not overtake the key before it
    assert port.typed("orchestrator") == b""
    release.set()
    wait_until(lambda: port.typed("orchestrator") == b"\x1b[Ax", 10)
    deck.feed_input(b"\x02")  # the prefix: what follows is the deck's
    wait_until(lambda: deck.router.mode == "prefix", 10)
    deck.feed_input(b"z")
    _settled(deck)
    assert port.typed("orchestrator") == b"\x1b[Ax"
    deck.post(lambda: setattr(deck.state, "broadcast", True))  # typed into every pane
    wait_until(lambda: deck.state.broadcast, 10)
    deck.feed_input(b"b")
    wait_until(lambda: port.typed("coder") == b"b", 10)


def test_neighbours_wait_while_the_client_is_behind_but_an_echo_does_not(running):
    deck, port = running
    behind = [10 * PACE_BACKLOG]
    deck.client_backlog = lambda: behind[0]
    sent = _Sent(deck)
    port.terminals["coder"].feed(b"neighbour output\r\n")
    time.sleep(5 * FRAME)  # budgets pass; the client is still behind
    assert not sent.has(b"neighbour output")
    deck.feed_input(b"e")
    port.terminals["orchestrator"].feed(b"echoed e")
    wait_until(lambda: sent.has(b"echoed e"), 10, message="the echo, client behind or not")
    assert b"neighbour output" not in sent.data
    behind[0] = 0  # the client caught up
    wait_until(lambda: sent.has(b"neighbour output"), 10, message="the neighbour drawn")


def test_a_new_client_gets_the_alternate_screen_without_the_old_ones_goodbye(running):
    """Leaving the alternate screen on a terminal that is not in it restores a
    cursor some earlier program saved; the switch after it saves that one, and
    the user's shell comes back at the wrong row when the client leaves."""
    deck, _ = running
    deck.client_detached()
    deck.client_attached(deck.client)
    sent = _Sent(deck)
    wait_until(lambda: sent.has(b"C-b ? help"), 10, message="the new client's first frame")
    assert b"\x1b[?1049h" in sent.data
    assert b"\x1b[?1049l" not in sent.data
