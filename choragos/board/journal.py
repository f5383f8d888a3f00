"""The session journal: what a caller was told, on disk before the ack leaves.

``.choragos/state/`` (0700) holds two files, both 0600:

- ``journal.log``: append-only records, one a line, each framed as
  ``<length hex> <crc32 hex> <json>``.  A record is complete only when its
  length and checksum match, so the torn tail a ``kill -9`` or a power cut
  leaves (a last record whose line never ended) is detected, dropped, and
  cut off before the next append.  Any other unreadable record is no torn
  tail but damage (a disk error, an edit): it is refused
  (:class:`JournalDamaged`) and nothing is cut; :func:`load_readable` is
  the explicit way past it.
  A record that is whole but not what choragos writes counts as damage too
  (see ``choragos.board.journalcheck``).
- ``snapshot.json``: the folded state up to a sequence number, written
  atomically (temp file, fsync, rename, directory fsync).  Compaction writes
  a snapshot and starts an empty journal; records at or below the snapshot's
  sequence number are skipped on load, so a crash between the two steps
  loses nothing and applies nothing twice.  The image holds every task of
  the directory's history, so a snapshot grows with it: a compaction waits
  until the journal holds as many bytes as the last snapshot, so what the
  snapshots write per record stays bounded by what the records write,
  however long the history (a fixed count of records would rewrite a
  10,000-task history every 200 tasks).

Folding records into an :class:`Image` is pure (:func:`fold`); the server
keeps the image current as it appends, so a compaction only dumps it.
Every file is opened without following a link, created 0600: the journal
and the directory through ``choragos.statedir``, reads and the snapshot's
temporary file through :func:`open_private`, which also refuses anything
that is not a regular file (a FIFO there would block a read for ever).

Callbacks run once records are durable (:meth:`Journal.after_sync`) run on
the fsync thread, guarded: one that raises is logged and reported through
``on_callback_error``, and the thread goes on.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import stat
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path

from choragos import onuse, statedir
from choragos.board import journalcheck
from choragos.gateway import counts

log = logging.getLogger("choragos.journal")

VERSION = 1
STATE_DIRNAME = "state"
JOURNAL = "journal.log"
SNAPSHOT = "snapshot.json"
CONVERSATIONS = "conversations"  # choragos.roles.conversations: one id per Claude Code role
COMPACT_EVERY = 2000  # records between compactions, at least


class JournalError(Exception):
    """A state that cannot be read as a journal of this version."""


class NotAFile(JournalError):
    """A state file that is not a regular file (a FIFO, a device, a directory)."""


@dataclass(frozen=True)
class Damage:
    """One unreadable record: where it starts, its line number, and why."""

    offset: int
    number: int
    why: str
    cut: bool = False  # no line end: a record a crash cut short


class JournalDamaged(JournalError):
    """Damage before the end of the journal: not a torn tail, so not cut."""

    def __init__(self, path: Path, damage: list[Damage], whole_after: int) -> None:
        self.path, self.damage, self.whole_after = path, damage, whole_after
        first = damage[0]
        more = f" and {len(damage) - 1} more" if len(damage) > 1 else ""
        super().__init__(f"{path} is damaged at byte {first.offset} (record {first.number}: "
                         f"{first.why}{more}), with {whole_after} whole record"
                         f"{'' if whole_after == 1 else 's'} after it")


def state_dir(workdir: Path) -> Path:
    return Path(workdir) / ".choragos" / STATE_DIRNAME


# -- private files ------------------------------------------------------------------

def open_private(path: Path, flags: int) -> int:
    """Open a state file without following a symlink; created 0600.  NotAFile
    for anything but a regular file (opened without blocking, so a FIFO is
    refused rather than waited on)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotAFile(f"{path} is {_file_kind(mode)}, not a regular file: choragos keeps "
                       f"its state there; remove it and start again")
    os.set_blocking(fd, True)
    return fd


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"))
    return next((name for test, name in kinds if test(mode)), "a special file")


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


