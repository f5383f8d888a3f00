"""The event log: ``.choragos/logs/events.jsonl``, one JSON object a line.

Each record is written whole with a single ``write`` and flushed, so a
``kill -9`` of the server leaves at most one torn last line, which readers
skip.  Past ``max_bytes`` the file rotates to ``events.jsonl.1`` (…``.3``).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from choragos import statedir

MAX_BYTES = 5 * 1024 * 1024
KEEP_ROTATED = 3


def log_dir(workdir: Path) -> Path:
    return workdir / ".choragos" / "logs"


def default_path(workdir: Path) -> Path:
    return log_dir(workdir) / "events.jsonl"


def _stamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")


class EventLog:
    """Append-only, thread-safe JSON-lines writer with size rotation.

    :meth:`append` raises ``OSError`` when the record could not be written
    (a full disk, a link planted in ``.choragos/``); the caller decides what
    that means.  :meth:`write` is for records that must never take their
    writer down: it notes the failure in ``error`` and carries on.
    """

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.error: OSError | None = None
        self._closed = False
        self._lock = threading.Lock()
        # Called with each record after it is written (the session's /metrics).
        self.listeners: list[Callable[[dict], None]] = []
        self._fd: int | None = statedir.append_fd(path)
        self._size = os.fstat(self._fd).st_size

    def append(self, event: str, **fields: object) -> dict:
        """Write one record whole, or raise OSError and leave the file as it was."""
        now = time.time()
        record = {"ts": _stamp(now), "t": round(now, 3), "event": event, **fields}
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode(
            "utf-8", errors="surrogateescape")
        with self._lock:
            if self._closed:
                return record
            if self._fd is None:  # a rotation that failed half-way
                self._fd = statedir.append_fd(self.path)
                self._size = os.fstat(self._fd).st_size
            self._write_whole(line)
            self.error = None
            if self._size > self.max_bytes:
                self._rotate()
        for listener in self.listeners:
            listener(record)
        return record

    def write(self, event: str, **fields: object) -> dict:
        """:meth:`append`, but a failure is remembered instead of raised."""
        try:
            return self.append(event, **fields)
        except OSError as exc:
            self.error = exc
            return {"event": event, **fields}

    def _write_whole(self, line: bytes) -> None:
        written = 0
        try:
            while written < len(line):
                written += os.write(self._fd, line[written:])
        except OSError:
            if written:
                # A torn line would hide every later record from readers.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
            raise
        self._size += written

    def _rotate(self) -> None:
        os.close(self._fd)
        self._fd = None
        statedir.rotate(self.path, KEEP_ROTATED)
        self._fd = statedir.append_fd(self.path)
        self._size = 0

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read_events(path: Path) -> Iterator[dict]:
    """Yield records up to the first damaged line (a torn write or garbage)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                return
            if isinstance(record, dict):
                yield record
