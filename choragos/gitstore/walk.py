"""Walk a git work tree as ``git add -A`` sees it, hashing only what changed.

A walk yields the files a checkpoint holds: every tracked file, plus every
untracked one that no ignore rule excludes, with git's modes (100644, 100755,
120000 for symlinks, 160000 for nested repositories, which are never entered).
Entries named ``.choragos`` (choragos's runtime state) are always left out.

What makes repeated walks cheap is the private index, a cache of the last
walk kept beside the repository's own index but never mixed with it:

* per file, its ``lstat`` data and blob id, so an unchanged file is not read;
* per directory, its own ``lstat`` data, its listing and which entries the
  ignore rules exclude, so an unchanged directory is neither listed nor
  matched against patterns again (git's "untracked cache" does the same);
* per directory, the tree id it had, so unchanged subtrees are not rebuilt.

Entries modified at or after the walk began are "racy" (a later write in the
same timestamp tick would leave their ``lstat`` data unchanged), so they are
cached without their ``lstat`` data and read again next time, as git does.

A walk told what changed since the cache's own walk began (a watch's
account, ``dirty``) neither lists nor ``lstat``s a directory that had no
event, and in one that had looks only at the entries the events named:
the cost follows what changed, not the size of the directories it
changed in.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import operator
import os
import struct
import threading
from bisect import bisect_left
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter

from choragos.gitstore.ignore import RuleStack
from choragos.gitstore.objects import ObjectWriter

MODE_TREE = 0o40000
MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODE_GITLINK = 0o160000

# A directory listing's entry kinds, one byte each: lower case when the
# ignore rules keep the entry, upper case when they exclude it.
_FILE, _LINK, _DIR = ord("f"), ord("l"), ord("d")
_KEPT = 0x20  # the bit that makes an ASCII letter lower case
_SKIP = ord("x")  # never checkpointed: .choragos anywhere, .git at the root
_NEVER = b".choragos"
# bytes.translate tables picking kept files and symlinks, or everything else
# worth a look (directories, excluded entries), out of a kinds string.
_FILE_MASK = bytes(1 if k in (_FILE, _LINK) else 0 for k in range(256))
_OTHER_MASK = bytes(0 if k in (_FILE, _LINK, _SKIP) else 1 for k in range(256))
_DIR_MASK = bytes(1 if k | _KEPT == _DIR else 0 for k in range(256))
_KINDS = {0o100000: _FILE, 0o040000: _DIR, 0o120000: _LINK}  # by the mode's file type
_RELIST = object()  # a directory the watch's account cannot patch: list it
_stat_key = attrgetter("st_mtime_ns", "st_ctime_ns", "st_size", "st_ino", "st_mode")

_CACHE_MAGIC = b"choragos private index 3\n"
_SEED_MIN = 64  # fewer misses than this are cheaper to hash than to seed
_THREAD_MIN_SIZE = 256 << 10  # smaller files cost more to hand to a thread than to hash

# Cached directory record, a plain tuple so marshal can store it:
# (dir stat or None, rules key, object id or None, names, kinds, file stat
#  keys, object ids, modes) -- the last three aligned with ``names``.
Record = tuple


@dataclass
class ScanStats:
    """What one walk did; tests and the benchmark read these."""

    files: int = 0
    dirs: int = 0
    listed: int = 0  # directories whose listing was read, not cached
    hashed: int = 0  # files whose content was read
    hashed_bytes: int = 0
    seeded: int = 0  # files whose id came from the repository's own index
    written: int = 0  # objects written to the repository
    looked: int = 0  # entries looked at because a watch named them (no listing)
    walked: bool = True  # False: nothing changed (a watch said so), the last walk's tree reused
    skipped: list[str] = field(default_factory=list)  # unreadable, so left out


class _Node:
    """One directory of a walk in progress."""

    __slots__ = ("ids", "keys", "kinds", "modes", "names", "old", "parent", "rel", "rules_key",
                 "slot", "stat")

    def __init__(self, rel: bytes, names: tuple, kinds: bytes, dstat: tuple | None,
                 rules_key: bytes, old: Record | None) -> None:
        self.rel, self.names, self.kinds, self.stat = rel, names, kinds, dstat
        self.rules_key, self.old = rules_key, old
        count = len(names)
        # Tuples shared with the cached record until the first change: an
        # unchanged directory then costs no copies at all.
        self.keys: list | tuple = [None] * count
        self.ids: list | tuple = [None] * count
        self.modes: list | tuple = [0] * count
        self.parent: _Node | None = None
        self.slot = 0

    def share(self, record: Record) -> None:
        """Start from a cached record's per-entry data (same listing)."""
        self.keys, self.ids, self.modes = record[5], record[6], record[7]

    def put(self, i: int, key: tuple | None, oid: bytes | None, mode: int) -> None:
        if isinstance(self.keys, tuple):
            self.keys, self.ids, self.modes = list(self.keys), list(self.ids), list(self.modes)
        self.keys[i], self.ids[i], self.modes[i] = key, oid, mode  # type: ignore[index]

    def clear(self, i: int) -> None:
        if self.ids[i] is not None or self.keys[i] is not None or self.modes[i]:
            self.put(i, None, None, 0)

    def record(self, oid: bytes | None) -> Record:
        return (self.stat, self.rules_key, oid, self.names, self.kinds, tuple(self.keys),
                tuple(self.ids), tuple(self.modes))


