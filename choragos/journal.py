"""The session journal: what a caller was told, on disk before the ack leaves.

``.choragos/state/`` (0700) holds two files, both 0600:

- ``journal.log``: append-only records, one a line, each framed as
  ``<length hex> <crc32 hex> <json>``.  A record is complete only when its
  length and checksum match, so the torn tail a ``kill -9`` or a power cut
  leaves is detected, dropped, and cut off before the next append.
- ``snapshot.json``: the folded state up to a sequence number, written
  atomically (temp file, fsync, rename, directory fsync).  Compaction writes
  a snapshot and starts an empty journal; records at or below the snapshot's
  sequence number are skipped on load, so a crash between the two steps
  loses nothing and applies nothing twice.

Folding records into an :class:`Image` is pure (:func:`fold`); the server
keeps the image current as it appends, so a compaction only dumps it.
Every file is opened without following a link, created 0600: the journal
and the directory through ``choragos.statedir``, reads and the snapshot's
temporary file through :func:`open_private`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from choragos import statedir

VERSION = 1
STATE_DIRNAME = "state"
JOURNAL = "journal.log"
SNAPSHOT = "snapshot.json"
CONVERSATIONS = "conversations"  # choragos.conversations: one id per Claude Code role
COMPACT_EVERY = 2000  # records between compactions


class JournalError(Exception):
    """A state that cannot be read as a journal of this version."""


def state_dir(workdir: Path) -> Path:
    return Path(workdir) / ".choragos" / STATE_DIRNAME


# -- private files ------------------------------------------------------------------

def open_private(path: Path, flags: int) -> int:
    """Open a state file without following a symlink; created 0600."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def ensure_private_dir(path: Path) -> None:
    statedir.make_dir(path)  # 0700, never through a link
    os.chmod(path, 0o700, follow_symlinks=False)


def read_private(path: Path) -> bytes:
    fd = open_private(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file, fsync, rename over ``path``, fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, data)
        os.fsync(fd)
    except OSError:
        os.unlink(tmp)
        raise
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- framing ------------------------------------------------------------------------

def frame(record: dict) -> bytes:
    payload = json.dumps(record, ensure_ascii=False, separators=(",", ":"),
                         default=str).encode()
    return b"%08x %08x " % (len(payload), zlib.crc32(payload)) + payload + b"\n"


def unframe(data: bytes) -> tuple[list[dict], int]:
    """The whole records in ``data`` and the offset just past the last of them."""
    records, good = [], 0
    while good < len(data):
        end = data.find(b"\n", good)
        record = _parse(data[good:end]) if end >= 0 else None
        if record is None:
            break
        records.append(record)
        good = end + 1
    return records, good


def _parse(line: bytes) -> dict | None:
    try:
        length, crc, payload = int(line[:8], 16), int(line[9:17], 16), line[18:]
    except ValueError:
        return None
    if line[8:9] != b" " or line[17:18] != b" " or len(payload) != length:
        return None
    if zlib.crc32(payload) != crc:
        return None
    try:
        record = json.loads(payload)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


# -- the folded state ------------------------------------------------------------------

