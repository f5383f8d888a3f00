"""Safe writes under ``.choragos/``: nothing follows a link out of the workspace.

A repository can carry a ``.choragos/`` of its own, and an agent can plant
links in it while a session runs.  Every file the server writes there goes
through this module, which never follows a symbolic link:

- the state directory is opened once (``O_NOFOLLOW``, owned by the user) and
  every path below it is reached with ``openat``-style calls relative to
  directory descriptors (``dir_fd=``), each component opened ``O_NOFOLLOW``;
- files are created 0600 and directories 0700;
- :func:`write_text` writes a temporary file (``O_EXCL``) and renames it
  over the target, which replaces a link rather than writing through it;
- :func:`open_append` refuses links, hard-linked files and anything that is
  not a regular file.

The API is five functions taking absolute paths: :func:`write_text`,
:func:`open_append`, :func:`append_fd`, :func:`replace` and :func:`make_dir`, plus
:func:`check` which a session runs at start to refuse a state directory that
is a link, is not the user's, or holds links.  A path is anchored at its
last ``.choragos`` component; a path with none (a test's temp file) is
anchored at its parent directory.

Standard library only: the daemon and the crash log use it too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from pathlib import Path

STATE_DIRNAME = ".choragos"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND_FLAGS = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                 | os.O_CLOEXEC)

_roots: dict[Path, int] = {}
_roots_lock = threading.Lock()
_tmp_counter = 0


class StateDirError(OSError):
    """A path under the state directory that must not be written; one sentence."""


# -- the public API ----------------------------------------------------------------------

def check(workdir: Path) -> str | None:
    """Why the state directory of ``workdir`` cannot be used, or None.

    Creates ``.choragos`` (0700) when missing.  Refuses one that is a link,
    not a directory, not owned by the user, or that holds a link or a
    hard-linked file anywhere below it.
    """
    root = Path(workdir) / STATE_DIRNAME
    try:
        fd = _root_fd(root)
    except OSError as exc:
        return _sentence(exc)
    return _scan(fd, root)


def write_text(path: Path, text: str, mode: int = 0o600) -> Path:
    """Replace ``path`` atomically with ``text`` (``mode``, 0600 unless told),
    never through a link."""
    data = text.encode("utf-8", errors="surrogateescape")
    parent, name = _parent_fd(Path(path))
    try:
        tmp = _write_tmp(parent, name, data, mode)
        try:
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            _unlink_quietly(tmp, parent)
            raise
    finally:
        os.close(parent)
    return Path(path)


def append_fd(path: Path) -> int:
    """A descriptor appending to ``path`` (created 0600); refuses links and hard links."""
    parent, name = _parent_fd(Path(path))
    try:
        fd = _open_or_refuse(name, parent, Path(path))
    finally:
        os.close(parent)
    try:
        _check_appendable(fd, Path(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: Path, encoding: str = "utf-8", errors: str = "strict"):
    """:func:`append_fd` as a text file object, line-buffered."""
    return os.fdopen(append_fd(path), "a", encoding=encoding, errors=errors, buffering=1)


def make_dir(path: Path) -> Path:
    """Create the directory ``path`` (0700) and its parents, never through a link."""
    parent, name = _parent_fd(Path(path))
    try:
        os.close(_subdir(parent, name, Path(path)))
    finally:
        os.close(parent)
    return Path(path)


def replace(src: Path, dst: Path) -> None:
    """Rename ``src`` over ``dst`` inside the state directory (log rotation)."""
    src_parent, src_name = _parent_fd(Path(src))
    try:
        dst_parent, dst_name = _parent_fd(Path(dst))
        try:
            os.replace(src_name, dst_name, src_dir_fd=src_parent, dst_dir_fd=dst_parent)
        finally:
            os.close(dst_parent)
    finally:
        os.close(src_parent)


def rotate(path: Path, keep: int) -> None:
    """``path`` becomes ``path.1``, an older ``path.1`` becomes ``path.2`` and so
    on up to ``path.<keep>``; what was in ``path.<keep>`` is gone."""
    for n in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        if older.exists():
            replace(older, path.with_name(f"{path.name}.{n + 1}"))
    replace(path, path.with_name(f"{path.name}.1"))


# -- opening directories -----------------------------------------------------------------

def _anchor(path: Path) -> tuple[Path, tuple[str, ...]]:
    """The directory ``path`` is anchored at, and the components below it."""
    absolute = Path(os.path.abspath(path))
    parts = absolute.parts
    for index in range(len(parts) - 1, 0, -1):
        if parts[index] == STATE_DIRNAME:
            return Path(*parts[: index + 1]), parts[index + 1:]
    return absolute.parent, (absolute.name,)


def _root_fd(root: Path) -> int:
    """The state directory's descriptor, opened once and re-checked on each use."""
    with _roots_lock:
        fd = _roots.get(root)
        if fd is not None and _still_there(fd, root):
            return fd
        if fd is not None:
            os.close(fd)
            del _roots[root]
        fd = _open_root(root)
        _roots[root] = fd
        return fd


