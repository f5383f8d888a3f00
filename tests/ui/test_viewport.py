"""A tile smaller than its role's terminal shows a viewport onto it that
follows the cursor; the zoom makes room to show it whole."""

from __future__ import annotations

from choragos.terminal.emulator import Terminal
from choragos.ui.deck import Deck, _Loop
from choragos.ui.pane import PaneView
from choragos.ui.theme import build_palette
from tests.ui.test_deck import FakePort, keys


def texts(lines: list) -> list[str]:
    return [raw.decode("utf-8") for raw, _ in lines]


def numbered(terminal: Terminal, rows: int) -> None:
    """Rows ``row 0`` … with the cursor left at the end of the last one."""
    terminal.feed("\r\n".join(f"row {y:<2}" + "." * 60 + f"|{y}" for y in range(rows)).encode())


def test_a_small_tile_shows_the_rows_and_columns_around_the_cursor():
    terminal = Terminal(80, 24)
    numbered(terminal, 24)
    lines, cursor = PaneView("r").content(terminal, 22, 4, focused=True, colors=256)
    # The cursor is after "|23" at column 69 of row 23: the last 4 rows, the
    # columns ending just past it.
    assert [line.rstrip() for line in texts(lines)] == [
        "." * 18 + f"|{y}" for y in range(20, 24)]
    assert cursor == (21, 3)


def test_the_viewport_keeps_the_top_left_whenever_the_cursor_is_in_view_from_there():
    terminal = Terminal(80, 24)
    numbered(terminal, 24)
    view = PaneView("r")
    view.content(terminal, 30, 6, focused=True, colors=256)
    assert view.origin == (69 - 29, 23 - 5)  # the cursor at the bottom right edge
    terminal.feed(b"\x1b[4;10H")  # back near the top left: the corner is shown again
    lines, cursor = view.content(terminal, 30, 6, focused=True, colors=256)
    assert view.origin == (0, 0) and cursor == (9, 3)
    assert texts(lines)[0].startswith("row 0 ")
    terminal.feed(b"\x1b[8;31H")  # one row and one column past the tile
    lines, cursor = view.content(terminal, 30, 6, focused=True, colors=256)
    assert view.origin == (1, 2) and cursor == (29, 5)


def test_a_tile_as_big_as_its_terminal_shows_it_all_from_the_corner():
    terminal = Terminal(40, 5)
    terminal.feed(b"\r\n".join(b"row %d" % y for y in range(5)))
    lines, _ = PaneView("r").content(terminal, 40, 8, focused=True, colors=256)
    assert [text.rstrip() for text in texts(lines)] == [f"row {y}" for y in range(5)] + [""] * 3


def test_a_wide_character_cut_by_the_left_edge_leaves_its_visible_half_blank():
    terminal = Terminal(80, 24)
    terminal.feed("a中bc".encode() + b" " * 40 + b"\x1b[1;45H")
    view = PaneView("r")
    view.origin = (2, 0)  # column 2 is the second half of the wide character
    lines, _ = view.content(terminal, 43, 4, focused=True, colors=256)
    assert texts(lines)[0].startswith(" bc"), texts(lines)[0]
    assert all(len(text) == 43 for text in texts(lines))


def test_the_zoom_hides_the_sidebar_when_the_terminal_needs_the_width(tmp_path):
    port = FakePort(tmp_path)  # every terminal is 80 columns
    deck = Deck(port, 100, 30)
    deck.loop = _Loop(deck.view, build_palette(deck.ui.theme), screen=deck.screen)
    deck.loop.deck = deck
    deck.loop.screen_size = (100, 30)
    deck.attached = True
    try:
        assert deck.renderer.areas(100, 30)[2] == 34  # the sidebar, unzoomed
        keys(deck, b"\x02z")
        assert deck.renderer.areas(100, 30) == (100, 29, 0)
        port.terminals["orchestrator"] = Terminal(60, 24)  # fits beside the sidebar
        assert deck.renderer.areas(100, 30)[2] == 34
    finally:
        deck.stop()
        deck.screen.close()


def test_a_click_reaches_the_agent_where_it_is_on_its_terminal(tmp_path):
    port = FakePort(tmp_path)
    deck = Deck(port, 120, 40)
    deck.loop = _Loop(deck.view, build_palette(deck.ui.theme), screen=deck.screen)
    deck.loop.deck = deck
    deck.loop.screen_size = (120, 40)
    deck.attached = True
    try:
        port.terminals["coder"].feed(b"\x1b[?1000h\x1b[?1006h\x1b[3;71H")  # cursor at column 70
        deck.state.layout.focus = "coder"  # the focused pane follows the cursor's column
        deck.loop.widget.render((120, 40), focus=True)
        rect = deck.state.layout.geometry(120 - 34, 39).tiles["coder"]
        ox = 70 - (rect.w - 1)  # the viewport ends at the cursor's column
        assert deck.state.pane("coder").origin == (ox, 0)
        keys(deck, f"\x1b[<0;{rect.x + 5};{rect.y + 3}M".encode())
        assert port.typed("coder") == f"\x1b[<0;{5 + ox};2M".encode()
    finally:
        deck.stop()
        deck.screen.close()


def test_a_pane_not_focused_shows_the_start_of_its_lines():
    terminal = Terminal(80, 24)
    numbered(terminal, 24)
    view = PaneView("r")
    lines, cursor = view.content(terminal, 22, 4, focused=False, colors=256)
    assert view.origin == (0, 20) and cursor is None
    assert [text.rstrip() for text in texts(lines)] == [
        f"row {y:<2}" + "." * 16 for y in range(20, 24)]
