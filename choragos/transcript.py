"""Per-role transcripts: ``.choragos/logs/<role>.log``.

Lines are appended as they scroll off the emulated screen; the live screen
is flushed when the pane closes.  A line keeps the text a narrowing of the
pane cut off (the emulator keeps it as the row's tail), so what lands here does
not depend on the tile size the line was shown in.  Each spawn starts with a header line.  A
``--- transcript gap ---`` line (the terminal's GAP_MARKER, passed through
with the scrolled lines) marks text that was cleared from the screen before
it could scroll off, and so is missing here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from choragos import statedir


class Transcript:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.error: OSError | None = None

    def _append(self, lines: Iterable[str]) -> None:
        text = "".join(f"{line}\n" for line in lines)
        if not text:
            return
        with self._lock:
            try:
                with statedir.open_append(self.path, errors="replace") as handle:
                    handle.write(text)
            except OSError as exc:
                # A full disk or a planted link costs transcript lines, never the role.
                self.error = exc

    def start_session(self, argv: Sequence[str], workdir: Path, pid: int) -> None:
        stamp = datetime.now().astimezone().isoformat(timespec="seconds")
        self._append([f"=== {stamp} pid {pid} in {workdir}: {' '.join(argv)} ==="])

    def append_lines(self, lines: Sequence[str]) -> None:
        self._append(line.rstrip() for line in lines)

    def flush_screen(self, lines: Sequence[str]) -> None:
        """Write the visible screen, minus trailing blank lines."""
        trimmed = list(lines)
        while trimmed and not trimmed[-1].strip():
            trimmed.pop()
        self._append(line.rstrip() for line in trimmed)
