"""The emulated screen of one agent pane: feed it the PTY's bytes, read
what the agent really shows.

One thread feeds (the role's PTY reader); others read (status checks, the deck).
Every method that touches the screen takes the lock.  Callbacks -- ``reply``,
``on_scrolled``, ``on_bell`` -- run after the lock is released, in the
feeding thread, at most once each per feed, so a slow consumer never holds
readers up and a callback may safely call back into the terminal.
"""

from __future__ import annotations

import codecs
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

from choragos import mallocarenas
from choragos.terminal.pytelib import charsets, mo
from choragos.terminal.vtcells import (
    BLANK,
    Row,
    Run,
    TextRow,
    history_lines,
    row_runs,
    row_text,
    whole_text,
)
from choragos.terminal.vthistory import History
from choragos.terminal.vtparse import VTParser
from choragos.terminal.vtscreen import Joined, VTScreen

__all__ = ["Run", "Scrolled", "Snapshot", "Terminal"]

log = logging.getLogger("choragos.terminal")

_MOUSE_MODES = (1003, 1002, 1000, 9)  # most to least inclusive


@dataclass(frozen=True)
class Snapshot:
    """An immutable copy of what a pane shows, for a renderer on another thread."""

    lines: tuple[str, ...]
    runs: tuple[tuple[Run, ...], ...]
    cursor: tuple[int, int]
    cursor_visible: bool
    alternate_screen: bool
    bracketed_paste: bool
    application_cursor: bool
    application_keypad: bool
    mouse_tracking: int
    mouse_sgr: bool
    focus_events: bool
    reverse_video: bool
    title: str
    cols: int
    rows: int
    history_size: int
    row_gens: tuple[int, ...] = ()  # per row: the generation it last changed in


class LiveRows(NamedTuple):
    """What a renderer holding some rows needs to draw the screen now: every
    row's generation, the style runs of the rows it does not hold, the cursor.
    (A tuple: made on every echo, where a frozen dataclass's setters cost.)"""

    row_gens: tuple[int, ...]
    runs: dict[int, tuple[Run, ...]]
    cursor: tuple[int, int]
    cursor_visible: bool


GAP_MARKER = "--- transcript gap ---"


class Scrolled(list):  # type: ignore[type-arg]
    """The lines ``on_scrolled`` gets: a list of them, and in ``joined``
    what runs of them join back into where the lines a program wrote
    were cut into rows in bulk (a flood of log lines): ``(index of the
    first, how many, the lines or None for one a row, the text left
    waiting for the next row, the screen's columns)``, as
    ``transcript.logical_lines`` would join them, so a transcript need
    not join them again."""

    __slots__ = ("joined",)

    def __init__(self) -> None:
        super().__init__()
        self.joined: list[tuple[int, int, list[str] | None, str, int]] = []


# The most a feed holds back (characters): past it, the held lines are drawn
# at once, so holding costs little memory and a batch little time to draw.
HOLD_LIMIT = 32768
# The smallest piece of output that starts holding: a PTY hands out at most
# 4 KB a read, so a flood comes in pieces of about that size.
HOLD_FROM = 2048
# The bytes a piece of output may hold to join held lines unparsed: printable
# ASCII, tab, CR, LF and ESC (the escapes are checked when the lines are drawn).
_HOLDABLE = bytes(range(0x20, 0x7F)) + b"\t\r\n\x1b"
_UNSEEN = object()  # a row not settled yet: the same as nothing
# The longest echo handed to ``on_echo`` (an agent echoes a key or a paste's
# piece; a longer output is a redraw, not an echo).
ECHO_TEXT = 64
# How long ``on_change`` waits after an echo its viewer has shown already
# (``on_echo`` returned True): the rest of an echo an agent writes a
# character at a time comes within it, and is not held up by the frame;
# nor is the client's read of the echo, by a frame that writes nothing.
ECHO_SETTLE = 0.002


