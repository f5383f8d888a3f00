"""The event log: ``.choragos/logs/events.jsonl``, one JSON object a line.

Each record is written whole with a single ``write`` and flushed, so a
``kill -9`` of the server leaves at most one torn last line, which readers
skip.  Past ``max_bytes`` the file rotates to ``events.jsonl.1`` (…``.3``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

MAX_BYTES = 5 * 1024 * 1024
KEEP_ROTATED = 3


def log_dir(workdir: Path) -> Path:
    return workdir / ".choragos" / "logs"


def default_path(workdir: Path) -> Path:
    return log_dir(workdir) / "events.jsonl"


def _stamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")


class EventLog:
    """Append-only, thread-safe JSON-lines writer with size rotation."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        # Called with each record after it is written (the session's /metrics).
        self.listeners: list[Callable[[dict], None]] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run

    def write(self, event: str, **fields: object) -> dict:
        now = time.time()
        record = {"ts": _stamp(now), "t": round(now, 3), "event": event, **fields}
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._file.closed:
                return record
            self._file.write(line)
            self._file.flush()
            if self._file.tell() > self.max_bytes:
                self._rotate()
        for listener in self.listeners:
            listener(record)
        return record

    def _rotate(self) -> None:
        self._file.close()
        for n in range(KEEP_ROTATED - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_events(path: Path) -> Iterator[dict]:
    """Yield records up to the first damaged line (a torn write or garbage)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                return
            if isinstance(record, dict):
                yield record