@dataclass
class Scan:
    """The result of a walk: the root tree id and what it holds."""

    tree: bytes
    stats: ScanStats
    records: dict[bytes, Record]
    changed: bool  # records differ from the cache the walk started from
    previous: Records  # that cache
    # The nested repositories the walk met and did not enter ("a/b/"), a
    # submodule not cloned included: the rollback's plan looks inside them.
    repos: list[bytes] = field(default_factory=list)

    def files(self) -> dict[bytes, tuple[int, bytes]]:
        """Every checkpointed path (files, symlinks, gitlinks) -> (mode, id)."""
        out: dict[bytes, tuple[int, bytes]] = {}
        for rel, record in self.records.items():
            for name, oid, mode in zip(record[3], record[6], record[7], strict=True):
                if oid is not None and mode != MODE_TREE:
                    out[rel + name] = (mode, oid)
        return out


# ---- the repository's own index (read only) ---------------------------------------

_ENTRY = struct.Struct(">10I20sH")
_EXTENDED = 0x4000
_INTENT_TO_ADD = 0x2000  # in the extended flags
_SKIP_WORKTREE = 0x4000


@dataclass
class UserIndex:
    """What ``.git/index`` says is tracked, and the stat data git recorded."""

    paths: list[bytes]  # sorted, as the index stores them
    entries: dict[bytes, tuple]  # path -> (mtime_ns, ctime_ns, size, ino, mode, id)
    mtime_ns: int

    def tracks(self, path: bytes) -> bool:
        i = bisect_left(self.paths, path)
        return i < len(self.paths) and self.paths[i] == path

    def tracks_below(self, path: bytes) -> bool:
        prefix = path + b"/"
        i = bisect_left(self.paths, prefix)
        return i < len(self.paths) and self.paths[i].startswith(prefix)

    def gitlink(self, path: bytes) -> bytes | None:
        entry = self.entries.get(path)
        return entry[5] if entry is not None and entry[4] == MODE_GITLINK else None


def read_user_index(path: str | bytes) -> UserIndex:
    """Parse a git index (versions 2 to 4); an absent file is an empty index."""
    try:
        with open(path, "rb") as f:
            data = f.read()
            mtime_ns = os.fstat(f.fileno()).st_mtime_ns
    except FileNotFoundError:
        return UserIndex([], {}, 0)
    if data[:4] != b"DIRC":
        raise ValueError("not a git index file")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(f"unsupported git index version {version}")
    paths: list[bytes] = []
    entries: dict[bytes, tuple] = {}
    pos, previous = 12, b""
    for _ in range(count):
        pos, previous = _read_entry(data, pos, version, previous, entries)
        paths.append(previous)
    return UserIndex(paths, entries, mtime_ns)