@dataclass
class Image:
    """Everything a resumed session needs, folded from the records."""

    version: int = VERSION
    config: str = ""
    pid: int | None = None
    started: float = 0.0
    stopped: bool = True   # the last run ended with a clean stop
    last_t: float = 0.0
    seq: int = 0
    runs: int = 0
    tasks: dict[str, dict] = field(default_factory=dict)
    next_number: int = 1
    queues: dict[str, list[dict]] = field(default_factory=dict)
    next_injection: int = 1
    roles: dict[str, dict] = field(default_factory=dict)
    clocks: dict[str, dict] = field(default_factory=dict)
    layout: dict | None = None
    tokens: dict = field(default_factory=dict)
    handoff: dict | None = None

    @property
    def empty(self) -> bool:
        return not self.tasks and not any(self.queues.values())

    def clock_left(self, task_id: str) -> float:
        """Seconds left on a clock when the journal ends (paused time not counted)."""
        clock = self.clocks[task_id]
        since = clock.get("since")
        ran = max(0.0, self.last_t - since) if since is not None else 0.0
        return max(0.0, clock["left"] - ran)

    def to_dict(self) -> dict:
        """The fields as they are, for ``json.dumps``: not a deep copy, which
        (``asdict``) cost a compaction four times the dump at 10,000 tasks,
        with the journal's lock held."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict) -> Image:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def fold(records: Iterable[dict], image: Image | None = None) -> Image:
    """Apply ``records`` (in order) to ``image``; pure but for mutating ``image``."""
    image = image if image is not None else Image()
    for record in records:
        apply(image, record)
    return image


def apply(image: Image, record: dict) -> None:
    seq = record.get("seq", 0)
    if seq and seq <= image.seq:
        return  # already in the snapshot
    image.seq = max(image.seq, seq)
    image.last_t = max(image.last_t, record.get("t", 0.0))
    handler = _APPLY.get(record.get("kind", ""))
    if handler is not None:
        handler(image, record)


def _session(image: Image, r: dict) -> None:
    image.version, image.config, image.pid = r["version"], r["config"], r["pid"]
    image.started, image.stopped = r["t"], False
    image.runs += 1


def _stop(image: Image, r: dict) -> None:
    image.stopped = True


def _task(image: Image, r: dict) -> None:
    task = r["task"]
    image.tasks[task["id"]] = task
    image.next_number = max(image.next_number, int(task["id"][1:]) + 1)


def _forget(image: Image, r: dict) -> None:
    for task_id in r["ids"]:
        image.tasks.pop(task_id, None)
    image.next_number = r["next_number"]


def _enqueue(image: Image, r: dict) -> None:
    injection = {k: r[k] for k in ("id", "role", "text", "what", "task")}
    queue = image.queues.setdefault(r["role"], [])
    queue.insert(0, injection) if r.get("front") else queue.append(injection)
    image.next_injection = max(image.next_injection, r["id"] + 1)


def _inflight(image: Image, r: dict) -> None:
    for injection in image.queues.get(r["role"], []):
        if injection["id"] == r["id"]:
            injection["sent"] = True  # it may have reached the agent


def _injected(image: Image, r: dict) -> None:
    queue = image.queues.get(r["role"], [])
    if r.get("requeued"):
        return  # it stays at the front, to be typed again once the role is back
    image.queues[r["role"]] = [i for i in queue if i["id"] != r["id"]]


def _drop_queue(image: Image, r: dict) -> None:
    image.queues.pop(r["role"], None)


def _role(image: Image, r: dict) -> None:
    role = image.roles.setdefault(r["role"], {"restarts_used": 0, "restarts_total": 0,
                                              "paused": False})
    was_paused = role["paused"]
    role.update({k: r[k] for k in ("restarts_used", "restarts_total", "paused") if k in r})
    if role["paused"] != was_paused:
        for clock in image.clocks.values():
            if clock["role"] == r["role"]:
                _pause_clock(clock, r["t"]) if role["paused"] else _run_clock(clock, r["t"])


def _pause_clock(clock: dict, now: float) -> None:
    if clock["since"] is not None:
        clock["left"] = max(0.0, clock["left"] - (now - clock["since"]))
        clock["since"] = None


def _run_clock(clock: dict, now: float) -> None:
    if clock["since"] is None:
        clock["since"] = now


def _clock(image: Image, r: dict) -> None:
    if r["action"] == "stop":
        image.clocks.pop(r["task"], None)
        return
    paused = image.roles.get(r["role"], {}).get("paused", False)
    image.clocks[r["task"]] = {"role": r["role"], "seconds": r["seconds"], "left": r["left"],
                               "since": None if paused else r["t"]}


def _layout(image: Image, r: dict) -> None:
    image.layout = r["layout"]


def _tokens(image: Image, r: dict) -> None:
    image.tokens = r["totals"]


def _handoff(image: Image, r: dict) -> None:
    fresh = {k: v for k, v in r.items() if k not in ("kind", "seq")}
    image.handoff = None if r.get("done") else fresh


_APPLY = {"session": _session, "stop": _stop, "task": _task, "forget": _forget,
          "enqueue": _enqueue,
          "inflight": _inflight, "injected": _injected, "drop queue": _drop_queue,
          "role": _role, "clock": _clock, "layout": _layout, "tokens": _tokens,
          "handoff": _handoff}


# -- reading and writing -----------------------------------------------------------------

def move_state(source: Path, target: Path) -> None:
    """Move the journal's two files and the roles' conversation ids (only them:
    other state may share the directory)."""
    ensure_private_dir(target)
    # A conversations folder left at the target belongs to a state not kept.
    shutil.rmtree(target / CONVERSATIONS, ignore_errors=True)
    for name in (JOURNAL, SNAPSHOT, CONVERSATIONS):
        with contextlib.suppress(FileNotFoundError):
            os.replace(source / name, target / name)
    fsync_dir(source)
    fsync_dir(target)


def exists(directory: Path) -> bool:
    return (directory / JOURNAL).exists() or (directory / SNAPSHOT).exists()


def load(directory: Path) -> Image:
    """The image a state directory holds; JournalError when it cannot be trusted."""
    image = Image()
    snapshot = directory / SNAPSHOT
    if snapshot.exists():
        try:
            data = json.loads(read_private(snapshot))
        except (OSError, ValueError) as exc:
            raise JournalError(f"{snapshot} cannot be read: {exc}") from None
        _check_version(data.get("version"), snapshot)
        image = Image.from_dict(data)
    records = read_records(directory / JOURNAL)
    for record in records:
        if record.get("kind") == "session":
            _check_version(record.get("version"), directory / JOURNAL)
    return fold(records, image)


def _check_version(version: object, where: Path) -> None:
    if version != VERSION:
        raise JournalError(f"{where} was written by a choragos with journal version "
                           f"{version!r}; this choragos reads version {VERSION} only")


def read_records(path: Path) -> list[dict]:
    try:
        data = read_private(path)
    except FileNotFoundError:
        return []
    return unframe(data)[0]


class Journal:
    """The server's writer: append, make durable, compact now and then.

    :meth:`sync` fsyncs on the caller's thread.  After :meth:`start`, a
    background thread does it instead, for every record appended so far
    at once (group commit): a caller that must not answer before its
    records are on disk waits in :meth:`wait_synced`, and
    :meth:`after_sync` runs a callback once they are.
    """

    def __init__(self, directory: Path, image: Image | None = None,
                 compact_every: int = COMPACT_EVERY) -> None:
        ensure_private_dir(directory)
        self.directory = directory
        self.path = directory / JOURNAL
        self.image = image if image is not None else Image()
        self.compact_every = compact_every
        self._lock = threading.Lock()
        self._appended_more = threading.Condition(self._lock)  # wakes the syncer
        self._changed = threading.Condition(self._lock)        # wakes the waiters
        self._since_compact = 0
        self._dirty = False
        self._appended = self._synced = self.image.seq
        self._error = ""  # why the last fsync failed; "" once one succeeds
        self._callbacks: list[tuple[int, Callable[[], None]]] = []
        self._syncer: threading.Thread | None = None
        self._fd = self._open_clean()

    def _open_clean(self) -> int:
        """Open for append, first cutting off a torn tail so new records follow whole ones."""
        fd = statedir.append_fd(self.path)  # 0600; no link, no hard link
        data = read_private(self.path)
        records, good = unframe(data)
        if good < len(data):
            os.ftruncate(fd, good)
            os.fsync(fd)
        self._since_compact = len(records)
        self._size = good
        return fd

    def start(self) -> None:
        """From now on, fsync in the background (group commit)."""
        self._syncer = threading.Thread(target=self._sync_loop, name="journal-sync",
                                        daemon=True)
        self._syncer.start()

    def append(self, kind: str, **fields: object) -> dict:
        with self._lock:
            record = {"kind": kind, "seq": self.image.seq + 1,
                      "t": round(time.time(), 3), **fields}
            if self._fd < 0:
                return record
            self._write(frame(record))
            apply(self.image, record)
            self._appended = record["seq"]
            self._dirty = True
            self._since_compact += 1
            self._appended_more.notify()
        return record

    def _write(self, data: bytes) -> None:
        """Append whole or not at all: a failed write (a full disk) is cut off again,
        so the records appended after it are not hidden behind a torn one."""
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, "short write to the journal")
        except OSError:
            os.ftruncate(self._fd, self._size)
            raise
        self._size += len(data)

    # -- durability ------------------------------------------------------------------

    def sync(self) -> None:
        """Make every appended record durable now, on this thread."""
        with self._lock:
            target = self._appended
            if self._dirty and self._fd >= 0:
                os.fdatasync(self._fd)
                self._dirty = False
            ready = self._synced_to(target, "")
            self._maybe_compact(raising=True)
        _run(ready)

    def wait_synced(self, timeout: float = 5.0) -> str:
        """Block until what was appended so far is on disk; why not, or ""."""
        if self._syncer is None:
            try:
                self.sync()
            except OSError as exc:
                return exc.strerror or str(exc)
            return ""
        with self._lock:
            target = self._appended
            if not self._changed.wait_for(lambda: self._synced >= target or self._fd < 0,
                                          timeout):
                return f"the journal was not on disk within {timeout:g}s"
            return self._error

    def after_sync(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once what was appended so far is on disk (at once if it is)."""
        if self._syncer is None:
            self.sync()
            callback()
            return
        with self._lock:
            if self._synced < self._appended and self._fd >= 0:
                self._callbacks.append((self._appended, callback))
                return
        callback()

    def _sync_loop(self) -> None:
        while True:
            with self._lock:
                self._appended_more.wait_for(lambda: self._dirty or self._fd < 0)
                if self._fd < 0:
                    return
                fd, target, self._dirty = self._fd, self._appended, False
            error = ""
            try:
                os.fdatasync(fd)  # outside the lock: appends go on meanwhile
            except OSError as exc:
                error = exc.strerror or str(exc)
            with self._lock:
                ready = self._synced_to(target, error)
                self._maybe_compact(raising=False)
            _run(ready)

    def _synced_to(self, target: int, error: str) -> list[Callable[[], None]]:
        self._synced, self._error = max(self._synced, target), error
        self._changed.notify_all()
        ready = [fn for seq, fn in self._callbacks if seq <= self._synced]
        self._callbacks = [(seq, fn) for seq, fn in self._callbacks if seq > self._synced]
        return ready

    def _maybe_compact(self, raising: bool) -> None:
        if self._since_compact < self.compact_every or self._fd < 0:
            return
        try:
            self._compact()
        except OSError:
            self._since_compact = 0  # try again after as many records
            if raising:
                raise

    def compact(self) -> None:
        with self._lock:
            self._compact()

    def _compact(self) -> None:
        write_atomic(self.directory / SNAPSHOT,
                     json.dumps({**self.image.to_dict(), "version": VERSION},
                                default=str).encode())
        empty = self.path.with_name(JOURNAL + ".new")
        fd = open_private(empty, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
        os.fsync(fd)
        os.replace(empty, self.path)
        fsync_dir(self.directory)
        os.close(self._fd)
        self._fd = fd
        self._since_compact = 0
        self._size = 0

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, -1
            self._appended_more.notify_all()
            self._changed.notify_all()
        if self._syncer is not None:
            self._syncer.join(timeout=10)
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.fdatasync(fd)
            os.close(fd)
            with self._lock:
                ready = self._synced_to(self._appended, "")
            _run(ready)


def _run(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        callback()
