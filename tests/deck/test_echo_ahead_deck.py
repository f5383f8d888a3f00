"""A key's echo sent to the client before the role's terminal parses it, on
the real deck attached in tmux: what the client's terminal shows (tmux's
own screen, captured with its colours) is, after keys, edits, wide
characters, a coloured row, a line that wraps past the tile's and the
terminal's right edge and keys while the pane is scrolled back, the same
as a client attached afresh is drawn (a whole frame, from the deck's
model); and plain echoes did go out ahead (the order of that and the
parse is the terminal's unit tests').
"""

from __future__ import annotations

import re

import pytest

from choragos.session import hopstamps
from choragos.terminal.emulator import Terminal
from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck
from tests.integration.harness import role_toml

pytestmark = pytest.mark.timeout(240)

TEAM = (role_toml("orchestrator", "--shell", start=True) + role_toml("coder", "--worker")
        + "\n[ui]\nauto_focus = false\n")
COLS, ROWS = 160, 50


def _pane(d: TmuxDeck) -> list[list[tuple[str, tuple]]]:
    """The focused (left) pane's rows below its title as tmux shows them:
    each row's text with its style, run by run, up to the pane's border."""
    capture = d.tmux("capture-pane", "-e", "-p", "-t", ":0").stdout
    term = Terminal(COLS, ROWS, scrollback=0)
    term.feed(("\x1b[H" + "\x1b[0m\r\n".join(capture.split("\n")[:ROWS])).encode())
    rows = []
    for runs in term.render_rows()[1:-1]:
        row: list[tuple[str, tuple]] = []
        for run in runs:
            text = run.text.split("│")[0]
            if text:
                row.append((text, tuple(run[1:])))
            if text != run.text:
                break
        rows.append(row)
    return rows


def _text(rows: list[list[tuple[str, tuple]]]) -> list[str]:
    return ["".join(text for text, _ in row).rstrip() for row in rows]


def _typed(d: TmuxDeck, keys: str, row_end: str) -> None:
    """``keys`` typed a few at a time, like a person; back once a pane row
    ends with ``row_end``."""
    for i in range(0, len(keys), 3):
        d.type(keys[i:i + 3])
    seen: list[str] = []

    def shown() -> bool:
        seen[:] = _text(_pane(d))
        return any(line.endswith(row_end) for line in seen)
    try:
        wait_until(shown, 15, message=f"a row ending {row_end!r}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the pane shows {seen}") from None


def _entered(d: TmuxDeck, answer: str) -> None:
    """Enter, and back once the agent answered with ``answer``: keys typed
    sooner may reach it in one read with the Enter, a paste (the line not
    submitted) as an agent CLI takes it."""
    d.keys("Enter")
    d.wait_screen(lambda s: answer in s)


def _drawn_afresh_the_same(d: TmuxDeck) -> None:
    """The pane as this client shows it equals the whole frame a client
    attached afresh is drawn."""
    seen: list[list] = [_pane(d)]

    def settled() -> list:  # the frame after the echo's lull drawn too
        seen.append(_pane(d))
        return seen[-1] if seen[-1] == seen[-2] else []
    shown = wait_until(settled, 10, interval=0.05, message="the pane to settle")
    d.keys("C-b", "d")
    d.wait_screen("[detached from")
    d.shell("clear; choragos attach")
    d.wait_screen("C-b ? help", 20)
    wait_until(lambda: _pane(d) == shown, 10, message="the same pane drawn afresh")


def _sent_in_their_feed(path: str) -> int:
    """Echoes of the orchestrator's whose bytes went to the client between
    their read and the end of their feed, on the reader's thread (sent
    ahead, not by a frame of the lane's or the loop's)."""
    count, reading = 0, None
    with open(path, encoding="utf-8") as stamps:
        for line in stamps:
            _, thread, _, hop, role = hopstamps.parse(line)
            if hop == "out-read" and role == "orchestrator":
                reading, sent = thread, False
            elif hop == "frame-in" and thread == reading:
                sent = True
            elif hop == "fed" and thread == reading:
                count += sent
                reading = None
    return count


def test_echoes_sent_before_their_parse_leave_the_client_as_a_fresh_frame(deck):
    d: TmuxDeck = deck(TEAM)
    stamps = str(d.root / "hops.txt")
    d.shell(f"export CHORAGOS_HOPSTAMPS={stamps}")  # the session's environment
    d.serve()
    d.wait_booted(["orchestrator"])
    d.wait_screen("you said: You are the orchestrator")
    for end in ("h", "he", "hel", "hell", "hello"):  # a key at a time
        _typed(d, end[-1], "agent> " + end)
    assert _sent_in_their_feed(stamps) >= 3  # plain echoes: sent ahead of their frame
    d.keys("BSpace")
    d.keys("BSpace")  # the agent's "\b \b": the frame's, not sent ahead
    _typed(d, "p", "agent> help")
    _typed(d, "好", "agent> help好")
    _typed(d, "ab", "agent> help好ab")  # a wide character left of the echo
    assert _text(_pane(d)).count("agent> help好ab") == 1
    _drawn_afresh_the_same(d)

    # A row in colour: the echo goes next to the blue cells in the default pen.
    _entered(d, "you said: help好ab")
    _typed(d, "run: printf '\\033[44mBLUE\\033[0m '", "BLUE\\033[0m '")
    _entered(d, "BLUE agent>")
    _typed(d, "xyz", "BLUE agent> xyz")
    row = next(row for row in _pane(d) if _text([row])[0] == "BLUE agent> xyz")
    assert row[0][0] == "BLUE" and row[0][1] != row[1][1]  # blue, then not
    _drawn_afresh_the_same(d)

    # Lines enough to scroll some off the top (for the scrolling back below).
    _entered(d, "you said: xyz")
    _typed(d, "run: seq 70", "run: seq 70")
    d.keys("Enter")
    d.wait_screen(lambda s: re.search(r"^70 +│", s, re.MULTILINE))
    # Past the tile's right edge (63 columns) and the terminal's (80): the
    # tile follows the cursor, the line wraps.
    long = "".join(chr(ord("a") + i % 26) for i in range(90))
    _typed(d, long, long[80:])
    _drawn_afresh_the_same(d)

    # Scrolled back: keys move the view, none reaches the agent; back at
    # the live screen the echo is drawn where the line goes on.
    d.keys("C-b", "[")
    d.wait_screen(lambda s: "SCROLL" in s.splitlines()[-1])
    d.type("kk")
    d.keys("q")
    d.wait_screen(lambda s: "SCROLL" not in s.splitlines()[-1])
    _typed(d, "end", long[80:] + "end")
    _drawn_afresh_the_same(d)
    assert not re.search(r"kk|\bk\b", _text(_pane(d))[-1])
