"""Per-role transcripts: ``.choragos/logs/<role>.log``.

Lines are appended as they scroll off the emulated screen; the live screen
is flushed when the pane closes.  A line keeps the text a narrowing of the
pane cut off (the emulator keeps it as the row's tail), so what lands here does
not depend on the tile size the line was shown in.  A line the program
wrote wider than its terminal, which the terminal wrapped onto several rows,
is written as the one line it was (see :func:`logical_lines`), so a grep
finds its words.  Each spawn starts with a header line.  A
``--- transcript gap ---`` line (the terminal's GAP_MARKER, passed through
with the scrolled lines) marks text that was cleared from the screen before
it could scroll off, and so is missing here.  Past ``MAX_BYTES`` the file
rotates, keeping the ``KEEP_ROTATED`` newest before it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from choragos import statedir
from choragos.terminal.emulator import GAP_MARKER as GAP  # never joined to a row
from choragos.terminal.pytelib import wcwidth
from choragos.terminal.vtcells import NARROW, ascii_lines

# How often a kept transcript file is checked to still be the one at its path.
RECHECK = 1.0
# Past this size the transcript rotates to ``<role>.log.1`` (… ``.3``): a
# pane flooding at 1 MB/s through a night would otherwise fill the disk,
# and with it the journal the session's acks depend on.
MAX_BYTES = 16 * 1024 * 1024
KEEP_ROTATED = 3


def logical_lines(rows: Iterable[str], width: int, carry: str = "") -> tuple[list[str], str]:
    """Rows as they left a ``width``-column screen, joined back into the lines
    the program wrote: a row that fills the width exactly was wrapped by the
    terminal, so the next row continues it.  Returned: the finished lines and
    the text still waiting for its continuation (the next call's ``carry``).

    A row of box drawing (an agent's frame) or of one repeated character (a
    rule) is never joined: it fills the width by design."""
    rows = list(map(str.rstrip, rows))
    if GAP not in rows and (flat := "".join(rows)).isascii() and flat.isprintable():
        return ascii_lines(rows, width, carry)
    return _any_lines(rows, width, carry)


def _any_lines(rows: list[str], width: int, carry: str) -> tuple[list[str], str]:
    """``logical_lines`` for rows stripped of trailing blanks, a row at a time."""
    out: list[str] = []
    for row in rows:
        if carry and (row == GAP or _boxed(row[:1])):
            out.append(carry)
            carry = ""
        text = carry + row
        carry = ""
        if row != GAP and _fills(row, width):
            carry = text
        else:
            out.append(text)
    return out, carry


def _joined_lines(rows: Sequence[str], width: int, carry: str,
                  joined: list[tuple[int, int, list[str] | None, str, int]]
                  ) -> tuple[list[str], str]:
    """``logical_lines`` of rows of which the terminal already joined some
    runs (see ``emulator.Scrolled``): only the rows around them are joined
    here.  A run cut at other columns than ``width`` (the pane was resized
    since) is joined from its rows like the rest."""
    at = 0
    for start, count, _lines, _tail, cols in joined:
        if cols != width or start < at or start + count > len(rows):
            return logical_lines(rows, width, carry)
        at = start + count
    out: list[str] = []
    at = 0
    for start, count, lines, tail, _cols in joined:
        if start > at:
            done, carry = logical_lines(rows[at:start], width, carry)
            out += done
        if lines is None:  # each row its own line
            lines, tail = rows[start:start + count], ""  # type: ignore[assignment]
        if lines:
            out.append(carry + lines[0])
            out += lines[1:]
            carry = tail
        else:
            carry += tail
        at = start + count
    if at < len(rows):
        done, carry = logical_lines(rows[at:], width, carry)
        out += done
    return out, carry


def _fills(row: str, width: int) -> bool:
    """Whether ``row`` takes exactly ``width`` cells and is not a frame or a
    rule ("-----")."""
    length = len(row)
    if length * 2 < width:  # a character takes at most two cells
        return False
    # Every scrolled row of a flood comes here: a row of one-cell characters
    # is measured by its length, in C (summing widths per character in
    # Python cost a flooding pane several times its parsing).
    if (row.isascii() and row.isprintable()) or NARROW.fullmatch(row) is not None:
        cells = length
    else:
        cells = sum(max(wcwidth(char), 0) for char in row)
    return cells == width and not _boxed(row[-1]) and row.count(row[0]) != length


def _boxed(char: str) -> bool:
    return bool(char) and "\u2500" <= char <= "\u259f"


class Transcript:
    """Appends to one role's transcript file.

    The file is opened once (never through a link, see ``statedir``) and
    kept: a flooding pane scrolls lines off many times a second, and
    opening the file safely each time cost more than parsing the flood.
    Writes go to the file that was opened, so a link planted at its path
    later is never written through; at most once a second the path is
    checked to still name that file, alone, and the file is opened afresh
    when it does not (deleted, replaced, or given a second name).
    """

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._size = 0
        self._lock = threading.Lock()
        self.error: OSError | None = None
        self._file: BinaryIO | None = None
        self._checked = 0.0
        self.opened = 0  # times the file was opened (tests count them)
        self._carry = ""  # a wrapped row waiting for the row that continues it
        self._carry_lock = threading.Lock()

    def _append(self, lines: list[str]) -> None:
        if not lines:
            return
        text = "\n".join(lines) + "\n"
        data = text.encode("utf-8", errors="replace")
        with self._lock:
            try:
                handle = self._current()
                view = memoryview(data)
                while view:
                    view = view[handle.write(view):]
                self._size += len(data)
                if self._size > self.max_bytes:
                    self._close()
                    statedir.rotate(self.path, KEEP_ROTATED)
                    self._current()  # the path names a file at all times, for tail -F
            except OSError as exc:
                # A full disk or a planted link costs transcript lines, never the role.
                self.error = exc
                self._close()

    def _current(self) -> BinaryIO:
        now = time.monotonic()
        if self._file is not None and now - self._checked >= RECHECK:
            self._checked = now
            if not self._still_ours(self._file):
                self._close()
        if self._file is None:
            self._file = os.fdopen(statedir.append_fd(self.path), "ab", buffering=0)
            self._size = os.fstat(self._file.fileno()).st_size
            self._checked = now
            self.opened += 1
        return self._file

    def _still_ours(self, handle: BinaryIO) -> bool:
        try:
            mine = os.fstat(handle.fileno())
            there = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return False
        return (mine.st_nlink == 1 and (mine.st_dev, mine.st_ino)
                == (there.st_dev, there.st_ino))

    def _close(self) -> None:
        handle, self._file = self._file, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()

    def close(self) -> None:
        with self._lock:
            self._close()

    def start_session(self, argv: Sequence[str], workdir: Path, pid: int) -> None:
        stamp = datetime.now().astimezone().isoformat(timespec="seconds")
        self._append([*self._take_carry(),
                      f"=== {stamp} pid {pid} in {workdir}: {' '.join(argv)} ==="])

    def append_lines(self, lines: Sequence[str], width: int | None = None) -> None:
        """Rows that scrolled off a ``width``-column screen (joined where the
        terminal wrapped them; the runs a terminal's ``Scrolled`` says it
        joined already are taken as joined); without ``width``, lines
        written as they are."""
        if width is None:
            self._append([*self._take_carry(), *(line.rstrip() for line in lines)])
            return
        joined = getattr(lines, "joined", None)  # a terminal's Scrolled
        with self._carry_lock:
            done, self._carry = (_joined_lines(lines, width, self._carry, joined) if joined
                                 else logical_lines(lines, width, self._carry))
        self._append(done)

    def flush_screen(self, lines: Sequence[str], width: int | None = None) -> None:
        """Write the visible screen, minus trailing blank lines."""
        trimmed = list(lines)
        while trimmed and not trimmed[-1].strip():
            trimmed.pop()
        self.append_lines(trimmed, width)
        self._append(self._take_carry())  # the screen's last line ends here

    def _take_carry(self) -> list[str]:
        with self._carry_lock:
            carry, self._carry = self._carry, ""
        return [carry] if carry else []
