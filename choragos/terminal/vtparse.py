"""Turning what an agent CLI writes into calls on a :class:`VTScreen`.

pyte's own parser reads one character at a time through a generator, lets
DCS/APC payloads leak onto the screen, reads ``CSI > 4 ; 2 m`` as an SGR, and
raises on some malformed input.  This one tokenises with a single regular
expression, so a whole escape sequence or run of text is one step, keeps an
unfinished sequence for the next feed, and contains any failure to the token
that caused it.  It also answers the queries CLIs block on (cursor position,
device attributes, DECRQM, colours) through ``respond``.

A run of log lines that ends a feed may be *held* instead of drawn
(``feed(..., hold=True)``): a flood read in 4 KB pieces then reaches the
screen as one block per batch of pieces, and the screen works out the
colours of only the lines that stay on it once per batch, not once per
piece.  Anything else the parser meets -- any other token, :meth:`flush`,
:meth:`reset` -- draws what is held first, so the screen never sees the
output out of order.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from choragos.terminal.vtcells import number, one_cell_each
from choragos.terminal.vtrows import SGR_SPLIT
from choragos.terminal.vtscreen import VTScreen

log = logging.getLogger("choragos.terminal")

# A run of plain lines must carry at least this many LFs before the screen
# takes it as one block; below that the bookkeeping costs more than it saves.
BLOCK_MIN_LINES = 4

# An unterminated OSC/DCS longer than this is cut: its payload is discarded
# up to the terminator instead of being buffered without bound.
MAX_PENDING = 65536

PRIMARY_DA = "\x1b[?62;22c"      # VT220 with ANSI colour, as xterm-alikes answer
SECONDARY_DA = "\x1b[>1;10;0c"
TERTIARY_DA = "\x1bP!|00000000\x1b\\"
XTVERSION = "\x1bP>|choragos\x1b\\"
COLOUR_REPLIES = {"10": "rgb:d0d0/d0d0/d0d0", "11": "rgb:0000/0000/0000",
                  "12": "rgb:d0d0/d0d0/d0d0"}

_TOKEN = re.compile(
    r"([^\x00-\x1f\x7f-\x9f]+(?:(?:\x1b\[[0-9;:]*m)+[^\x00-\x1f\x7f-\x9f]*)*)"  # 1 text, SGRs
    r"|((?:\x1b\[[0-?]*[@-~]){2,})"                            # 2 complete CSIs in a row
    r"|([\x00-\x1a\x1c-\x1f\x7f-\x9f])"                       # 3 control, not ESC
    r"|\x1b\[([0-?]*)([ -/]*)([@-~]|\Z)?"                     # 4 params 5 inter 6 final
    r"|\x1b\]([^\x07\x18\x1a\x1b]*)(\x07|\x1b\\|\x1b?\Z)?"    # 7 payload 8 end
    r"|\x1b[P^_X]([^\x18\x1a\x1b]*)(\x1b\\|\x1b?\Z)?"         # 9 payload 10 end
    r"|\x1b([ -/]*)([0-~]|\Z)"                                # 11 inter 12 final
    r"|(\x1b)",                                               # 13 a stray ESC
    re.S)
_TEXT, _CSIS, _CONTROL, _CSI_BROKEN, _CSI, _OSC_BROKEN, _OSC = 1, 2, 3, 5, 6, 7, 8
_STRING_BROKEN, _STRING, _ESC = 9, 10, 12
# Token kind -> the group that is empty (or a lone ESC) while the sequence is unfinished.
_ENDS = {_CSI: 6, _OSC: 8, _STRING: 10, _ESC: 12}
# One CSI of a run of them (group 2 above): params and final.
_ONE_CSI = re.compile(r"\x1b\[([0-?]*)([@-~])")

# Text, tabs, CRs and LFs, with the colour (SGR) and erase-to-end-of-line
# sequences that test runners and build tools put on their lines.
_PLAIN_BLOCK = re.compile(r"(?:[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+"
                          r"|\x1b\[[0-9;:]*m|\x1b\[0?K)*")
# An escape a block may not hold: one that starts neither a colour nor an
# erase to the end of the line (or one cut off).  One search in C over a
# flood's held batch (a list of its thousand colours took twice as long).
_NOT_BLOCK_SEQUENCE = re.compile(r"\x1b(?!\[[0-9;:]*m|\[0?K)")
# The start of a colour or erase sequence that a piece of output cut off.
_SEQUENCE_BEGUN = re.compile(r"\x1b(?:\[[0-9;:]*)?\Z")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_EXECUTED_IN_CSI = frozenset("\x07\x08\x09\x0a\x0b\x0c\x0d")

_Action = tuple[Callable[..., None], tuple[object, ...]]

# Final byte -> screen method taking the first parameter (None when absent).
_ONE_PARAM = {"A": "cursor_up", "B": "cursor_down", "C": "cursor_forward", "D": "cursor_back",
              "E": "cursor_down1", "F": "cursor_up1", "G": "cursor_to_column",
              "`": "cursor_to_column", "a": "cursor_forward", "d": "cursor_to_line",
              "e": "cursor_down", "@": "insert_characters", "P": "delete_characters",
              "X": "erase_characters", "L": "insert_lines", "M": "delete_lines",
              "J": "erase_in_display", "K": "erase_in_line", "g": "clear_tab_stop",
              "S": "scroll_up", "b": "repeat", "I": "tab_forward", "Z": "tab_back"}


class VTParser:
    """Feeds decoded text to a screen; ``respond`` receives replies to queries."""

    def __init__(self, screen: VTScreen, respond: Callable[[str], None]) -> None:
        self.screen = screen
        self.respond = respond
        self.errors = 0
        self.bells = 0
        self._pending = ""
        self._truncated = False
        self._no_block_before = 0
        self._holding = False
        self.held: list[str] = []  # runs of log lines taken but not drawn yet, in order
        self.held_size = 0  # their characters
        self.held_since = 0.0  # time.monotonic() of the first of them
        self._unchecked = False  # whether some of them were held unparsed (hold_more)
        self._numbers: dict[str, tuple[int, ...]] = {}
        self._csi_table = self._build_csi_table()
        self._actions: dict[str, _Action] = {}
        self._sequences: dict[str, tuple[_Action, ...]] = {}
        self._controls: dict[str, Callable[[], None]] = {
            "\n": screen.linefeed, "\x0b": screen.linefeed, "\x0c": screen.linefeed,
            "\r": screen.carriage_return, "\x08": screen.backspace, "\t": screen.tab,
            "\x07": self._bell}
        self._esc_table: dict[str, Callable[[], None]] = {
            "7": screen.save_cursor, "8": screen.restore_cursor, "D": screen.index,
            "E": screen.next_line, "M": screen.reverse_index, "H": screen.set_tab_stop,
            "c": screen.reset}

    def reset(self) -> None:
        """Forget any half-received sequence (what is held is drawn first)."""
        self.flush()
        self._pending = ""
        self._truncated = False

    # -- the token loop ----------------------------------------------------------

    def feed(self, text: str, blocks: bool = True, hold: bool = False) -> None:
        """Parse ``text``; with ``blocks`` runs of plain lines may take the fast
        path, and with ``hold`` a run that ends ``text`` waits in ``held``."""
        self.screen.text_rows = blocks
        self._holding = hold
        self._no_block_before = 0
        if text and text.isprintable() and not (self._pending or self.held or self._unchecked):
            # A key's echo, or any text without a control or an escape: drawn
            # as the token loop would draw it, without the loop.
            try:
                self.screen.draw(text)
            except Exception:
                self._contain()
            self.held_since = 0.0
            return
        if self._unchecked:
            # Held unparsed and followed by what cannot join it: parse it all
            # now, in order (its last escape may be finished by ``text``).
            text = self._take_held() + text
        data = self._pending + text if self._pending else text
        self._pending = ""
        # What follows held lines joins them however short it is: a flood
        # written in batches is read in 4 KB pieces and a short remainder.
        blocks = blocks and (bool(self.held) or data.count("\n") >= BLOCK_MIN_LINES)
        resume: tuple[str, int] | None = (data, 0)
        while resume is not None:
            resume = self._scan(*resume, blocks)
        if not self.held:
            self.held_since = 0.0

    def _scan(self, data: str, pos: int, blocks: bool) -> tuple[str, int] | None:
        """Dispatch tokens from ``pos``; return where to resume when the data or
        position had to change under the iterator, None when done."""
        draw = self.screen.draw
        rows = self.screen.text_rows
        actions = self._actions
        if pos >= len(data):
            return None
        # A block can only start where a line does: here, or after a LF.  Trying
        # there, not at every token, keeps the block path free for the tokens of
        # a screen being redrawn.
        if blocks and (pos == 0 or data[pos - 1] == "\n"):
            end = self._try_block(data, pos)
            if end is not None:
                return data, end
        if self.held:
            self.flush()
        for match in _TOKEN.finditer(data, pos):
            kind = match.lastindex
            try:
                if kind == _TEXT:
                    text = match.group(1)
                    if "\x1b" not in text:
                        draw(text)
                    elif not (rows and self.screen.draw_run(text)):
                        self._run(text)
                elif kind == _CSIS:
                    self._play(match.group(2))
                elif kind == _CONTROL:
                    char = match.group(3)
                    control = self._controls.get(char)
                    if control is not None:
                        control()
                    if blocks and char == "\n":
                        end = self._try_block(data, match.end())
                        if end is not None:
                            return data, end
                elif kind == _CSI:
                    action = actions.get(match.group())
                    if action is None:
                        if not match.group(6):
                            self._hold(data, match.start())  # only ever the last token
                            return None
                        action = self._csi_action(*match.group(4, 5, 6))
                        if len(actions) > 4096:
                            actions.clear()
                        actions[match.group()] = action
                    action[0](*action[1])
                elif _ENDS.get(kind) and match.group(_ENDS[kind]) in ("", "\x1b"):
                    self._hold(data, match.start())
                    return None
                else:
                    resume = self._rarer(data, match, kind)
                    if resume is not None:
                        return resume
            except Exception:
                self._contain()
        return None

    def _play(self, sequences: str) -> None:
        """Complete CSI sequences in a row (a TUI erasing and moving between
        its rows), their actions cached as one list."""
        found = self._sequences.get(sequences)
        if found is None:
            if len(self._sequences) > 256:
                self._sequences.clear()
            found = self._sequences[sequences] = self._erase_runs(
                [self._csi_action(params, "", final)
                 for params, final in _ONE_CSI.findall(sequences)])
        for function, args in found:
            try:
                function(*args)
            except Exception:
                self._contain()

    def _erase_runs(self, actions: list[_Action]) -> tuple[_Action, ...]:
        """``actions`` with each run of (erase the row, up one) pairs made one
        action: an Ink frame starts with one such pair per row of the last."""
        erase, up = (self.screen.erase_in_line, (2,)), self.screen.cursor_up
        out: list[_Action] = []
        for action in actions:
            if out and out[-1] == erase and action[0] == up and action[1] in ((1,), (None,)):
                out[-1] = (self.screen.erase_rows_up, (1,))
                if len(out) > 1 and out[-2][0] == self.screen.erase_rows_up:
                    out[-2:] = [(self.screen.erase_rows_up, (out[-2][1][0] + 1,))]
            else:
                out.append(action)
        return tuple(out)

    def _run(self, run: str) -> None:
        """Text with colour sequences between its pieces, one piece at a time."""
        screen = self.screen
        for i, piece in enumerate(SGR_SPLIT.split(run)):
            try:
                if i % 2:
                    screen.sgr(piece)
                elif piece:
                    screen.draw(piece)
            except Exception:
                self._contain()

    def _rarer(self, data: str, match: re.Match[str], kind: int | None) -> tuple[str, int] | None:
        if kind == _CSI_BROKEN:
            return self._broken_csi(data, match)
        if kind == _OSC and not self._truncated:
            self._osc(match.group(7), match.group(8))
        elif kind == _ESC:
            self._esc(match.group(11), match.group(12))
        if kind in (_OSC, _STRING, _OSC_BROKEN, _STRING_BROKEN):
            self._truncated = False  # the string is over, finished or aborted
        return None

    def _try_block(self, data: str, start: int) -> int | None:
        """Take the run of log lines at ``start`` (a line's start) as one block.

        A failed attempt marks the run it looked at (``_no_block_before``), so
        the lines of a short run do not pay for an attempt each."""
        if start < self._no_block_before or not self.screen.block_ready():
            return None
        block = _PLAIN_BLOCK.match(data, start)
        text = block.group()
        if not text:
            return None
        if ((text.count("\n") < BLOCK_MIN_LINES and not (self.held and start == 0))
                or ("\x1b" in text and not one_cell_each(text))):
            # Too short, or coloured lines the block could only take cell by
            # cell anyway (its gain is ASCII kept as text).  Do not rescan
            # this run for every piece of it.
            self._no_block_before = block.end()
            return None
        if not self.held_since:
            self.held_since = time.monotonic()
        self.held.append(text)
        self.held_size += len(text)
        end = block.end()
        if self._holding and _SEQUENCE_BEGUN.match(data, end):
            # A piece of a flood ends anywhere, inside a colour sequence too:
            # the rest of it comes with the next piece.
            self._pending = data[end:]
            return len(data)
        if not (self._holding and end == len(data)):
            self.flush()  # the next token draws on top of it
        return end

    def flush(self) -> bool:
        """Draw the held runs, as one block; False when none were held."""
        if not self.held:
            return False
        unchecked = self._unchecked
        text = self._take_held()
        self.held_since = 0.0
        if unchecked and _NOT_BLOCK_SEQUENCE.search(text):
            # Some escape other than a colour or an erase came in unparsed, or
            # a colour sequence is still cut off: parse it all, as if never held.
            self._scan_all(text)
            return True
        try:
            self.screen.take_block(text)
        except Exception:
            self._contain()
        return True

    def _take_held(self) -> str:
        """What is held, as one text, taken out (``held_since`` stays: it
        dates whatever is held next from the same output)."""
        text = "".join(self.held)
        self.held.clear()
        self.held_size = 0
        self._unchecked = False
        return text

    def hold_more(self, text: str) -> None:
        """Add ``text`` to what is held without parsing it: the caller has
        seen it is printable ASCII, tabs, CRs, LFs and escapes.  Whether
        every escape is a colour or an erase is checked once, at
        :meth:`flush`, for all of it (a flood's pieces then cost a copy)."""
        if self._pending:
            text, self._pending = self._pending + text, ""
        self.held.append(text)
        self.held_size += len(text)
        self._unchecked = True

    def _scan_all(self, text: str) -> None:
        holding, self._holding = self._holding, False
        try:
            resume: tuple[str, int] | None = (text, 0)
            while resume is not None:
                resume = self._scan(*resume, True)
        finally:
            self._holding = holding

    def _hold(self, data: str, start: int) -> None:
        """Keep an unfinished sequence for the next feed, within bounds."""
        pending = data[start:]
        if len(pending) > MAX_PENDING:
            if pending[1] in "]P^_X":
                # Keep only the introducer; the payload up to the terminator is dropped.
                pending = pending[:2] + ("\x1b" if pending.endswith("\x1b") else "")
                self._truncated = True
            else:
                pending = ""
                self.errors += 1
        self._pending = pending

    def _broken_csi(self, data: str, match: re.Match[str]) -> tuple[str, int] | None:
        """A CSI interrupted by a character that cannot be part of it."""
        end = match.end()
        char = data[end]
        if char in _EXECUTED_IN_CSI or char == "\x7f":
            # C0 controls act inside a CSI, which then goes on (DEL is ignored).
            if char != "\x7f":
                self._controls.get(char, _nothing)()
            return data[:end] + data[end + 1:], match.start()
        # Anything else abandons the sequence; CAN and SUB are consumed with it.
        return data, end + (1 if char in "\x18\x1a" else 0)

    def _contain(self) -> None:
        self.errors += 1
        level = logging.WARNING if self.errors == 1 else logging.DEBUG
        log.log(level, "terminal input the emulator could not apply (skipped)", exc_info=True)

    def _bell(self) -> None:
        self.bells += 1

    # -- CSI -----------------------------------------------------------------------

    def numbers(self, params: str) -> tuple[int, ...]:
        """``1;2:3;`` -> (1, 2, 0); cached, agents repeat a handful of these."""
        found = self._numbers.get(params)
        if found is None:
            found = tuple(number(f.split(":", 1)[0]) for f in params.split(";")) if params else ()
            if len(self._numbers) > 1024:
                self._numbers.clear()
            self._numbers[params] = found
        return found

    def _build_csi_table(self) -> dict[str, Callable[[str], None]]:
        screen = self.screen
        return {"r": self._margins, "m": screen.sgr, "h": self._set_modes,
                "l": self._reset_modes, "n": self._status, "c": self._primary_da,
                "s": self._save_cursor, "u": self._restore_cursor, "t": self._window_op,
                "T": self._scroll_down}

    def _csi_action(self, params: str, inter: str, final: str) -> _Action:
        """What a CSI sequence does, as (callable, arguments), cached per sequence."""
        if inter or (params and params[0] in "<=>?"):
            if not inter and params[0] == "?" and final in "hl":
                return self.screen.set_private, (self.numbers(params[1:]), final == "h")
            return self._private_csi, (params, inter, final)
        name = _ONE_PARAM.get(final)
        if name is not None:
            found = self.numbers(params)
            return getattr(self.screen, name), (found[0] if found else None,)
        if final in ("H", "f"):
            return self.screen.cursor_position, self.numbers(params)[:2]
        handler = self._csi_table.get(final)
        return (handler, (params,)) if handler is not None else (_nothing, ())

    def _private_csi(self, params: str, inter: str, final: str) -> None:
        private = params[:1] if params[:1] in ("<", "=", ">", "?") else ""
        body = params[1:] if private else params
        key = (private, inter, final)
        if key in (("?", "", "h"), ("?", "", "l")):
            self.screen.set_private(self.numbers(body), final == "h")
        elif final == "p" and inter == "$":
            self._report_mode(private, self.numbers(body))
        elif key == ("?", "", "n") and self.numbers(body)[:1] == (6,):
            self.respond("\x1b[?{};{}R".format(*self._position()))
        elif key == (">", "", "c"):
            self.respond(SECONDARY_DA)
        elif key == ("=", "", "c"):
            self.respond(TERTIARY_DA)
        elif key == (">", "", "q"):
            self.respond(XTVERSION)
        elif key == ("", "!", "p"):
            self.screen.soft_reset()
        # Deliberately unanswered: the kitty keyboard query (CSI ? u).  Saying
        # yes would promise key encodings the deck does not send; CLIs fall
        # back when the DA1 that follows the query arrives first.

    def _set_modes(self, params: str) -> None:
        self.screen.set_ansi(self.numbers(params), True)

    def _reset_modes(self, params: str) -> None:
        self.screen.set_ansi(self.numbers(params), False)

    def _margins(self, params: str) -> None:
        found = self.numbers(params)
        # 0 means "the default" here; pyte would read `CSI ; r` as a one-line region.
        self.screen.set_margins(*(n or None for n in found[:2]))

    def _scroll_down(self, params: str) -> None:
        found = self.numbers(params)
        if len(found) <= 1:  # five parameters is xterm's mouse highlight, not SD
            self.screen.scroll_down(found[0] if found else None)

    def _save_cursor(self, params: str) -> None:
        if not params:
            self.screen.save_cursor()

    def _restore_cursor(self, params: str) -> None:
        if not params:
            self.screen.restore_cursor()

    # -- queries -----------------------------------------------------------------------

    def _position(self) -> tuple[int, int]:
        """The cursor as a CPR reports it: 1-based, row relative to DECOM margins."""
        screen = self.screen
        row = screen.cursor.y + 1
        if screen.margins is not None and (6 << 5) in screen.mode:
            row -= screen.margins.top
        return row, min(screen.cursor.x, screen.columns - 1) + 1

    def _status(self, params: str) -> None:
        found = self.numbers(params)
        if found == (5,):
            self.respond("\x1b[0n")
        elif found == (6,):
            self.respond("\x1b[{};{}R".format(*self._position()))

    def _primary_da(self, params: str) -> None:
        if self.numbers(params) in ((), (0,)):
            self.respond(PRIMARY_DA)

    def _window_op(self, params: str) -> None:
        if self.numbers(params)[:1] == (18,):
            self.respond(f"\x1b[8;{self.screen.lines};{self.screen.columns}t")

    def _report_mode(self, private: str, modes: tuple[int, ...]) -> None:
        """DECRQM: 1 set, 2 reset, 0 not recognised."""
        mode = modes[0] if modes else 0
        if private == "?":
            state = self.screen.private_mode(mode)
        elif not private and mode in (4, 20):
            state = mode in self.screen.mode
        else:
            state = None
        code = 0 if state is None else 1 if state else 2
        self.respond(f"\x1b[{private}{mode};{code}$y")

    # -- ESC and OSC -----------------------------------------------------------------

    def _esc(self, inter: str, final: str) -> None:
        screen = self.screen
        if not inter:
            action = self._esc_table.get(final)
            if action is not None:
                action()
            elif final in ("=", ">"):
                screen.set_private((66,), final == "=")
        elif inter in ("(", ")"):
            screen.define_charset(final, inter)
        elif inter == "#" and final == "8":
            screen.alignment_display()

    def _osc(self, payload: str, end: str) -> None:
        code, _, arg = payload.partition(";")
        if code in ("0", "1", "2"):
            name = _UNPRINTABLE.sub("", arg)[:256]
            if code != "1":
                self.screen.title = name
            if code != "2":
                self.screen.icon_name = name
        elif code in COLOUR_REPLIES and arg == "?":
            self.respond(f"\x1b]{code};{COLOUR_REPLIES[code]}{end}")


def _nothing(*_args: object) -> None:
    """A sequence or control character with no effect here."""