def _still_there(fd: int, root: Path) -> bool:
    """The held descriptor is still the directory at ``root`` (not swapped for a link)."""
    try:
        now = os.lstat(root)
    except OSError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _open_root(root: Path) -> int:
    # The workspace itself may sit behind a link (/tmp on some systems);
    # only the state directory and what is below it must not.
    base = os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = _subdir(base, root.name, root)
    finally:
        os.close(base)
    info = os.fstat(fd)
    if info.st_uid != os.getuid():
        os.close(fd)
        raise StateDirError(errno.EPERM, f"{root} belongs to uid {info.st_uid}, not to you; "
                            "choragos will not write there")
    return fd


def _subdir(parent: int, name: str, shown: Path) -> int:
    """Open (creating 0700) the directory ``name`` below ``parent``, never a link."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=parent)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _not_followed(parent, name, shown) from None
        raise


def _parent_fd(path: Path) -> tuple[int, str]:
    """A fresh descriptor of ``path``'s directory (caller closes it) and the name."""
    root, below = _anchor(path)
    if not below:
        raise StateDirError(errno.EISDIR, f"{path} is the state directory itself, not a file")
    fd = os.dup(_root_fd(root))
    shown = root
    try:
        for name in below[:-1]:
            shown = shown / name
            child = _subdir(fd, name, shown)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, below[-1]


# -- files -------------------------------------------------------------------------------

def _write_tmp(parent: int, name: str, data: bytes, mode: int = 0o600) -> str:
    global _tmp_counter
    _tmp_counter += 1
    tmp = f".{name}.{os.getpid()}.{_tmp_counter}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode, dir_fd=parent)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow what was asked
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp, parent)
        raise
    os.close(fd)
    return tmp


def _open_or_refuse(name: str, parent: int, shown: Path) -> int:
    try:
        return os.open(name, _APPEND_FLAGS, 0o600, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_followed(parent, name, shown) from None
        raise


def _check_appendable(fd: int, shown: Path) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise StateDirError(errno.EINVAL, f"{shown} is not a regular file; "
                            "choragos will not write to it")
    if info.st_nlink > 1:
        raise StateDirError(errno.EMLINK, f"{shown} has {info.st_nlink} hard links (one may "
                            "be outside the workspace); choragos will not write to it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.fchmod(fd, 0o600)  # a file from an older run, readable by others


def _not_followed(parent: int, name: str, shown: Path) -> StateDirError:
    try:
        target = os.readlink(name, dir_fd=parent)
    except OSError:
        return StateDirError(errno.ENOTDIR, f"{shown} is not a directory; choragos keeps "
                             "its state there: move it away")
    return StateDirError(errno.ELOOP, f"{shown} is a symbolic link (to {target}); choragos "
                         "never writes through links under .choragos: remove it")


def _unlink_quietly(name: str, parent: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=parent)


# -- the start-up scan -------------------------------------------------------------------

WORKTREES = "worktrees"


def _scan(fd: int, root: Path) -> str | None:
    """The first link or hard-linked file below ``root``, as a refusal, or None."""
    for folder, dirs, files, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
        if folder == "." and WORKTREES in dirs:
            # The roles' git worktrees hold the project's own files (links
            # included), which choragos never writes through this module.
            dirs.remove(WORKTREES)
        for name in dirs + files:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            shown = root / os.path.normpath(os.path.join(folder, name))
            if stat.S_ISLNK(info.st_mode):
                return _sentence(_not_followed(dir_fd, name, shown))
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                return (f"{shown} has {info.st_nlink} hard links (one may be outside the "
                        "workspace); choragos will not write to it: remove it")
    return None


def _sentence(exc: OSError) -> str:
    if isinstance(exc, StateDirError):
        return str(exc.strerror or exc)
    where = f"{exc.filename}: " if exc.filename else ""
    return f"cannot use the state directory: {where}{exc.strerror or exc}"