def _read_entry(data: bytes, pos: int, version: int, previous: bytes,
                entries: dict[bytes, tuple]) -> tuple[int, bytes]:
    (cs, cns, ms, mns, _dev, ino, mode, _uid, _gid, size, oid, flags) = \
        _ENTRY.unpack_from(data, pos)
    start = pos + _ENTRY.size
    extended = struct.unpack_from(">H", data, start)[0] if flags & _EXTENDED else 0
    start += 2 if flags & _EXTENDED else 0
    if version == 4:
        strip, start = _varint(data, start)
        end = data.index(b"\0", start)
        name = previous[:len(previous) - strip] + data[start:end]
        pos = end + 1
    else:
        length = flags & 0xFFF
        end = data.index(b"\0", start) if length == 0xFFF else start + length
        name = data[start:end]
        pos += (end - pos + 8) & ~7
    # Only unmerged-free, present, fully added entries may stand in for a
    # hash of the file; conflicted or placeholder entries stay "tracked".
    if not (flags & 0x3000 or extended & (_INTENT_TO_ADD | _SKIP_WORKTREE)):
        entries[name] = (ms * 1_000_000_000 + mns, cs * 1_000_000_000 + cns, size, ino,
                         mode, oid)
    return pos, name


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    byte = data[pos]
    value = byte & 0x7F
    while byte & 0x80:
        pos += 1
        byte = data[pos]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos + 1


# ---- the private index --------------------------------------------------------------

class Records:
    """Directory records by path, kept in their stored (marshalled) form and
    decoded on first use.  Saving reuses the stored form of every record that
    did not change, so a small change costs a small write; a changed record
    is encoded only when it is saved (a store that keeps its walk in memory
    often is not)."""

    def __init__(self, blobs: dict[bytes, bytes] | None = None,
                 decoded: dict[bytes, Record] | None = None) -> None:
        # Every record is in one or both: a record read from disk has its
        # stored form, a newer walk's its decoded one until it is saved.
        self._blobs = blobs or {}
        self._decoded = decoded or {}

    def get(self, rel: bytes) -> Record | None:
        record = self._decoded.get(rel)
        if record is None and rel in self._blobs:
            record = self._decoded[rel] = marshal.loads(self._blobs[rel])
        return record

    def replaced_by(self, records: dict[bytes, Record]) -> Records:
        """The records of a newer walk, sharing stored forms where equal."""
        blobs = {}
        for rel, record in records.items():
            # Equal records share most of their objects, so == is cheap here.
            if rel in self._blobs and self._decoded.get(rel) == record:
                blobs[rel] = self._blobs[rel]
        return Records(blobs, dict(records))

    def stored(self) -> dict[bytes, bytes]:
        blobs = self._blobs
        for rel in self._decoded.keys() - blobs.keys():
            blobs[rel] = marshal.dumps(self._decoded[rel])
        return blobs


@dataclass
class Cache:
    """The last walk: the checkpoint it produced, and its directory records."""

    commit: bytes = b""  # hex id of a checkpoint commit whose tree is ``tree``
    tree: bytes = b""  # binary root tree id of these records
    records: Records = field(default_factory=Records)


