"""The built-in gateway's counters on disk, so a restarted gateway goes on counting.

A gateway given a counts file (``choragos gateway --state FILE``; the
session's gateway always has ``.choragos/state/gateway-counts.jsonl``)
starts from it and adds to it after every response it counted, before the
end of that response reaches the agent.  So an agent that has its whole
answer finds its tokens on disk too, and a gateway killed the next instant
loses none of them.

The file is a journal: a header line, then one JSON line per counted
response holding what that response added.  Appending a line costs about
a microsecond; replacing a whole file by rename costs around a
millisecond on ext4 (which flushes the new file's data at the rename), and
this write sits on the end of every answer.  The journal is compacted (the
totals written as a single line to a temporary file renamed over it, never
through a link: :func:`choragos.statedir.write_text`) when a gateway
starts, when it passes :data:`COMPACT_AT` bytes, and after a write failed,
so it stays small and a half-written line never stays in it.  There is no
``fsync``: the file must survive the gateway process, not the machine (the
kernel keeps what a killed process wrote).
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from choragos import statedir

HEADER = '{"choragos":"gateway counts","version":1}'
FAMILIES = ("tokens", "requests", "errors")
COMPACT_AT = 1 << 20   # journal bytes after which the totals are rewritten as one line
MAX_SIZE = 16 << 20    # far above any journal this module writes; a larger file is not ours
MAX_COUNT = 10**15     # no count this gateway keeps gets near it: a row above is junk
SESSION_FILE = "gateway-counts.jsonl"  # in the session's state directory, beside its journal

# family -> {(label, label, label): count}
Counts = dict[str, dict[tuple[str, str, str], int]]


class CountsError(ValueError):
    """A counts file that cannot be read back; one sentence."""


def session_path(workdir: Path) -> Path:
    """Where a session's built-in gateway keeps its counters."""
    return Path(workdir) / statedir.STATE_DIRNAME / "state" / SESSION_FILE


def encode(counts: Counts) -> str:
    """One journal line: each family as ``[label, label, label, count]`` rows."""
    body = {family: [[*key, value] for key, value in sorted(counts.get(family, {}).items())]
            for family in FAMILIES if counts.get(family)}
    return json.dumps(body, separators=(",", ":")) + "\n"


def whole_file(counts: Counts) -> str:
    """A compacted journal: the header and ``counts`` as one line."""
    return HEADER + "\n" + encode(counts)


def decode(text: str) -> Counts:
    """The sum of a journal's lines.

    A line that is not a JSON object (the last one, cut short by a crash in
    mid-write) and rows that are not three strings and a count (above 0, at
    most :data:`MAX_COUNT`) are skipped.  The labels are bounded by the tally
    that restores them.
    """
    first, _, rest = text.partition("\n")
    if first.strip() != HEADER:
        raise CountsError("not a choragos gateway counts file" + (
            "" if first.lstrip().startswith("{") else " (not JSON)"))
    totals: dict[str, Counter] = {family: Counter() for family in FAMILIES}
    for line in rest.splitlines():
        try:
            body = json.loads(line)
        except ValueError:
            continue
        for family in FAMILIES:
            totals[family].update(_rows(body.get(family) if isinstance(body, dict) else None))
    return {family: dict(found) for family, found in totals.items()}


def _rows(rows: object) -> Counter[tuple[str, str, str]]:
    found: Counter[tuple[str, str, str]] = Counter()
    for row in rows if isinstance(rows, list) else ():
        if (isinstance(row, list) and len(row) == 4 and all(isinstance(x, str) for x in row[:3])
                and type(row[3]) is int and 0 < row[3] <= MAX_COUNT):
            found[row[0], row[1], row[2]] += row[3]
    return found


def load(path: Path) -> Counts | None:
    """The counters in ``path``; None when there is no such file.

    Read without following a link, and refused when larger than any
    counts file this module writes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CountsError(f"cannot read it: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SIZE + 1)
    if len(data) > MAX_SIZE:
        raise CountsError(f"larger than {MAX_SIZE} bytes")
    try:
        return decode(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CountsError("not a choragos gateway counts file (not UTF-8 text)") from None


class CountsFile:
    """A tally's journal: what each response added, appended in one write.

    ``take(whole)`` hands over the counts to write: everything when
    ``whole`` (a compaction), else what was added since the last call.  It
    is called under this file's lock, so what it hands over is written
    before anything taken after it.
    """

    def __init__(self, path: Path, report: Callable[[str], None] | None = None,
                 compact_at: int = COMPACT_AT) -> None:
        self.path = Path(path)
        self.report = report or (lambda line: None)
        self.compact_at = compact_at
        self._lock = threading.Lock()
        self._fd: int | None = None   # open for appending once the file was rewritten
        self._size = 0
        self.failing = ""  # why the last write failed; '' while writes succeed

    def save(self, take: Callable[[bool], Counts], whole: bool = False) -> None:
        """Write what ``take`` hands over; a failure (a full disk) is reported once,
        and the next save rewrites the whole file from the counts in memory."""
        with self._lock:
            whole = whole or self._fd is None or self.failing != "" \
                or self._size >= self.compact_at
            counts = take(whole)
            try:
                if whole:
                    self._rewrite(counts)
                elif any(counts.values()):
                    self._append(encode(counts).encode())
            except OSError as exc:
                self._failed(str(exc.strerror or exc))
                return
            if self.failing:
                self.failing = ""
                self.report(f"counts file {self.path} written again")

    def close(self) -> None:
        with self._lock:
            self._close()

    def _rewrite(self, counts: Counts) -> None:
        self._close()
        statedir.write_text(self.path, whole_file(counts))
        self._fd = statedir.append_fd(self.path)
        self._size = os.fstat(self._fd).st_size

    def _append(self, line: bytes) -> None:
        written = os.write(self._fd, line)
        self._size += written
        if written != len(line):
            raise OSError(errno.ENOSPC, f"only {written} of {len(line)} bytes written")

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _failed(self, why: str) -> None:
        if not self.failing:
            self.report(f"cannot write the counts file {self.path}: {why}; counting goes on "
                        "in memory")
        self.failing = why or "write failed"
