"""The current run's records, followed as the event log grows.

The web page asks for the session's timeline every few seconds while tasks
move.  Reading the whole log with its rotated predecessors at every look
costs in proportion to the session's history (about 0.1 s of CPU at 10,000
tasks, before anything is folded); a :class:`RunFollower` reads it whole
once, then only the lines appended since.  When the file it follows was
rotated away, cut short or replaced, it reads everything again, so what it
holds is always what :func:`report.read_log` and :func:`report.split_runs`
would give for the last run.
"""

from __future__ import annotations

import os
from pathlib import Path

from choragos.board import report

MAX_RETRIES = 3  # a rotation during the whole read: read again (rotations are megabytes apart)


class RunFollower:
    """The records of the log's last run, with what each look added."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.run: list[dict] = []
        self._before: list[dict] | None = None  # the run before, while ``run`` may resume it
        self._joined = False  # ``run`` carries a resume: it no longer joins again
        self._inode: tuple[int, int] | None = None
        self._offset = 0  # bytes of the followed file read, always at a line's end
        # The first rotated file as it was when the log was read whole: every
        # rotation changes it.  The followed file's own number cannot tell: a
        # file made after a few rotations may get the number of one they
        # removed, and the new log then passes for the one read before.
        self._rotated_path = path.with_name(f"{path.name}.1")
        self._rotated: tuple[int, int, int] | None = None

    def poll(self) -> tuple[bool, list[dict]]:
        """Read what the log gained: ``(True, run)`` when the last run is new or
        was read again (fold it from its start), else ``(False, records)`` with
        the records appended to it since the last look.  OSError if the log
        cannot be read."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._reset()
            return True, []
        same = (self._inode == _key(st) and st.st_size >= self._offset
                and _stamp(self._rotated_path) == self._rotated)
        if not same:
            self._read_whole()
            return True, self.run
        if st.st_size == self._offset:
            return False, []
        return self._follow()

    def _reset(self) -> None:
        self.run, self._before, self._joined = [], None, False
        self._inode, self._offset = None, 0

    def _read_whole(self) -> None:
        for _ in range(MAX_RETRIES):
            self._reset()
            with open(self.path, "rb") as handle:
                followed = _key(os.fstat(handle.fileno()))
                rotated = _stamp(self._rotated_path)
                older = report.read_log(self.path, rotated_only=True).records
                if _identity(self.path) != followed:
                    continue  # rotated while its predecessors were read
                self._inode, self._rotated = followed, rotated
                self._take(older)
                self._take(self._lines(handle.read()))
                return
        raise OSError(f"{self.path} kept rotating while it was read")

    def _follow(self) -> tuple[bool, list[dict]]:
        with open(self.path, "rb") as handle:
            if _key(os.fstat(handle.fileno())) != self._inode:
                self._read_whole()  # replaced between the look and the open
                return True, self.run
            handle.seek(self._offset)
            records = self._lines(handle.read())
        return self._take(records)

    def _lines(self, data: bytes) -> list[dict]:
        """The records of the whole lines in ``data`` (read from the offset);
        a last line still being written waits for its end."""
        end = data.rfind(b"\n") + 1
        self._offset += end
        # As the report reads the log: undecodable bytes replaced, any line
        # ending counted, empty and damaged lines skipped.
        text = data[:end].decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        return [r for r in map(report.parse_record, text.split("\n")) if r is not None]

    def _take(self, records: list[dict]) -> tuple[bool, list[dict]]:
        """Split ``records`` into runs as :func:`report.split_runs` does: a new
        run at each ``deck starting``; one that holds ``session resumed``
        continues the run before it."""
        fresh, added = False, []
        for record in records:
            event = record.get("event")
            if event == "deck starting" and self.run:
                self._before, self.run, self._joined = self.run, [], False
                fresh, added = True, []
            self.run.append(record)
            added.append(record)
            if event == "session resumed" and not self._joined and self._before is not None:
                self.run = self._before + self.run
                self._before, self._joined = None, True
                fresh = True
            elif event == "session resumed":
                self._joined = True
        return (True, self.run) if fresh else (False, added)


def _key(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """Which file ``path`` is, and its size (a rotated file no longer grows)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        return _key(os.stat(path))
    except OSError:
        return None