def load_cache(path: str) -> Cache:
    """Read the private index; anything unreadable simply means "no cache"."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return Cache()
    body = data[len(_CACHE_MAGIC) + 20:]
    digest = data[len(_CACHE_MAGIC):len(_CACHE_MAGIC) + 20]
    if not data.startswith(_CACHE_MAGIC) or hashlib.sha1(body).digest() != digest:
        return Cache()
    try:
        commit, tree, blobs = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return Cache()
    return Cache(commit, tree, Records(blobs))


def save_cache(path: str, cache: Cache) -> None:
    """Write the private index atomically (a reader sees old or new, whole)."""
    # marshal: fast, and only ever reads what this module wrote -- a
    # checksum guards against torn or foreign files.
    body = marshal.dumps((cache.commit, cache.tree, cache.records.stored()))
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        with open(fd, "wb") as f:
            f.write(_CACHE_MAGIC + hashlib.sha1(body).digest() + body)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # a full disk: no torn temporary left
            os.unlink(tmp)
        raise


# ---- the walk -----------------------------------------------------------------------

class Walker:
    """One walk of a work tree; ``run`` returns the :class:`Scan`."""

    def __init__(self, root: str, rules: RuleStack, writer: ObjectWriter, *,
                 cache: Records, racy_from_ns: int,
                 user_index: Callable[[], UserIndex], write: bool = True,
                 before_listing: Callable[[bytes], None] | None = None,
                 dirty: dict[bytes, set[bytes] | None] | None = None) -> None:
        self._root = os.fsencode(root).rstrip(b"/") + b"/"
        self._rules = rules
        self._writer = writer
        self._old = cache
        self._racy = racy_from_ns
        self._load_index = user_index
        self._index: UserIndex | None = None  # read on first need (memoised by the caller)
        self._write = write
        # Called with each directory's path before it is looked at (a watch).
        self._before_listing = before_listing or _nothing
        # What changed since ``cache``'s walk began, by directory (None: not known).
        self._dirty = dirty
        self._nodes: list[_Node] = []
        self._repos: dict[bytes, Record] = {}  # nested repositories' records
        # (directory, entry slot, absolute path, lstat key) of files to read
        self._pending: list[tuple[_Node, int, bytes, tuple]] = []
        self.stats = ScanStats()
        # Whether the records differ from the cache in more than object ids
        # (which the root tree id already fingerprints).
        self.changed = False

    def run(self) -> Scan:
        self._visit(b"", self._rules)
        self._hash_pending()
        records = {node.rel: node.record(self._build(node)) for node in self._nodes}
        records.update(self._repos)
        tree = records[b""][2] or self._writer.put_tree(b"", write=self._write)
        self._writer.finish()
        self.stats.written = self._writer.written
        return Scan(tree, self.stats, records, self.changed, self._old, sorted(self._repos))

    # -- directories

    def _visit(self, rel: bytes, rules: RuleStack | None,
               parent: _Node | None = None, slot: int = 0) -> _Node | None:
        """Walk directory ``rel`` ("" or "a/b/"); ``rules`` None keeps only
        tracked entries (an excluded directory holding tracked files)."""
        absdir = self._root + rel
        self._before_listing(rel)
        if self._dirty is not None:
            node = self._visit_known(rel, absdir, rules, parent, slot)
            if node is not _RELIST:
                return node  # type: ignore[return-value]
        try:
            st = os.lstat(absdir)
            dstat = (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            old = self._old.get(rel)
            fresh = old is None or old[0] != dstat
            names, kinds = _listing(absdir) if fresh else (old[3], old[4])
        except OSError:
            # Gone or replaced since its parent was listed, or unreadable
            # (git skips those too): leave it out, list the parent next time.
            self._lost(rel, parent, slot)
            return None
        if fresh:
            self.stats.listed += 1
            self.changed = True
        if rel and (b".git" in names or self._is_gitlink(rel)):
            self._gitlink(rel, parent, slot)
            # Remembered, so an unchanged nested repository is not listed again.
            blank = (None,) * len(names)
            self._repos[rel] = (self._stable(dstat), b"", None, names, kinds, blank, blank,
                                (0,) * len(names))
            return None
        rules = self._rules_here(rel, absdir, names, kinds, rules)
        key = rules.key if rules is not None else b""
        same = None if fresh or old[1] != key else old
        if same is None:
            kinds = self._classify(rel, names, kinds, rules)
            self.changed = True
        node = _Node(rel, names, kinds, self._stable(dstat), key, old)
        node.parent, node.slot = parent, slot
        self._children(node, absdir, rules, same)
        self._nodes.append(node)
        self.stats.dirs += 1
        return node

    def _visit_known(self, rel: bytes, absdir: bytes, rules: RuleStack | None,
                     parent: _Node | None, slot: int) -> _Node | object | None:
        """Directory ``rel`` from its cached record and the entries the watch
        named in it; ``_RELIST`` when that cannot be trusted (no record, the
        directory itself changed, its ignore rules or a nested repository may
        have)."""
        old = self._old.get(rel)
        changed = self._dirty.get(rel, ())  # type: ignore[union-attr]
        # (A racy directory stat, None in the record, does not matter here:
        # every change since that walk began is an event.)
        if (old is None or changed is None or b".gitignore" in changed
                or (rel and b".git" in changed)):
            return _RELIST
        rules = self._rules_here(rel, absdir, old[3], old[4], rules)
        key = rules.key if rules is not None else b""
        if key != old[1]:
            return _RELIST  # a parent's rules changed: classify again
        if changed:
            try:
                st = os.lstat(absdir)
            except OSError:
                return _RELIST
            dstat = self._stable((st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
            node, looks = self._patched(rel, absdir, old, changed, rules, dstat)
            # Entries that came and went between two walks (an agent's
            # scratch directories) change nothing: the record, whose own
            # directory stat is then older than the directory's, only makes
            # a walk without the watch list it again, so it is not saved.
            if node.names != old[3] or node.kinds != old[4]:
                self.changed = True
        else:
            node, looks = _Node(rel, old[3], old[4], old[0], key, old), {}
            node.share(old)
        node.rules_key, node.parent, node.slot = key, parent, slot
        self._known_children(node, absdir, rules, looks)
        self._nodes.append(node)
        self.stats.dirs += 1
        return node

    def _patched(self, rel: bytes, absdir: bytes, old: Record, changed: set[bytes],
                 rules: RuleStack | None, dstat: tuple | None) -> tuple[_Node, dict]:
        """A node whose listing is the cached one with the named entries
        looked at again: (node, their lstat results by name, None when gone)."""
        names, kinds = list(old[3]), bytearray(old[4])
        keys, ids, modes = list(old[5]), list(old[6]), list(old[7])
        looks: dict[bytes, os.stat_result | None] = {}
        for name in changed:
            try:
                st: os.stat_result | None = os.lstat(absdir + name)
            except OSError:
                st = None
            kind = _kind_of(st)
            i = bisect_left(names, name)
            present = i < len(names) and names[i] == name
            looks[name] = st
            self.stats.looked += 1
            if kind is None:
                if present:
                    del names[i], kinds[i], keys[i], ids[i], modes[i]
                continue
            if present and kinds[i] | _KEPT == kind:
                continue  # same kind, same verdict: its data is looked at below
            verdict = self._classify(rel, (name,), bytes((kind,)), rules)[0]
            if present:
                kinds[i], keys[i], ids[i], modes[i] = verdict, None, None, 0
            else:
                names.insert(i, name)
                kinds.insert(i, verdict)
                keys.insert(i, None)
                ids.insert(i, None)
                modes.insert(i, 0)
        node = _Node(rel, tuple(names), bytes(kinds), dstat, old[1], old)
        node.keys, node.ids, node.modes = keys, ids, modes
        return node, looks

    def _known_children(self, node: _Node, absdir: bytes, rules: RuleStack | None,
                        looks: dict[bytes, os.stat_result | None]) -> None:
        """The entries of a directory known from the cache: the named ones
        looked at, every subdirectory visited, the rest taken as cached (a
        file cached without stat data -- racy, or unreadable -- is looked at
        again)."""
        names, kinds, count = node.names, node.kinds, len(node.names)
        files = kinds.translate(_FILE_MASK)
        # Without a loop over every entry in Python: the named entries'
        # slots, and the (few) entries cached without stat data.
        named = {i for i in map(names.index, filter(names.__contains__, looks))}
        unknown = compress(range(count), map(operator.not_, node.keys))
        again = sorted(named.union(i for i in unknown if files[i]))
        self.stats.files += files.count(1)
        for i in again:
            if files[i]:
                self.stats.files -= 1  # counted again by _file
                self._file(node, i, absdir, looks.get(names[i]), (node.keys[i], node.ids[i]))
            elif i in named and kinds[i] | _KEPT != _DIR and kinds[i] != _SKIP:
                self._other(node, i, absdir, rules, (node.keys[i], node.ids[i]))
        for i in compress(range(count), kinds.translate(_DIR_MASK)):
            self._other(node, i, absdir, rules, (node.keys[i], node.ids[i]))

    def _lost(self, rel: bytes, parent: _Node | None, slot: int) -> None:
        if parent is None:
            raise OSError(f"cannot read the work tree at {os.fsdecode(self._root)}")
        parent.clear(slot)
        parent.stat, self.changed = None, True
        if os.path.isdir(self._root + rel):
            self.stats.skipped.append(os.fsdecode(rel))

    def _rules_here(self, rel: bytes, absdir: bytes, names: tuple, kinds: bytes,
                    rules: RuleStack | None) -> RuleStack | None:
        if rules is None:
            return None
        i = bisect_left(names, b".gitignore")
        # git does not follow a symlinked .gitignore, and neither do we.
        if i == len(names) or names[i] != b".gitignore" or kinds[i] | _KEPT != _FILE:
            return rules
        try:
            with open(absdir + b".gitignore", "rb") as f:
                return rules.push(rel, f.read())
        except OSError:
            return rules

    def _classify(self, rel: bytes, names: tuple, kinds: bytes,
                  rules: RuleStack | None) -> bytes:
        out = bytearray(kinds)
        for i, name in enumerate(names):
            kind = out[i] | _KEPT
            if name == _NEVER or (not rel and name == b".git"):
                out[i] = _SKIP
            elif rules is None or rules.excluded(rel + name, name, kind == _DIR):
                out[i] = kind & ~_KEPT
            else:
                out[i] = kind
        return bytes(out)

    def _children(self, node: _Node, absdir: bytes, rules: RuleStack | None,
                  same: Record | None) -> None:
        """Visit every entry of ``node``.  ``same`` is its cached record when
        listing and classification are unchanged: then per-entry data lines up
        by position, and an unchanged file costs one ``lstat``."""
        if same is None:
            self._children_by_name(node, absdir, rules)
            return
        node.share(same)
        self._files_unchanged(node, absdir, same)
        for i in compress(range(len(node.names)), node.kinds.translate(_OTHER_MASK)):
            self._other(node, i, absdir, rules, (node.keys[i], node.ids[i]))

    def _files_unchanged(self, node: _Node, absdir: bytes, same: Record) -> None:
        """Compare the files' stat data with the cache, a directory at a time.

        The common case -- nothing changed -- runs entirely in C: the stat
        calls, the key extraction and the comparison of the two lists.
        """
        mask = node.kinds.translate(_FILE_MASK)
        slots = list(compress(range(len(node.names)), mask))
        old = list(compress(same[5], mask))
        try:
            stats = list(map(os.lstat, map(absdir.__add__, compress(node.names, mask))))
        except OSError:  # one vanished: look at each on its own
            for i, cached in zip(slots, old, strict=True):
                self._file(node, i, absdir, None, (cached, node.ids[i]))
            return
        now = list(map(_stat_key, stats))
        if now == old:
            self.stats.files += len(slots)
            return
        for i, st, key, cached in zip(slots, stats, now, old, strict=True):
            if key != cached:
                self._file(node, i, absdir, st, (cached, node.ids[i]))
            else:
                self.stats.files += 1

    def _children_by_name(self, node: _Node, absdir: bytes, rules: RuleStack | None) -> None:
        previous = _by_name(node.old)
        self._files_by_name(node, absdir, previous)
        for i in compress(range(len(node.names)), node.kinds.translate(_OTHER_MASK)):
            self._other(node, i, absdir, rules, previous.get(node.names[i]))

    def _files_by_name(self, node: _Node, absdir: bytes, previous: dict[bytes, tuple]) -> None:
        """A changed directory's files, matched with the cache by name.

        A directory gains an entry, and every file in it is looked at again:
        one that kept its cached stat data takes its cached id and mode
        without a call of its own (the stat calls run in C), so a directory
        of many files costs little more than its listing when one changed.
        """
        mask = node.kinds.translate(_FILE_MASK)
        slots = list(compress(range(len(node.names)), mask))
        names = list(compress(node.names, mask))
        olds = list(map(previous.get, names))
        try:
            stats = list(map(os.lstat, map(absdir.__add__, names)))
        except OSError:  # one vanished: look at each on its own
            for i, old in zip(slots, olds, strict=True):
                self._file(node, i, absdir, None, old)
            return
        racy, same = self._racy, 0
        keys, ids, modes = node.keys, node.ids, node.modes  # a fresh node's own lists
        for i, st, old in zip(slots, stats, olds, strict=True):
            key = _stat_key(st)
            if (old is None or old[0] != key or st.st_mtime_ns >= racy
                    or st.st_ctime_ns >= racy):
                self._file(node, i, absdir, st, old)
            else:
                keys[i], ids[i], modes[i] = key, old[1], old[2]  # type: ignore[index]
                same += 1
        self.stats.files += same

    def _other(self, node: _Node, i: int, absdir: bytes, rules: RuleStack | None,
               old: tuple | None) -> None:
        """A subdirectory, or an entry the ignore rules exclude (kept only if tracked)."""
        kind, path = node.kinds[i], node.rel + node.names[i]
        kept = kind & _KEPT
        if not kept and not self._tracked(path, kind | _KEPT):
            node.clear(i)
        elif kind | _KEPT == _DIR:
            # The subdirectory fills this slot when its tree is built.
            self._visit(path + b"/", rules if kept else None, node, i)
        else:
            self._file(node, i, absdir, None, old)

    def _file(self, node: _Node, i: int, absdir: bytes, st: os.stat_result | None,
              old: tuple | None) -> None:
        """A file or symlink whose stat data may have changed; ``old`` is its
        cached (stat key, object id)."""
        path = absdir + node.names[i]
        try:
            st = st or os.lstat(path)
        except OSError:
            st = None
        fmt = st.st_mode & 0o170000 if st is not None else 0
        if fmt not in (0o100000, 0o120000):
            # Gone, or turned into a directory since the listing: leave it
            # out and make the next walk list this directory again.
            node.put(i, None, None, 0)
            node.stat, self.changed = None, True
            return
        mode = MODE_LINK if fmt == 0o120000 else (MODE_EXEC if st.st_mode & 0o100 else MODE_FILE)
        key = _stat_key(st)
        oid = old[1] if old is not None and old[0] == key else None
        if oid is None:
            self._pending.append((node, i, path, key))
            self.changed = True
        racy = st.st_ctime_ns >= self._racy or st.st_mtime_ns >= self._racy
        node.put(i, None if racy else key, oid, mode)
        self.stats.files += 1

    def _stable(self, dstat: tuple) -> tuple | None:
        """A directory stat worth caching; a racy one forces a fresh listing."""
        return None if dstat[0] >= self._racy or dstat[1] >= self._racy else dstat

    # -- tracked files, submodules

    def _user_index(self) -> UserIndex:
        if self._index is None:
            self._index = self._load_index()
        return self._index

    def _tracked(self, path: bytes, kind: int) -> bool:
        index = self._user_index()
        if kind == _DIR:
            return index.tracks(path) or index.tracks_below(path)
        return index.tracks(path)

    def _is_gitlink(self, rel: bytes) -> bool:
        # Asked of every directory: git keeps a gitlink for any directory at
        # its path, repository or not (an uninitialised submodule, with or
        # without a .gitmodules), and drops it only when the path is gone.
        return self._user_index().gitlink(rel[:-1]) is not None

    def _gitlink(self, rel: bytes, parent: _Node | None, slot: int) -> None:
        """Record a nested repository as git does: its HEAD commit, never its files."""
        from dulwich.index import read_submodule_head  # a rare case: see checkpoints

        head = read_submodule_head(self._root + rel[:-1])
        oid = bytes.fromhex(head.decode()) if head else None
        if oid is None:
            oid = self._user_index().gitlink(rel[:-1])
        if parent is not None:
            if oid is None:
                parent.clear(slot)
            elif parent.ids[slot] != oid or parent.modes[slot] != MODE_GITLINK:
                parent.put(slot, None, oid, MODE_GITLINK)

    # -- hashing

    def _hash_pending(self) -> None:
        pending = self._pending
        if len(pending) >= _SEED_MIN:
            pending = self._seed(pending)
        # Big files hash and compress with the GIL released, so a few threads
        # overlap them; small ones are all interpreter overhead and stay on
        # this thread, which works through them meanwhile.
        big = [item for item in pending if item[3][2] >= _THREAD_MIN_SIZE]
        small = [item for item in pending if item[3][2] < _THREAD_MIN_SIZE]
        if len(big) < 2:
            small, big = pending, []
        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            done = pool.map(self._hash_one, big)
            for item in small:
                self._hash_one(item)
            list(done)

    def _seed(self, pending: list) -> list:
        """Take ids from git's own index where its stat data still holds."""
        index = self._user_index()
        left = []
        for item in pending:
            node, i, _, key = item
            oid = _seed_id(index, node.rel + node.names[i], key, node.modes[i])
            if oid is not None and self._writer.has(oid):
                node.ids[i] = oid
                self.stats.seeded += 1
            else:
                left.append(item)
        return left

    def _hash_one(self, item: tuple[_Node, int, bytes, tuple]) -> None:
        node, i, path, key = item
        try:
            if node.modes[i] == MODE_LINK:
                oid = self._writer.put(b"blob", os.readlink(path), write=self._write)
            else:
                oid = self._writer.put_file(path, write=self._write)
        except OSError:
            node.keys[i], node.modes[i] = None, 0
            self.stats.skipped.append(os.fsdecode(node.rel + node.names[i]))
            return
        node.ids[i] = oid
        with _STATS_LOCK:
            self.stats.hashed += 1
            self.stats.hashed_bytes += key[2]

    # -- trees

    def _build(self, node: _Node) -> bytes | None:
        """The node's object id (None when it holds nothing), passed up to its parent."""
        old = node.old
        if old is not None and old[2] is not None and _same_entries(old, node):
            oid = old[2]
        else:
            oid = self._tree(node)
        parent, mode = node.parent, MODE_TREE if oid is not None else 0
        if parent is not None and (parent.ids[node.slot] != oid
                                   or parent.modes[node.slot] != mode):
            parent.put(node.slot, None, oid, mode)
        return oid

    def _tree(self, node: _Node) -> bytes | None:
        # An entry is in the tree when it has a mode (one that is gone, left
        # out or unreadable has none; one with a mode has its id by now).
        # No Python loop over the entries: a directory of many files is
        # written again whenever one of them changes.
        entries = list(compress(zip(node.modes, node.names, node.ids, strict=True), node.modes))
        if not entries:
            return None
        if _tree_order_differs(node.names, node.kinds):
            entries.sort(key=_tree_key)
        return self._writer.put_tree(b"".join(map(b"%o %s\0%s".__mod__, entries)),
                                     write=self._write)


