"""Which role a request to the built-in gateway is charged to: decided here only.

A role's model calls are charged to it, and its budget pauses it, so a
request must not choose its role by naming one.  A session's gateway holds
a session key (random, per session, handed over on the gateway's stdin:
never in an argument, the environment, a log or a file), and each role's
base URL carries that role's own key, derived from it::

    http://<addr>/agent/<role>/<key>/v1/messages

A CLI that takes no base URL from its environment (Codex, whose command
line any local user can read) gets the key in the :data:`KEY_HEADER`
header instead, from a variable (:data:`KEY_ENV`).  A request whose key is
missing or wrong is refused, charged to nobody and counted under
:data:`~choragos.gateway.labels.UNKNOWN`.  Keys are derived (HMAC), not
listed, so a role added by a reload is known without telling the gateway.

A gateway run on its own (``choragos gateway`` without ``--session``) has no
key: like an external gateway, it charges the role the path names, with
labels bounded by :mod:`choragos.gateway.labels`.
"""

from __future__ import annotations

from dataclasses import dataclass

from choragos import onuse
from choragos.gateway.labels import UNKNOWN

KEY_HEADER = "X-Choragos-Key"
KEY_ENV = "CHORAGOS_GATEWAY_KEY"
_AGENT = onuse.pattern(r"/agent/([A-Za-z0-9][A-Za-z0-9_-]{0,31})(/.*)?")
_KEY = onuse.pattern(r"/([0-9a-f]{32})(?=/|$)")


# hashlib, hmac and secrets are imported where used: they load OpenSSL's
# libcrypto (3.6 MB resident), and a session without the built-in gateway
# imports this module but never makes a key.


def new_session_key() -> bytes:
    import secrets

    return secrets.token_bytes(32)


def role_key(session_key: bytes, role: str) -> str:
    """``role``'s key: 32 hex digits only the holder of ``session_key`` can make."""
    import hashlib
    import hmac

    return hmac.new(session_key, b"choragos gateway role " + role.encode(),
                    hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class Caller:
    """A request under ``/agent/``: whom it is charged to, and what it asks for."""

    role: str          # the role, or UNKNOWN when refused
    rest: str          # the API path after the role's prefix ("/" for the base URL)
    shown: str         # the path as it may be logged: never with a key in it
    refusal: str = ""  # why it is refused, or '' when it may go on


class Roles:
    """Maps a request to its role; ``session_key`` None: the path's claim is taken."""

    def __init__(self, session_key: bytes | None = None) -> None:
        self.session_key = session_key

    def caller(self, path: str, header_key: str | None) -> Caller | None:
        """The caller of a request for ``path`` (None: not an ``/agent/`` path)."""
        found = _AGENT().fullmatch(path)
        if found is None:
            return None
        role, rest = found[1], found[2] or "/"
        in_path = _KEY().match(rest) if self.session_key is not None else None
        if in_path:
            rest = rest[in_path.end():] or "/"
        shown = f"/agent/{role}{'/…' if in_path else ''}{rest if rest != '/' else ''}"
        if self.session_key is None:
            return Caller(role, rest, shown)
        given = in_path[1] if in_path else (header_key or "").strip()
        import hmac

        if given and hmac.compare_digest(given.encode(), role_key(self.session_key,
                                                                  role).encode()):
            return Caller(role, rest, shown)
        why = "carries a wrong role key" if given else "carries no role key"
        return Caller(UNKNOWN, rest, shown, f"choragos gateway: this request {why} for "
                      f"{role}; each role must use the base URL its session gave it "
                      "(nothing was sent upstream)")
