"""Putting the running choragos first on every role's PATH.

Agents report back by running ``choragos work-done``; a user who started
``.venv/bin/choragos`` by its path has no ``choragos`` on PATH, and an agent
that finds another install would talk to this session with a different
version.  So ``serve`` writes a one-file directory, ``.choragos/bin``, whose
``choragos`` runs this very interpreter on this very package, and puts it
first on each role's PATH (after ``env_allow``/``env_deny``, so neither can
remove it).  A directory of its own, rather than the interpreter's ``bin/``,
so a role's ``python`` or ``pip`` stays the one the user's PATH names.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

import choragos
from choragos import statedir

__all__ = ["BIN_DIRNAME", "bin_dir", "prepend", "shim_text", "write_shim"]

BIN_DIRNAME = "bin"


def bin_dir(workdir: Path) -> Path:
    """Where the session's ``choragos`` lives: ``<workdir>/.choragos/bin``."""
    return Path(workdir) / ".choragos" / BIN_DIRNAME


def package_root() -> Path:
    """The directory that holds the running ``choragos`` package."""
    return Path(choragos.__file__).resolve().parent.parent


def shim_text(python: str | None = None, root: Path | None = None) -> str:
    """A POSIX shell script running ``python`` on the choragos found in ``root``.

    ``-I`` keeps the agent's PYTHONPATH and current directory from shadowing
    the package; ``root`` goes on sys.path explicitly instead.
    """
    python = python or sys.executable
    root = root or package_root()
    code = (f"import sys; sys.path.insert(0, {str(root)!r}); "
            "from choragos.cli.main import main; sys.exit(main())")
    return ("#!/bin/sh\n"
            "# Written by `choragos serve`: the choragos of the running session.\n"
            f"exec {shlex.quote(python)} -I -c {shlex.quote(code)} \"$@\"\n")


def write_shim(workdir: Path) -> Path:
    """Write ``.choragos/bin/choragos`` (atomically) and return its directory."""
    folder = statedir.make_dir(bin_dir(workdir))
    statedir.write_text(folder / "choragos", shim_text(), mode=0o700)
    return folder


def prepend(env: Mapping[str, str], folder: Path) -> dict[str, str]:
    """``env`` with ``folder`` first on PATH (once), whatever PATH held."""
    rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p != str(folder)]
    return {**env, "PATH": os.pathsep.join([str(folder), *rest])}