_STATS_LOCK = threading.Lock()


def _nothing(_rel: bytes) -> None:
    """No watch."""


def _listing(absdir: bytes) -> tuple[tuple, bytes]:
    """The names (sorted) and kinds of a directory's files, symlinks and subdirectories.

    Sockets, fifos and devices are skipped, as git skips them.
    """
    found = []
    with os.scandir(absdir) as it:
        for entry in it:
            # Files first, the most common: one look each (a symlink is
            # neither a file nor a directory when not followed).
            if entry.is_file(follow_symlinks=False):
                found.append((entry.name, _FILE))
            elif entry.is_dir(follow_symlinks=False):
                found.append((entry.name, _DIR))
            elif entry.is_symlink():
                found.append((entry.name, _LINK))
    found.sort()
    return tuple(name for name, _ in found), bytes(kind for _, kind in found)


def _same_entries(old: Record, node: _Node) -> bool:
    """Whether ``node`` holds the entries of ``old``'s tree: the same
    listing with the same ids, or one that differs only by entries no tree
    holds (empty directories that came or went, like an agent's scratch
    directories), compared without formatting the tree again."""
    if old[3] == node.names:
        return tuple(node.ids) == old[6] and tuple(node.modes) == old[7]
    if len(old[7]) - old[7].count(0) != len(node.modes) - node.modes.count(0):
        return False  # an entry more or fewer: the usual change
    return (list(compress(zip(old[7], old[3], old[6], strict=True), old[7]))
            == list(compress(zip(node.modes, node.names, node.ids, strict=True), node.modes)))


