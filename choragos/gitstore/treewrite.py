"""Changing the work tree for a rollback, never outside it.

Agents may still be writing while a rollback runs, and one of them may put
a symlink where a directory was a moment before.  A path checked and then
opened by name could then be followed out of the work tree.  So nothing
here opens a path by name from the root: every directory on the way is
opened from its parent's descriptor with ``O_NOFOLLOW``, and the file, the
link or the directory at the end is created, replaced or removed relative
to its parent's descriptor.  A symlink in the way is never followed: where
a directory must be it is removed (it is in the work tree) and a directory
made, and a deletion below it is skipped.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOT_A_DIR = (errno.ENOTDIR, errno.ELOOP)  # a file, or a symlink opened without following


def ancestors(paths: list[bytes]) -> set[bytes]:
    """Every directory above each of ``paths`` (relative, ``/``-separated)."""
    out = set()
    for path in paths:
        while b"/" in path:
            path = path.rsplit(b"/", 1)[0]
            out.add(path)
    return out


def tmp_name(name: bytes) -> bytes:
    """The temporary a file or link named ``name`` is written through,
    beside it; bounded, so a name near the length limit leaves room."""
    return b".%s.choragos-%d" % (name[:64], os.getpid())


class WorkTree:
    """The work tree at ``root``, changed only below it."""

    def __init__(self, root: bytes) -> None:
        # The root itself may be reached through a symlink (the user's
        # choice, like a home on another disk): only what is below is not.
        self._fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> WorkTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def delete(self, paths: list[bytes]) -> list[bytes]:
        """Unlink each file or symlink; a path whose directory is gone, is no
        longer a directory, or that became a directory is left; the deleted."""
        done = []
        for path in paths:
            with self._parent(path, make=False) as parent:
                if parent is None:
                    continue
                name = _name(path)
                try:
                    if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                        continue  # became a directory since the plan; leave it
                    os.unlink(name, dir_fd=parent)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                done.append(path)
        return done

    def prune_dirs(self, deleted: list[bytes], keep: set[bytes]) -> list[bytes]:
        """Remove directories left empty by ``deleted``, deepest first."""
        removed = []
        for folder in sorted(ancestors(deleted), key=lambda p: p.count(b"/"), reverse=True):
            if folder in keep:
                continue
            with self._parent(folder, make=False) as parent:
                if parent is None:
                    continue
                try:
                    os.rmdir(_name(folder), dir_fd=parent)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT,
                                         errno.ENOTDIR):
                        raise
                    continue
            removed.append(folder)
        return removed

    def write_file(self, path: bytes, data: Iterable[bytes], *, executable: bool) -> None:
        """``path`` holds ``data`` (its pieces, in order), written through a
        temporary and renamed into place; an existing file's permission
        bits are kept."""
        with self._parent(path, make=True) as parent:
            name = _name(path)
            _clear_directory(parent, name)
            tmp = tmp_name(name)
            # The kernel applies the umask to a new file, as git checkout does.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o777 if executable else 0o666, dir_fd=parent)
            try:
                try:
                    for piece in data:
                        _write_all(fd, piece)
                    with suppress(FileNotFoundError):
                        old = os.stat(name, dir_fd=parent, follow_symlinks=False)
                        if stat.S_ISREG(old.st_mode):
                            os.fchmod(fd, keep_permissions(old.st_mode, executable))
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                # A full disk, say: no half-written temporary is left behind.
                with suppress(OSError):
                    os.unlink(tmp, dir_fd=parent)
                raise

    def write_link(self, path: bytes, target: bytes) -> None:
        """``path`` is a symlink to ``target`` (which is never followed here)."""
        with self._parent(path, make=True) as parent:
            name = _name(path)
            _clear_directory(parent, name)
            tmp = tmp_name(name)
            with suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=parent)
            os.symlink(target, tmp, dir_fd=parent)
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)

    @contextmanager
    def _parent(self, path: bytes, *, make: bool) -> Iterator[int | None]:
        """A descriptor of the directory holding ``path``, each directory on
        the way opened without following a symlink.  ``make``: missing ones
        are made, and a file or symlink in the way is replaced by a
        directory (the plan deletes it: conflicts were refused first);
        otherwise None when the way is not all directories."""
        fd = os.dup(self._fd)
        try:
            for part in path.split(b"/")[:-1]:
                inner = _open_dir(fd, part, make)
                if inner is None:
                    os.close(fd)
                    fd = -1
                    break
                os.close(fd)
                fd = inner
            yield fd if fd >= 0 else None
        finally:
            if fd >= 0:
                os.close(fd)


def _open_dir(parent: int, name: bytes, make: bool) -> int | None:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not make:
            return None
    except OSError as exc:
        if exc.errno not in _NOT_A_DIR:
            raise
        if not make:
            return None
        os.unlink(name, dir_fd=parent)  # a file or a symlink: removed, never followed
    os.mkdir(name, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _clear_directory(parent: int, name: bytes) -> None:
    """Where a file goes, a directory the plan emptied (it holds only empty
    directories by now) is removed, without following anything."""
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        return
    for _where, dirs, _files, dir_fd in os.fwalk(name, topdown=False, dir_fd=parent):
        for folder in dirs:
            os.rmdir(folder, dir_fd=dir_fd)
    os.rmdir(name, dir_fd=parent)


def _name(path: bytes) -> bytes:
    return path.rpartition(b"/")[2]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def keep_permissions(mode: int, executable: bool) -> int:
    """The file's existing permissions, with the executable bits set or
    cleared the way git records them (readers may execute)."""
    perms = stat.S_IMODE(mode)
    if executable:
        return perms | (perms & 0o444) >> 2
    return perms & ~0o111
