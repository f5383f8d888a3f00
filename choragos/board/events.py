"""The event log: ``.choragos/logs/events.jsonl``, one JSON object a line.

Each record is written whole with a single ``write`` and flushed, so a
``kill -9`` of the server leaves at most one torn last line, which readers
skip.  Past ``max_bytes`` the file rotates to ``events.jsonl.1`` (…``.3``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from choragos import statedir

MAX_BYTES = 5 * 1024 * 1024
KEEP_ROTATED = 3
LOST_EVENT = "event log write failed"  # written once the log takes records again

log = logging.getLogger(__name__)


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
    writer down: it notes the failure in ``error`` and carries on, says so
    once in the server's log when records start being lost, and once the
    log takes records again, writes how many were lost (``event log write
    failed``, with ``lost``, ``first`` and ``error``) before the next one.
    """

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.error: OSError | None = None
        self._lost: tuple[int, str, str] | None = None  # (how many, the first, why)
        self._lost_lock = threading.Lock()
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
            self._tell_lost()
            return self.append(event, **fields)
        except OSError as exc:
            self.error = exc
            self._note_lost(event, exc)
            return {"event": event, **fields}

    def _note_lost(self, event: str, exc: OSError) -> None:
        with self._lost_lock:
            first = self._lost is None
            count = 0 if self._lost is None else self._lost[0]
            self._lost = (count + 1, *(self._lost[1:] if self._lost else (event, str(exc))))
        if first:  # once, not for every record while the disk stays full
            log.error("cannot write the event log %s (%s): events are lost until it can; "
                      "the first lost: %s", self.path, exc, event)

    def _tell_lost(self) -> None:
        """Before the first record after an outage: how many went missing."""
        with self._lost_lock:
            lost, self._lost = self._lost, None
        if lost is None:
            return
        try:
            self.append(LOST_EVENT, lost=lost[0], first=lost[1], error=lost[2])
        except OSError:
            with self._lost_lock:  # still failing: go on counting from there
                more = self._lost[0] if self._lost else 0
                self._lost = (lost[0] + more, lost[1], lost[2])
            raise
        log.warning("the event log %s takes records again; %d were lost", self.path, lost[0])

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