def _tree_order_differs(names: tuple, kinds: bytes) -> bool:
    """Whether git's order (a subdirectory named as if it ended in "/") is
    not the listing's: only when a name continues a subdirectory's name."""
    count = len(names)
    return any(i + 1 < count and names[i + 1].startswith(names[i])
               for i in compress(range(count), kinds.translate(_DIR_MASK)))


def _tree_key(entry: tuple) -> bytes:
    mode, name, _ = entry
    return name + b"/" if mode == MODE_TREE else name


def _kind_of(st: os.stat_result | None) -> int | None:
    """An entry's kind as a listing gives it; None for what git skips."""
    return None if st is None else _KINDS.get(st.st_mode & 0o170000)


def _by_name(old: Record | None) -> dict[bytes, tuple]:
    """A cached record's (stat key, object id, mode) per entry name."""
    if old is None:
        return {}
    return dict(zip(old[3], zip(old[5], old[6], old[7], strict=True), strict=True))


def _seed_id(index: UserIndex, path: bytes, key: tuple, mode: int) -> bytes | None:
    entry = index.entries.get(path)
    if entry is None or entry[4] != mode:
        return None
    mtime_ns, ctime_ns, size, ino = entry[:4]
    # git's own racy rule: an entry as new as the index file may hide a change.
    if mtime_ns >= index.mtime_ns:
        return None
    if (mtime_ns, ctime_ns, size, ino) != (key[0], key[1], key[2] & 0xFFFFFFFF,
                                           key[3] & 0xFFFFFFFF):
        return None
    return entry[5]
