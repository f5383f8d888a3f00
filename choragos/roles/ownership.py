"""Owned files: who may change which file, and whether someone else did.

Ownership is by literal workspace-relative path (``owns_files``).  A
fingerprint is each owned file's SHA-256 (None when absent), taken when a
task goes out and again at its work-done.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

Prints = dict[str, str | None]


def owners(config: Any) -> dict[str, str]:
    """path -> the role that owns it."""
    return {path: role.name for role in config.roles for path in role.owns_files}


def fingerprint(root: Path, paths: Iterable[str]) -> Prints:
    return {path: _digest(root / path) for path in paths}


def trespasses(before: Prints, after: Prints, owned: dict[str, str],
               role: str) -> list[tuple[str, str]]:
    """(path, owner) for each owned file that changed and is not ``role``'s."""
    return [(path, owned[path]) for path in sorted(before)
            if before[path] != after.get(path) and owned.get(path, role) != role]


def map_section(owned: dict[str, str]) -> str:
    """The ownership map every brief states."""
    if not owned:
        return ""
    rows = [f"| {path} | {role} |" for path, role in sorted(owned.items())]
    return "\n".join([
        "## Owned files", "",
        "Only the owner may change these files.  A change by anyone else holds that "
        "work-done until a person decides, so ask the owner (through the orchestrator) "
        "instead.", "", "| file | owner |", "|---|---|", *rows, ""])


def _digest(path: Path) -> str | None:
    import hashlib  # here: it loads OpenSSL's libcrypto, a session without owned files not

    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except FileNotFoundError:
        return None
    except OSError as exc:  # unreadable: still a fingerprint, so a change shows
        return f"unreadable: {exc.strerror}"
