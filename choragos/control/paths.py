"""Where a session keeps its control socket, lock and state.

Standard library only: ``choragos delegate`` and ``work-done`` import this
module on every call, so it must stay cheap to load.  They use only the
names and the role-name check, so pathlib (with fnmatch, urllib.parse and
ipaddress, some 5 ms of an installed choragos' start) is imported by the
functions that make paths, not here.
"""

from __future__ import annotations

import os

# typing is needed for annotations only; the agents' verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

SOCK_ENV = "CHORAGOS_SOCK"
ROLE_ENV = "CHORAGOS_ROLE"
STATE_DIRNAME = ".choragos"

# What a role name is made of: 1 to 32 of these (a set test, not a regular
# expression: compiling one costs the agents' verbs more than the test).
_ROLE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ROLE_MAX = 32


def runtime_dir(env: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_RUNTIME_DIR``, or the system temp dir when it is unset."""
    from pathlib import Path

    base = env.get("XDG_RUNTIME_DIR")
    if base:
        return Path(base)
    # tempfile pulls in random/shutil; only pay for it when XDG is unset.
    import tempfile

    return Path(tempfile.gettempdir())


def socket_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The per-user directory holding every session's socket."""
    return runtime_dir(env) / f"choragos-{os.getuid()}"


def dir_hash(workdir: Path) -> str:
    """Eight hex digits naming a working directory; short enough for sun_path."""
    # Imported here: agents' verbs get $CHORAGOS_SOCK and never hash.
    from pathlib import Path

    absolute = str(Path(workdir).resolve())
    return _sha256_hex(os.fsencode(absolute))[:8]


def _sha256_hex(data: bytes) -> str:
    """SHA-256 from the interpreter's own implementation where it has one:
    ``hashlib`` loads OpenSSL's libcrypto (3.6 MB of the server's resident
    memory, never used again at rest) for eight hex digits of a path."""
    try:
        from _sha2 import sha256  # Python 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:  # built without them: the same digest from OpenSSL
            from hashlib import sha256
    return sha256(data).hexdigest()


def socket_path(workdir: Path, env: Mapping[str, str] = os.environ) -> Path:
    """The control socket for ``workdir``; ``$CHORAGOS_SOCK`` wins when set."""
    from pathlib import Path

    override = env.get(SOCK_ENV)
    if override:
        return Path(override)
    return _default_socket(workdir, env)


def ui_socket_path(workdir: Path, env: Mapping[str, str] = os.environ) -> Path:
    """The deck's attach socket: ``<hash>.ui.sock`` next to the control socket."""
    control = socket_path(workdir, env)
    stem = control.name.removesuffix(".sock")
    return control.with_name(f"{stem}.ui.sock")


def find_socket(cwd: Path, env: Mapping[str, str] = os.environ) -> Path:
    """The socket a CLI verb run in ``cwd`` should talk to.

    A verb run from a subdirectory of the project finds the session of the
    nearest parent that has one; with none anywhere, the answer is ``cwd``'s
    own path, so the "not running" message names the directory the user is in.
    """
    from pathlib import Path

    override = env.get(SOCK_ENV)
    if override:
        return Path(override)
    here = Path(cwd).resolve()
    for candidate in (here, *here.parents):
        sock = _default_socket(candidate, env)
        if sock.is_socket():
            return sock
    return _default_socket(here, env)


def state_dir(workdir: Path) -> Path:
    """The session's private state: task files, logs, checkpoint index."""
    from pathlib import Path

    return Path(workdir) / STATE_DIRNAME


def check_role_name(name: object) -> str | None:
    """An error sentence when ``name`` is not a valid role name, else None."""
    if not isinstance(name, str):
        return f"a role name must be a string, not {type(name).__name__}"
    if 0 < len(name) <= _ROLE_MAX and _ROLE_CHARS.issuperset(name):
        return None
    shown = repr(name[:40]) + ("..." if len(name) > 40 else "")
    return f"bad role name {shown}: use 1 to 32 letters, digits, '-' or '_'"


def confine(path: Path | str, root: Path | str) -> Path:
    """Resolve ``path`` (relative paths against ``root``) and refuse escapes.

    Symlinks are followed before the check, so a link pointing out of
    ``root`` is refused just like ``../``.
    """
    from pathlib import Path

    base = Path(root).resolve()
    target = (base / path).resolve()
    if not target.is_relative_to(base):
        raise ValueError(f"{path} resolves to {target}, outside {base}")
    return target


def _default_socket(workdir: Path, env: Mapping[str, str]) -> Path:
    return socket_dir(env) / f"{dir_hash(workdir)}.sock"