class Terminal:
    """A VT emulator for one PTY: screen, modes, colours, replies and scrollback.

    ``reply(bytes)`` receives answers to the queries the program sends
    (cursor position, device attributes …) and must write them to the PTY.
    ``on_scrolled(lines)`` receives, in order and once each, the text lines
    leaving the top of the main screen (a :class:`Scrolled`).  ``on_bell()``
    is called after a feed that rang the bell at least once (``bells`` has
    the exact count).
    ``on_change()`` is called after a feed, resize or reset that changed what
    the screen shows, but only once until :meth:`take_dirty` is called: a
    flood of output wakes a reader once per frame it actually draws, and a
    pane nobody draws costs its reader nothing.
    ``fast_path=False`` turns off the block path for plain and coloured
    lines and the rows kept as text while a TUI redraws them, for tests and
    benchmarks that compare the two.

    ``hold`` (seconds, 0: off) lets a run of log lines that ends a feed of
    at least ``HOLD_FROM`` bytes wait for the next feeds, up to that long or
    ``HOLD_LIMIT`` characters, so a flood read in 4 KB pieces is drawn a
    batch at a time (the colours of the lines that stay on the screen are
    worked out once per batch).  Nothing is seen to change while output is
    held: no wake, no new generation.
    Every read draws what is held first, so a reader never sees less than
    was fed; a feeder that stops feeding calls :meth:`catch_up` once the
    time ``feed`` returned has passed.

    Clearing the screen (``CSI 2 J``) does not push it into the history, as
    in xterm (tmux's ``scroll-on-clear`` does): an agent that repaints by
    clearing must not flood the transcript.  ``CSI 3 J`` empties the history
    as it would in a terminal; lines already given to ``on_scrolled`` stay given.

    ``on_echo(text, x, y)`` is called after an ``eager`` feed (a key's echo
    is awaited) that only wrote ``text``, printable ASCII, at the cursor
    ``(x, y)`` in the default colours on one row (no escape, no wrap nor
    one pending, no line-drawing charset, no insert mode): the cells a
    terminal showing the screen before the feed needs written to show it
    after, less the cursor's move past them.  It runs before ``on_change``,
    so a viewer can send those bytes before it draws the frame; when it
    returns True (shown), ``on_change`` waits until the output pauses:
    ``feed`` returns ``ECHO_SETTLE`` and :meth:`catch_up` calls it then,
    unless a feed that is not such an echo came first.

    Plain attributes: ``dirty`` (see :meth:`take_dirty`), ``generation``
    (bumped by every change; each row of a :class:`Snapshot` carries the
    generation it last changed in, so a renderer redraws only those rows),
    ``lines_scrolled`` (how many lines ``on_scrolled`` has been given),
    ``fast_path``, and the four callbacks, which may be replaced at any time.
    """

    def __init__(self, cols: int = 120, rows: int = 40, *, scrollback: int = 5000,
                 reply: Callable[[bytes], None] | None = None,
                 on_scrolled: Callable[[list[str]], None] | None = None,
                 on_bell: Callable[[], None] | None = None,
                 on_change: Callable[[], None] | None = None,
                 fast_path: bool = True, hold: float = 0.0) -> None:
        _check_size(cols, rows)
        self.hold = hold
        self.reply = reply
        self.on_scrolled = on_scrolled
        self.on_bell = on_bell
        self.on_change = on_change
        self.on_echo: Callable[[str, int, int], None] | None = None
        self.fast_path = fast_path
        self.dirty = False
        self.generation = 0
        self.lines_scrolled = 0
        self._lock = threading.Lock()
        self._history = History(scrollback)
        self._fresh = Scrolled()
        self._replies: list[str] = []
        self._own_errors = 0
        self._screen = VTScreen(cols, rows)
        self._screen.on_scroll = self._scrolled
        self._screen.on_scroll_rows = self._scrolled_rows
        self._screen.on_clear_history = self._history.clear
        self._screen.on_erase_screen = self._erasing
        self._gap_open = False
        self._parser = VTParser(self._screen, self._replies.append)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._texts: list[str | None] = [None] * rows
        self._runs: list[tuple[Run, ...] | None] = [None] * rows
        self._row_gens: list[int] = [0] * rows
        self._shown: list[object] = [_UNSEEN] * rows  # each row as last settled
        self._woke = False  # on_change was called and take_dirty has not been since
        self._wake_owed = False  # on_change put off after an echo shown (see on_echo)
        # Scrolled lines wait here for on_scrolled, which takes them in order
        # whichever thread drew them (a read draws held output too).
        self._outbox: deque[Scrolled] = deque()
        self._delivering = False
        # Threads other than the feeder that drew held output (a read does):
        # once the output pauses, each hands its cache of freed blocks back
        # at its next read (see ``mallocarenas.drain_thread_cache``).
        self._drawn_on: set[int] = set()

    # -- input -----------------------------------------------------------------

    def feed(self, data: bytes, *, eager: bool = False) -> float | None:
        """Apply the program's output.  Never raises, whatever the bytes.

        Returned: None when everything fed is drawn, else the seconds after
        which :meth:`catch_up` must draw what is held (see ``hold``);
        ``eager`` holds nothing (a key's echo is on its way)."""
        parser = self._parser
        with self._lock:
            before = self._state()
            bells = parser.bells
            text = ""
            try:
                decoder = self._decoder
                # ASCII with no character begun before it needs no decoder.
                text = (data.decode("ascii") if not decoder.buffer and data.isascii()
                        else decoder.decode(data))
                if (parser.held and not eager and text.isascii()
                        and not data.translate(None, _HOLDABLE)):
                    parser.hold_more(text)  # more of a flood: checked when drawn
                else:
                    # Only a big piece starts holding (output coming faster
                    # than it is read); a prompt or a short reply is drawn
                    # at once.  What follows held lines joins them.
                    hold = self.hold > 0 and (bool(parser.held) or len(data) >= HOLD_FROM)
                    parser.feed(text, self.fast_path, hold)
            except Exception:  # the parser contains its own; this is the last guard
                self._own_errors += 1
                text = ""  # no echo to tell of
                parser.reset()
                log.debug("terminal feed failed; parser reset", exc_info=True)
            due = None
            if parser.held:
                due = self.hold - (time.monotonic() - parser.held_since)
                if eager or due <= 0 or parser.held_size >= HOLD_LIMIT:
                    parser.flush()
                    due = None
            echo = (self._plain_echo(text, before)
                    if eager and text and self.on_echo is not None and len(data) <= ECHO_TEXT
                    else None)
            self._settle(before)
            replies, rang, wake = self._take_outputs(rang=parser.bells != bells)
            owed, self._wake_owed = self._wake_owed, False
        shown = False
        if echo is not None:
            try:  # as _safecall, inline: the consumer's failure is logged, never the feed's
                shown = self.on_echo(text, *echo)
            except Exception:
                log.exception("terminal callback %r failed", self.on_echo)
        if shown:
            with self._lock:
                self._wake_owed = wake or owed
            self._notify(replies, rang, False)
            return ECHO_SETTLE if due is None else min(due, ECHO_SETTLE)
        self._notify(replies, rang, wake or owed)
        return due

    def catch_up(self) -> None:
        """Draw the output a feed held, if any, and call ``on_change`` if a
        shown echo put it off; the output paused, so the history packs what
        it sealed meanwhile (see ``vthistory``)."""
        with self._lock:
            outputs = self._caught_up()
            owed, self._wake_owed = self._wake_owed, False
            packed = self._history.pack()
        if packed:
            # Before the notice: the reads it brings drain those threads' caches.
            drawn_on, self._drawn_on = self._drawn_on, set()
            mallocarenas.owe_drain(drawn_on)
        if outputs is not None or owed:
            replies, rang, wake = outputs or (b"", False, False)
            self._notify(replies, rang, wake or owed)
        if packed:
            mallocarenas.give_back()

    def resize(self, cols: int, rows: int) -> None:
        """Change the size; rows cut from the top go to the history."""
        _check_size(cols, rows)
        with self._lock:
            self._parser.flush()
            self._screen.resize(rows, cols)
            self._forget_rows()
            outputs = self._take_outputs(rang=False)
        self._notify(*outputs)

    def reset(self) -> None:
        """Start afresh for a new process: the old main screen joins the history."""
        with self._lock:
            self._parser.flush()
            cols = self._screen.columns
            kept = [whole_text(row, cols) for row in self._screen.main_rows()]
            while kept and not kept[-1]:
                kept.pop()
            self._history.extend(kept)
            self._screen.reset()
            self._parser.reset()
            self._decoder.reset()
            self._replies.clear()
            self._forget_rows()
            outputs = self._take_outputs(rang=False)
        self._notify(*outputs)

    def take_dirty(self) -> bool:
        """Whether the screen changed since the last call (read and clear);
        also re-arms ``on_change``."""
        with self._lock:
            dirty, self.dirty = self.dirty, False
            self._woke = False
            return dirty

    def rearm(self) -> None:
        """Call ``on_change`` again on the next change, though nothing took
        the screen since the last call: for a watcher whose first try to
        draw it missed and that wants the next feed's chance too."""
        with self._lock:
            self._woke = False

    # -- the screen --------------------------------------------------------------

    def display(self) -> list[str]:
        """The visible lines, trailing blanks removed."""
        with self._reading():
            return [self._text(y) for y in range(self._screen.lines)]

    def whole_display(self) -> list[str]:
        """The visible lines with the text a narrowed pane hides (for transcripts)."""
        with self._reading():
            cols = self._screen.columns
            return [whole_text(self._screen.row(y), cols) for y in range(self._screen.lines)]

    def text(self) -> str:
        """The visible screen as one string."""
        return "\n".join(self.display())

    def render_rows(self) -> tuple[tuple[Run, ...], ...]:
        """Each visible row as style runs (trailing default blanks left out)."""
        with self._reading():
            return tuple(self._row_runs(y) for y in range(self._screen.lines))

    def snapshot(self) -> Snapshot:
        """An immutable copy of lines, runs, cursor and modes."""
        with self._reading():
            screen = self._screen
            every = range(screen.lines)
            return Snapshot(
                lines=tuple(self._text(y) for y in every),
                runs=tuple(self._row_runs(y) for y in every),
                cursor=self._cursor(), cursor_visible=self.cursor_visible,
                alternate_screen=screen.alternate, bracketed_paste=self.bracketed_paste,
                application_cursor=self.application_cursor,
                application_keypad=self.application_keypad,
                mouse_tracking=self.mouse_tracking, mouse_sgr=self.mouse_sgr,
                focus_events=self.focus_events, reverse_video=self.reverse_video,
                title=screen.title, cols=screen.columns, rows=screen.lines,
                history_size=len(self._history), row_gens=tuple(self._row_gens))

    def live_rows(self, held: Sequence[int], *, catch_up: bool = True) -> LiveRows:
        """The screen for a renderer that holds row ``y`` as of generation
        ``held[y]``: runs only for rows that changed since (an echo frame
        reads one row, not the screen).  ``catch_up=False`` shows it as last
        drawn, leaving held output to the feeder (which wakes ``on_change``
        once it drew it): for the deck, whose frames must never wait for a
        neighbour's flood to be drawn."""
        with self._reading() if catch_up else self._lock:
            gens = tuple(self._row_gens)
            kept = len(held)
            runs = {y: self._row_runs(y) for y, gen in enumerate(gens)
                    if y >= kept or held[y] != gen}
            return LiveRows(gens, runs, self._cursor(), self.cursor_visible)

    @property
    def cursor(self) -> tuple[int, int]:
        """(x, y), 0-based, clamped to the screen."""
        with self._reading():
            return self._cursor()

    @property
    def typed_end(self) -> tuple[int, int]:
        """(x, y) where the text typed so far ends: the cursor, except on a row
        filled to its last column.  There the cursor stays on that column
        with the wrap pending (the next character starts the next row), so
        the text ends past it, at ``x == cols``; :attr:`cursor` would cut
        the row's last character off."""
        with self._reading():
            screen = self._screen
            return min(screen.cursor.x, screen.columns), screen.cursor.y

    @property
    def cols(self) -> int:
        return self._screen.columns

    @property
    def rows(self) -> int:
        return self._screen.lines

    # -- history -------------------------------------------------------------------

    def history(self) -> list[str]:
        """The lines scrolled off the main screen, oldest first, at most ``scrollback``."""
        with self._reading():
            return list(self._history)

    def history_size(self) -> int:
        """How many lines :meth:`history` holds, without reading them."""
        with self._reading():
            return len(self._history)

    def history_lines(self, start: int, stop: int) -> list[str]:
        """``history()[start:stop]``, reading only the packed blocks those lines are in."""
        with self._reading():
            return self._history.lines(start, stop)

    def search(self, query: str, *, ignore_case: bool = False) -> list[int]:
        """Indexes of the lines containing ``query`` in ``history() + display()``."""
        with self._reading():
            lines = [*self._history, *(self._text(y) for y in range(self._screen.lines))]
        if ignore_case:
            query = query.casefold()
            return [i for i, line in enumerate(lines) if query in line.casefold()]
        return [i for i, line in enumerate(lines) if query in line]

    # -- modes and counters ------------------------------------------------------------

    def as_drawn(self, text: str) -> str:
        """``text`` as it shows when drawn now.  An agent that left the DEC
        line-drawing set active (``ESC ( 0``, or ``SO`` with it in G1) has
        its typed ``q`` echoed as ``─``: an echo check must look for that."""
        screen = self._screen
        table = screen.g1_charset if screen.charset else screen.g0_charset
        return text if table is charsets.LAT1_MAP else text.translate(table)

    @property
    def bracketed_paste(self) -> bool:
        return 2004 in self._screen.private_modes

    @property
    def alternate_screen(self) -> bool:
        return self._screen.alternate

    @property
    def cursor_visible(self) -> bool:
        return not self._screen.cursor.hidden

    @property
    def application_cursor(self) -> bool:
        """DECCKM: arrow keys must be sent as ``ESC O A`` rather than ``ESC [ A``."""
        return 1 in self._screen.private_modes

    @property
    def application_keypad(self) -> bool:
        return 66 in self._screen.private_modes

    @property
    def mouse_tracking(self) -> int:
        """The active mouse mode (9, 1000, 1002 or 1003), 0 when off."""
        modes = self._screen.private_modes
        return next((mode for mode in _MOUSE_MODES if mode in modes), 0)

    @property
    def mouse_sgr(self) -> bool:
        return 1006 in self._screen.private_modes

    @property
    def focus_events(self) -> bool:
        return 1004 in self._screen.private_modes

    @property
    def reverse_video(self) -> bool:
        return 5 in self._screen.private_modes

    @property
    def title(self) -> str:
        return self._screen.title

    @property
    def held(self) -> int:
        """Characters of output held back, not drawn yet (see ``hold``)."""
        return self._parser.held_size

    @property
    def errors(self) -> int:
        """Malformed input the emulator skipped (each incident contained)."""
        return self._parser.errors + self._own_errors

    @property
    def bells(self) -> int:
        return self._parser.bells

    # -- internals -----------------------------------------------------------------

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """The lock, for a read: held output is drawn first (its callbacks
        run once the lock is released)."""
        with self._lock:
            outputs = self._caught_up()
            yield
        if outputs is not None:
            self._drawn_on.add(threading.get_ident())
            mallocarenas.drew()
            self._notify(*outputs)
        elif mallocarenas.owed:
            mallocarenas.settle()

    def _caught_up(self) -> tuple[bytes, bool, bool] | None:
        """Under the lock: draw what a feed held; the outputs to notify, None
        when nothing was held."""
        if not self._parser.held:
            return None
        before = self._state()
        self._parser.flush()
        self._settle(before)
        return self._take_outputs(rang=False)

    def _plain_echo(self, text: str, before: tuple[Any, ...]) -> tuple[int, int] | None:
        """Under the lock, after the parse: where ``text`` was written as it
        is (see ``on_echo``), None when the feed did anything else."""
        screen = self._screen
        cursor = screen.cursor
        x, y = before[0], before[1]
        dirty = screen.dirty
        if (cursor.y != y or cursor.x != x + len(text) or cursor.x >= screen.columns
                or len(dirty) != 1 or y not in dirty
                or not text.isascii() or not text.isprintable()
                or screen.modes_serial != before[3] or cursor.attrs != BLANK
                or screen.charset or screen.g0_charset is not charsets.LAT1_MAP
                or mo.IRM in screen.mode):
            return None
        return x, y

    def _cursor(self) -> tuple[int, int]:
        screen = self._screen
        return min(screen.cursor.x, screen.columns - 1), screen.cursor.y

    def _text(self, y: int) -> str:
        text = self._texts[y]
        if text is None:
            text = self._texts[y] = row_text(self._screen.row(y), self._screen.columns)
        return text

    def _row_runs(self, y: int) -> tuple[Run, ...]:
        runs = self._runs[y]
        if runs is None:
            runs = self._runs[y] = row_runs(self._screen.row(y), self._screen.columns)
        return runs

    def _state(self) -> tuple[Any, ...]:
        # The history too: lines scrolled off a screen that looks the same
        # after (a repeated line) still move a pane scrolled back, and so does
        # a cleared history.
        screen = self._screen
        cursor = screen.cursor
        return (cursor.x, cursor.y, cursor.hidden, screen.modes_serial, screen.title,
                self.lines_scrolled, len(self._history))

    def _settle(self, before: tuple[Any, ...]) -> None:
        """Drop cached rows the feed changed; note whether anything changed.

        A row written again as it was (a TUI redrawing its whole frame for
        one changed line, an agent's input box on every key) keeps its
        generation, so no reader builds it again."""
        touched = self._screen.dirty
        changed = False
        if touched:
            rows = len(self._texts)
            gen, gens, shown = self.generation + 1, self._row_gens, self._shown
            row_of = self._screen.row
            for y in touched:
                if 0 <= y < rows:
                    row, was = row_of(y), shown[y]
                    # Showing what it showed (inline: every feed's rows come
                    # here): blanks and rows kept as text are values; a row
                    # of cells changes in place, so it is never the same.
                    if row is None:
                        if was is None:
                            continue
                    elif row.__class__ is TextRow and was.__class__ is TextRow and row == was:
                        continue
                    shown[y] = row
                    self._texts[y] = self._runs[y] = None
                    gens[y] = gen
                    changed = True
            touched.clear()
        if changed or self._state() != before:
            self.generation += 1
            self.dirty = True

    def _forget_rows(self) -> None:
        rows = self._screen.lines
        self._texts = [None] * rows
        self._runs = [None] * rows
        self._shown = [_UNSEEN] * rows
        self.generation += 1
        self._row_gens = [self.generation] * rows
        self._screen.dirty.clear()
        self.dirty = True

    def _scrolled(self, row: Row) -> None:
        self._keep([whole_text(row, self._screen.columns)])

    def _scrolled_rows(self, rows: list[Row | str], joined: Joined | None = None) -> None:
        # Whole rows, with what a narrowing of the pane cut off: the history and
        # the transcript hold lines as the program wrote them, whatever the tile.
        self._keep(history_lines(rows, self._screen.columns), joined)

    def _keep(self, lines: list[str], joined: Joined | None = None) -> None:
        self._history.extend(lines)
        fresh = self._fresh
        if joined is not None:
            start, count, joined_lines, tail = joined
            fresh.joined.append((len(fresh) + start, count, joined_lines, tail,
                                 self._screen.columns))
        fresh.extend(lines)
        self.lines_scrolled += len(lines)
        self._gap_open = False

    def _erasing(self) -> None:
        """A full clear loses text that never scrolled off: mark the gap for
        transcript readers (``on_scrolled`` gets GAP_MARKER), once per run of
        clears, so an agent that repaints by clearing cannot flood it."""
        if self._gap_open:
            return
        cols = self._screen.columns
        if any(row_text(row, cols).strip() for row in self._screen.main_rows()):
            self._fresh.append(GAP_MARKER)
            self._gap_open = True

    def _take_outputs(self, rang: bool) -> tuple[bytes, bool, bool]:
        if self._fresh:
            self._outbox.append(self._fresh)
            self._fresh = Scrolled()
        replies = b""
        if self._replies:  # (none almost always: an echo's feed comes here too)
            replies = "".join(self._replies).encode()
            self._replies.clear()
        wake = self.dirty and not self._woke
        self._woke |= wake
        return replies, rang, wake

    def _notify(self, replies: bytes, rang: bool, wake: bool) -> None:
        # Replies first: a program may be blocked waiting for them.
        if replies and self.reply is not None:
            _safecall(self.reply, replies)
        if self._outbox:
            self._deliver_scrolled()
        if rang and self.on_bell is not None:
            _safecall(self.on_bell)
        if wake and self.on_change is not None:
            _safecall(self.on_change)

    def _deliver_scrolled(self) -> None:
        """Hand the scrolled lines to ``on_scrolled`` in the order they left
        the screen: one thread at a time takes them from the outbox, and
        takes too what other threads put there meanwhile."""
        while True:
            with self._lock:
                if self._delivering or not self._outbox:
                    return
                lines = self._outbox.popleft()
                self._delivering = True
            try:
                if self.on_scrolled is not None:
                    _safecall(self.on_scrolled, lines)
            finally:
                with self._lock:
                    self._delivering = False


def _check_size(cols: int, rows: int) -> None:
    if cols < 1 or rows < 1:
        raise ValueError(f"a terminal needs at least one column and one row, not {cols}x{rows}")


def _safecall(callback: Callable[..., object], *args: object) -> object:
    """Run a consumer's callback, giving what it returned; its failure is
    logged (None given), never the feed's."""
    try:
        return callback(*args)
    except Exception:
        log.exception("terminal callback %r failed", callback)
        return None
