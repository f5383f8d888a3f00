"""The web view's access token and address, kept per session directory.

The token is 32 random bytes (URL-safe base64) in ``.choragos/state/web-token``,
0600, made on first use and replaced by ``choragos web --rotate``.  The
server reads it again whenever the file changes, so a rotation locks out
every browser at once without a restart.  The session writes the address it
really listens on (port 0 takes a free one) to ``web-addr`` next to it, for
``choragos web`` to print.

Only the standard library: ``choragos web`` loads this module.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from choragos import statedir
from choragos.board import journal

TOKEN_FILE = "web-token"
ADDR_FILE = "web-addr"
COOKIE = "choragos_web"  # and the port: cookies are not kept apart by port


def cookie_name(addr: str) -> str:
    """The cookie of the server on ``addr``: one per port, so signing in to a
    second session on this host does not sign the browser out of the first."""
    return f"{COOKIE}_{addr.rpartition(':')[2]}"


def token_path(workdir: Path) -> Path:
    return journal.state_dir(workdir) / TOKEN_FILE


def addr_path(workdir: Path) -> Path:
    return journal.state_dir(workdir) / ADDR_FILE


def ensure_token(workdir: Path) -> str:
    """This directory's token, made now if there is none."""
    existing = read_token(workdir)
    return existing if existing else rotate(workdir)


def rotate(workdir: Path) -> str:
    """A new token; the old one stops working at the server's next request."""
    import secrets  # here: with hmac it loads OpenSSL's libcrypto, the session at rest not

    token = secrets.token_urlsafe(32)
    statedir.make_dir(journal.state_dir(workdir))
    statedir.write_text(token_path(workdir), token + "\n", mode=0o600)
    return token


def read_token(workdir: Path) -> str:
    try:
        return token_path(workdir).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def write_addr(workdir: Path, addr: str) -> None:
    statedir.make_dir(journal.state_dir(workdir))
    statedir.write_text(addr_path(workdir), addr + "\n")


def read_addr(workdir: Path) -> str:
    try:
        return addr_path(workdir).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def clear_addr(workdir: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(addr_path(workdir))


def page_url(addr: str) -> str:
    """The page's base URL for ``host:port``; a wildcard bind is reached by this host's name."""
    host, _, port = addr.rpartition(":")
    if host in ("0.0.0.0", "[::]"):
        return f"http://{os.uname().nodename}:{port}"
    return f"http://{addr}"


def same_token(given: str, token: str) -> bool:
    """Constant-time comparison, so the answer's timing does not spell the token."""
    import hmac

    # A header's undecodable bytes arrive as surrogates: not a token, and no crash.
    raw = given.encode("utf-8", "surrogatepass")
    return bool(token) and hmac.compare_digest(raw, token.encode())


class TokenFile:
    """The current token, read again only when the file changed."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._seen: tuple[int, int] | None = None
        self._token = ""
        self.generation = 0  # how many times the token was seen to change

    def current(self) -> str:
        try:
            info = os.stat(token_path(self.workdir))
            key: tuple[int, int] | None = (info.st_ino, info.st_mtime_ns)
        except OSError:
            key = None  # removed: no token works until one is made again
        if key != self._seen:
            token, self._seen = (read_token(self.workdir) if key else ""), key
            if token != self._token:
                self._token = token
                self.generation += 1
        return self._token

    def accepts(self, given: str | None) -> bool:
        return given is not None and same_token(given, self.current())