def _size_of(path: Path) -> int:
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except FileNotFoundError:
        return 0


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


def _lines(data: bytes) -> Iterator[tuple[int, bytes, bool]]:
    """Each line's offset, its bytes, and whether a newline ends it."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        whole = end >= 0
        end = end if whole else len(data)
        yield start, data[start:end], whole
        start = end + 1


Line = tuple[int, int, dict]  # a record's offset, its line number, the record


def scan(data: bytes) -> tuple[list[Line], list[Damage]]:
    """Every whole record choragos could have written, and every line that
    is not one (a torn record, garbage, a forged record)."""
    records, damage = [], []
    for number, (offset, line, whole) in enumerate(_lines(data), 1):
        record = _parse(line) if whole else None
        if not whole:
            damage.append(Damage(offset, number, "it is cut short", cut=True))
        elif record is None:
            damage.append(Damage(offset, number, "its length or checksum does not match"))
        elif (why := journalcheck.record_problem(record)) is not None:
            damage.append(Damage(offset, number, why))
        else:
            records.append((offset, number, record))
    return records, damage


def torn_tail(damage: list[Damage]) -> bool:
    """Whether the damage is what a crash leaves: one record cut short at
    the end (every record ends its line, so anything else unreadable, or a
    whole record choragos would not write, is no crash's doing)."""
    return len(damage) == 1 and damage[0].cut


_HEADER = onuse.pattern(rb"[0-9a-f]{8} [0-9a-f]{8} ")  # exactly as frame() writes it


def _parse(line: bytes) -> dict | None:
    if not _HEADER().match(line):
        return None  # (int() alone would take " 65", "+65" or "6_5" for 0x65)
    length, crc, payload = int(line[:8], 16), int(line[9:17], 16), line[18:]
    if len(payload) != length or zlib.crc32(payload) != crc:
        return None
    try:
        record = json.loads(payload)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
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
    rang: dict = field(default_factory=dict)  # the budget alarms that rang, kept with the counts
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

    def copied(self) -> dict:
        """:meth:`to_dict` with what records change in place copied, so it can
        be encoded on another thread while records go on being applied.
        A task's record is replaced whole by the next one, never changed, so
        the tasks (all of the history) are copied by reference, in one step."""
        data = self.to_dict()
        data["tasks"] = dict(self.tasks)
        data["queues"] = {role: [dict(i) for i in queue] for role, queue in self.queues.items()}
        data["roles"] = {name: dict(role) for name, role in self.roles.items()}
        data["clocks"] = {task: dict(clock) for task, clock in self.clocks.items()}
        return data

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
    if "rang" in r:  # written when an alarm rings or re-arms; the 30 s flushes leave it
        image.rang = r["rang"]


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
    """Move the journal's two files, the roles' conversation ids and the
    gateway's counts, what the session spent (only them: other state may
    share the directory)."""
    ensure_private_dir(target)
    # A conversations folder left at the target belongs to a state not kept.
    shutil.rmtree(target / CONVERSATIONS, ignore_errors=True)
    for name in (JOURNAL, SNAPSHOT, CONVERSATIONS, counts.SESSION_FILE):
        with contextlib.suppress(FileNotFoundError):
            os.replace(source / name, target / name)
    fsync_dir(source)
    fsync_dir(target)


def copy_state(source: Path, target: Path) -> None:
    """Copy the journal's two files as they are (a damaged state kept aside
    before a salvage rewrites it)."""
    ensure_private_dir(target)
    for name in (JOURNAL, SNAPSHOT):
        with contextlib.suppress(FileNotFoundError):
            write_atomic(target / name, read_private(source / name))


def exists(directory: Path) -> bool:
    return (directory / JOURNAL).exists() or (directory / SNAPSHOT).exists()


def load(directory: Path) -> Image:
    """The image a state directory holds; JournalError when it cannot be
    trusted (JournalDamaged for damage before the journal's end)."""
    return _load(directory, salvage=False)[0]


def load_readable(directory: Path) -> tuple[Image, list[Damage]]:
    """The image folded from every readable record, past damage, and the
    damage skipped; the files are not changed."""
    return _load(directory, salvage=True)


def _load(directory: Path, salvage: bool) -> tuple[Image, list[Damage]]:
    image = _load_snapshot(directory / SNAPSHOT)
    path = directory / JOURNAL
    records, damage = _read(path, salvage)
    for offset, number, record in records:
        if record["kind"] == "session":
            _check_version(record.get("version"), path)
        try:
            apply(image, record)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            why = f"it cannot be applied ({exc!r})"
            raise JournalDamaged(path, [Damage(offset, number, why)], 0) from None
    why = journalcheck.image_problem(image.tasks)
    if why is not None:
        raise JournalError(f"{directory} cannot be trusted: {why}")
    _counters_past(image)
    return image, damage


def _load_snapshot(snapshot: Path) -> Image:
    try:
        data = json.loads(read_private(snapshot))
    except FileNotFoundError:
        return Image()
    except (OSError, ValueError, RecursionError) as exc:
        raise JournalError(f"{snapshot} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise JournalError(f"{snapshot} cannot be read: it holds no object")
    _check_version(data.get("version"), snapshot)
    why = journalcheck.snapshot_problem(data)
    if why is not None:
        raise JournalError(f"{snapshot} cannot be trusted: {why}")
    return Image.from_dict(data)


def _read(path: Path, salvage: bool) -> tuple[list[Line], list[Damage]]:
    try:
        data = read_private(path)
    except FileNotFoundError:
        return [], []
    records, damage = scan(data)
    if torn_tail(damage):
        return records, []  # no damage: the writer cuts it
    if not salvage:
        refuse_damage(path, records, damage)
    return records, damage


def refuse_damage(path: Path, records: list[Line], damage: list[Damage]) -> None:
    """JournalDamaged for any damage that is not a torn tail."""
    if damage and not torn_tail(damage):
        first = damage[0].offset
        raise JournalDamaged(path, damage, sum(1 for line in records if line[0] > first))


def _counters_past(image: Image) -> None:
    """Never hand out an id twice, whatever a record said the counter was."""
    numbers = [int(task_id[1:]) for task_id in image.tasks]
    image.next_number = max([image.next_number, *(n + 1 for n in numbers)])
    ids = [i["id"] for queue in image.queues.values() for i in queue]
    image.next_injection = max([image.next_injection, *(n + 1 for n in ids)])


def _check_version(version: object, where: Path) -> None:
    if version != VERSION:
        raise JournalError(f"{where} was written by a choragos with journal version "
                           f"{version!r}; this choragos reads version {VERSION} only")


def read_records(path: Path) -> list[dict]:
    """The whole records of ``path`` (every readable one, past any damage)."""
    try:
        data = read_private(path)
    except FileNotFoundError:
        return []
    return [record for _, _, record in scan(data)[0]]


def rewrite(directory: Path, image: Image) -> int:
    """``image`` as the snapshot and an empty journal after it (a compaction);
    returns the new journal's descriptor, open for appending."""
    return _rewrite(directory, image)[0]


def _rewrite(directory: Path, image: Image) -> tuple[int, int]:
    """:func:`rewrite`, and the snapshot's size in bytes."""
    snapshot = _write_snapshot(directory, image.to_dict())
    fd = _fresh_journal(directory)
    os.fsync(fd)
    os.replace(directory / (JOURNAL + ".new"), directory / JOURNAL)
    fsync_dir(directory)
    return fd, snapshot


def _write_snapshot(directory: Path, image: dict) -> int:
    """The image (as :meth:`Image.to_dict` gives it) as the snapshot; its size."""
    snapshot = json.dumps({**image, "version": VERSION}, default=str).encode()
    write_atomic(directory / SNAPSHOT, snapshot)
    return len(snapshot)


def _fresh_journal(directory: Path) -> int:
    """An empty ``journal.log.new``, open for appending, to be renamed over the journal."""
    return open_private(directory / (JOURNAL + ".new"),
                        os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)


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
        self._snapshot_size = _size_of(directory / SNAPSHOT)  # the last compaction's
        self._dirty = False
        self._appended = self._synced = self.image.seq
        self._error = ""  # why the last fsync failed; "" once one succeeds
        self._callbacks: list[tuple[int, Callable[[], None]]] = []
        self._syncer: threading.Thread | None = None
        self._batch: list[dict] | None = None  # see batch()
        self._batch_thread: int | None = None
        self._batch_after: list[Callable[[], None]] = []  # after_sync calls inside it
        # A compaction in the background (see _compact_behind): what was
        # appended since its copy of the image, and the descriptors it retired
        # (closed by the fsync thread, which may still be syncing one).
        self._behind: list[bytes] | None = None
        self._compactor: threading.Thread | None = None
        self._retired: list[int] = []
        # Told (on the fsync thread) when an after-sync callback raised.
        self.on_callback_error: Callable[[str], None] | None = None
        self._fd = self._open_clean()

    def _open_clean(self) -> int:
        """Open for append, first cutting off a torn tail so new records follow
        whole ones; JournalDamaged, with nothing cut, for damage before the end."""
        fd = statedir.append_fd(self.path)  # 0600; no link, no hard link; no FIFO
        try:
            data = read_private(self.path)
            records, damage = scan(data)
            refuse_damage(self.path, records, damage)
        except BaseException:
            os.close(fd)
            raise
        good = damage[0].offset if damage else len(data)
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
        record = {"kind": kind, "seq": 0, "t": round(time.time(), 3), **fields}
        if self._batch is not None and self._batch_thread == threading.get_ident():
            self._batch.append(record)  # numbered and written when the batch ends
            return record
        self._commit([record])
        return record

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Records this thread appends inside go to disk in one write as the
        block ends: all of them or none (OSError).  An exception inside
        drops them, and the journal is as it was.  An :meth:`after_sync`
        inside waits for the batch's records too (a line typed only once
        its record is on disk); when they could not be written it runs
        anyway, as after any failed write, and the OSError follows."""
        if self._batch is not None and self._batch_thread == threading.get_ident():
            yield  # part of the batch around it
            return
        self._batch, self._batch_thread, self._batch_after = [], threading.get_ident(), []
        try:
            yield
            pending, after = self._batch, self._batch_after
        finally:
            self._batch, self._batch_thread, self._batch_after = None, None, []
        try:
            self._commit(pending)
        except OSError:
            self._run(after)
            raise
        for callback in after:
            self.after_sync(callback)

    def _commit(self, records: list[dict]) -> None:
        if not records:
            return
        with self._lock:
            for n, record in enumerate(records, self.image.seq + 1):
                record["seq"] = n
            if self._fd < 0:
                return
            data = b"".join(frame(record) for record in records)
            self._write(data)
            if self._behind is not None:
                self._behind.append(data)
            for record in records:
                apply(self.image, record)
            self._appended = records[-1]["seq"]
            self._dirty = True
            self._since_compact += len(records)
            self._appended_more.notify()

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
        self._run(ready)

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
        if self._batch is not None and self._batch_thread == threading.get_ident():
            self._batch_after.append(callback)  # once the batch is written and synced
            return
        if self._syncer is None:
            self.sync()
            self._run([callback])
            return
        with self._lock:
            if self._synced < self._appended and self._fd >= 0:
                self._callbacks.append((self._appended, callback))
                return
        self._run([callback])

    def _sync_loop(self) -> None:
        while True:
            with self._lock:
                self._appended_more.wait_for(lambda: self._dirty or self._fd < 0)
                self._close_retired()  # this thread's last fdatasync on them is over
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
            self._run(ready)

    def _synced_to(self, target: int, error: str) -> list[Callable[[], None]]:
        self._synced, self._error = max(self._synced, target), error
        self._changed.notify_all()
        ready = [fn for seq, fn in self._callbacks if seq <= self._synced]
        self._callbacks = [(seq, fn) for seq, fn in self._callbacks if seq > self._synced]
        return ready

    def _maybe_compact(self, raising: bool) -> None:
        # Past the records' count and the last snapshot's size both: a
        # snapshot's bytes are paid for by as many bytes of records.
        if (self._since_compact < self.compact_every or self._size < self._snapshot_size
                or self._fd < 0 or self._behind is not None):
            return
        if self._syncer is not None:
            self._start_behind()
            return
        try:
            self._compact()
        except (OSError, JournalError):  # JournalError: a FIFO planted as a temporary file
            self._since_compact = 0  # try again after as many records
            if raising:
                raise

    def _start_behind(self) -> None:
        """Compact off the lock (called with it held): a 10,000-task image
        takes 60 ms to encode and 0.2 s to write and sync, and meanwhile
        appends, syncs and acks go on.  Only the copy and the swap hold it."""
        self._behind, self._since_compact = [], 0
        self._compactor = threading.Thread(target=self._compact_behind,
                                           args=(self.image.copied(),),
                                           name="journal-compact", daemon=True)
        self._compactor.start()

    def _compact_behind(self, image: dict) -> None:
        """The snapshot first (records at or below its sequence number are
        skipped on load, so the old journal stays right); then, under the
        lock, a new journal holding what was appended meanwhile, synced
        before it takes the journal's name: acked records are in the snapshot
        or in whichever journal a crash leaves."""
        fd = -1
        try:
            size = _write_snapshot(self.directory, image)
            fd = _fresh_journal(self.directory)
            with self._lock:
                if self._fd >= 0:
                    fd = self._swap(fd, size)
        except (OSError, JournalError) as exc:
            log.warning("journal compaction failed (the journal goes on): %s", exc)
        finally:
            if fd >= 0:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(self.directory / (JOURNAL + ".new"))
            with self._lock:
                self._behind = None

    def _swap(self, fd: int, snapshot_size: int) -> int:
        """The new journal takes over (-1: ``fd`` is the journal's now)."""
        rest = b"".join(self._behind or [])
        if rest and os.write(fd, rest) != len(rest):
            raise OSError(errno.ENOSPC, "short write to the new journal")
        os.fdatasync(fd)
        os.replace(self.directory / (JOURNAL + ".new"), self.path)
        self._retired.append(self._fd)
        self._fd, self._size, self._snapshot_size = fd, len(rest), snapshot_size
        try:
            fsync_dir(self.directory)
        except OSError as exc:  # the rename may not survive a power cut: either file is whole
            log.warning("the compacted journal's directory could not be synced: %s", exc)
        return -1

    def _close_retired(self) -> None:
        for fd in self._retired:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._retired = []

    def _wait_behind(self) -> None:
        compactor = self._compactor
        if compactor is not None and compactor is not threading.current_thread():
            compactor.join(timeout=60)

    def compact(self) -> None:
        self._wait_behind()
        with self._lock:
            self._compact()

    def _compact(self) -> None:
        fd, self._snapshot_size = _rewrite(self.directory, self.image)
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
        # A compaction still running gives up at its swap (the snapshot it may
        # have written is right for the journal kept); none may outlive this.
        self._wait_behind()
        with self._lock:
            self._close_retired()
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.fdatasync(fd)
            os.close(fd)
            with self._lock:
                ready = self._synced_to(self._appended, "")
            self._run(ready)

    def _run(self, callbacks: list[Callable[[], None]]) -> None:
        """Run each callback; one that raises (a tell to a role a reload just
        closed) is logged and reported, and never stops the fsync thread."""
        for callback in callbacks:
            try:
                callback()
            except Exception as exc:
                log.exception("a callback after the journal's fsync failed")
                self._report(f"{type(exc).__name__}: {exc}")

    def _report(self, error: str) -> None:
        if self.on_callback_error is None:
            return
        try:
            self.on_callback_error(error)
        except Exception:
            log.exception("reporting a failed journal callback failed too")
