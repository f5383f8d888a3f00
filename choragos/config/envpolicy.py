"""Which environment variables a role's process gets .

Two modes.  With no ``env_allow`` a role inherits the deck's environment.
With a non-empty ``env_allow`` it gets only :data:`BASELINE` plus what is
listed.  ``env_deny`` is applied first in both modes and always wins.  The
variables choragos itself injects (socket, role name, gateway URLs) are set
last, so no deny pattern can cut a role off from the control socket.

Patterns are exact names or a prefix followed by one trailing ``*``
(``GOOGLE_*``).  Matching is case-sensitive, as the environment is, and a
prefix pattern is literal: ``GOOGLE_*`` matches ``GOOGLE_API_KEY`` but not
``GOOGLE``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from choragos import onuse

__all__ = ["BASELINE", "build_env", "matches", "validate_pattern"]

# What a program needs to find binaries, its home, its user, its locale and a
# terminal to draw on -- and nothing that grants access to anything.  Left out
# on purpose, each available by listing it in env_allow:
#   SSH_AUTH_SOCK          lets the holder sign as you (git push, ssh): a credential.
#   DISPLAY, WAYLAND_DISPLAY  reach your desktop session (X11 clients can read
#                          other windows' keystrokes).
#   HTTP(S)_PROXY, NO_PROXY proxy URLs often embed user:password.
#   TERM_PROGRAM(_VERSION) describe the outer terminal, not the emulated pane;
#                          agents would emit escapes the pane does not speak.
#   PWD                    is the deck's directory, not necessarily the role's.
#   EDITOR, VISUAL, PAGER  an unattended agent should not open an editor.
BASELINE: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL",
    "TERM", "COLORTERM",
    "LANG", "LANGUAGE", "LC_*", "TZ",
    "TMPDIR", "XDG_*",
)

_NAME = onuse.pattern(r"[A-Za-z_][A-Za-z0-9_]*")


def validate_pattern(pattern: object) -> str | None:
    """Return why ``pattern`` is not a valid env pattern, or None when it is."""
    if not isinstance(pattern, str):
        return f"expected a variable name as a string, got {pattern!r}"
    if pattern == "*":
        return 'a bare "*" would match every variable; list names or PREFIX_* patterns'
    stem = pattern[:-1] if pattern.endswith("*") else pattern
    if _NAME().fullmatch(stem):
        return None
    if "*" in stem:
        return (f'{_quote(pattern)}: only one "*", at the end, is allowed '
                "(prefix match, e.g. GOOGLE_*)")
    return (f"{_quote(pattern)} is not a variable name or PREFIX_* pattern "
            "(letters, digits and _, not starting with a digit)")


def _quote(text: str) -> str:
    # Escaped, because patterns come from config files and end up on a terminal.
    return json.dumps(text, ensure_ascii=False)


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` is one of ``patterns`` (exact names or ``PREFIX*``)."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if name.startswith(pattern[:-1]):
                return True
        elif name == pattern:
            return True
    return False


def build_env(base: Mapping[str, str], allow: Sequence[str], deny: Sequence[str],
              inject: Mapping[str, str]) -> dict[str, str]:
    """The environment for one role: ``base`` filtered by deny, then allow, plus ``inject``."""
    env = {k: v for k, v in base.items() if not matches(k, deny)}
    if allow:
        env = {k: v for k, v in env.items() if matches(k, BASELINE) or matches(k, allow)}
    env.update(inject)
    return env
