"""The user's own configuration: ``$XDG_CONFIG_HOME/choragos/config.toml``.

It holds what follows a person from project to project rather than what a
project's team needs: the deck's keys (a tmux user's prefix), ``[ui]``
settings and hooks, and ``[notify]`` (where your phone is pushed).  A
project's ``.choragos.toml`` is merged over it key by key, so the project
wins wherever both set something.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# The sections a user file may hold; the team, gateways, budgets and
# checkpoints belong to a project.
SECTIONS = ("keys", "ui", "notify")


def path(env: Mapping[str, str] = os.environ) -> Path:
    """Where the user's file is, whether or not it exists."""
    base = env.get("XDG_CONFIG_HOME") or ""
    if not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        base = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "choragos" / "config.toml"


def merge_under(user: Mapping, project: Mapping) -> dict:
    """``project`` over ``user``: tables merge key by key, the project's value wins."""
    merged = dict(user)
    for key, value in project.items():
        below = merged.get(key)
        both_tables = isinstance(below, Mapping) and isinstance(value, Mapping)
        merged[key] = merge_under(below, value) if both_tables else value
    return merged
