"""The config a session in this directory last ran with, as the operator confirmed it.

An agent can edit ``.choragos.toml`` while a session runs.  ``choragos
reload`` asks the operator about a loosening (choragos/session/reloadguard.py);
a start would apply one unasked, at the resume after a crash or a reboot
perhaps with nobody there.  So the file a session runs with is kept, as it
was read, in ``.choragos/confirmed.toml`` once the session started (and
again after each applied reload), and the next ``serve`` compares the file
with it through the reload's own list of what only the operator decides: a
loosening stops the start until ``--loosen`` confirms it; a tightening is
named in the start notices.  No record (a first start here) or one that
does not load: the start goes on as before and records.

The record is one more file a same-user agent could rewrite
(docs/security.md, "Known escapes"); it only narrows the window.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from choragos import statedir
from choragos.config.model import Config, ConfigError, load_config
from choragos.session.reloadguard import operator_changes

RECORD = "confirmed.toml"
_HEADER = ("# The config the last session here ran with, as its operator confirmed it\n"
           "# (written by choragos; the next start compares .choragos.toml with it).\n")


def record_path(workdir: Path) -> Path:
    return Path(workdir) / statedir.STATE_DIRNAME / RECORD


@dataclass(frozen=True)
class StartCheck:
    """The file as read at the start (recorded once the session runs) and
    what it changes, against the record, of what only the operator decides."""

    text: str | None = None  # None: nothing to record (the built-in team)
    loosened: tuple[str, ...] = ()
    tightened: tuple[str, ...] = ()
    unreadable: str | None = None  # why the record did not load, when it did not

    def notices(self, confirmed: bool) -> list[str]:
        """The start's notices: the tightenings, the loosenings ``--loosen``
        confirmed, a record that could not be read."""
        out = [f"the config now tightens what only you decide: {'; '.join(self.tightened)}"
               ] if self.tightened else []
        if confirmed and self.loosened:
            out.append(f"started with the loosenings you confirmed: {'; '.join(self.loosened)}")
        if self.unreadable:
            out.append(f"the record of the last confirmed config could not be read "
                       f"({self.unreadable}); this start's config is recorded in its place")
        return out


def check(config: Config, workdir: Path) -> StartCheck:
    """Compare ``config`` (just loaded from its file) with the record; reads only."""
    if config.source is None:
        return StartCheck()
    try:
        text = config.source.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return StartCheck()  # gone since it loaded: nothing sure to record
    path = record_path(workdir)
    if not os.path.lexists(path):
        return StartCheck(text)
    try:
        recorded = load_config(path, workdir)
    except (ConfigError, OSError) as exc:
        why = exc.errors[0] if isinstance(exc, ConfigError) and exc.errors else str(exc)
        return StartCheck(text, unreadable=why)
    changes = operator_changes(recorded, config, later="")
    return StartCheck(text, tuple(c.text for c in changes if c.loosens),
                      tuple(c.text for c in changes if not c.loosens))


def refusal(config: Config, loosened: tuple[str, ...], verb: str, argv: list[str]) -> str:
    """One sentence: what to run (first, as a terminal may cut the end), then
    each loosening."""
    import shlex  # only for a refusal

    again = " ".join(["choragos", verb, *map(shlex.quote, argv), "--loosen"])
    return (f"did not start, nothing changed: {config.source} loosens what only you decide "
            f"since the last session here ran; if you made these changes, run `{again}`: "
            f"{'; '.join(loosened)}")


def record(workdir: Path, config: Config, text: str | None = None) -> str | None:
    """Keep ``text`` (the file as read for ``config``; None: read it now) as
    the confirmed config, only when it loads to what ``config`` decides (a
    file changed meanwhile is not recorded).  None when recorded, else why not."""
    if config.source is None:
        return None
    path = record_path(workdir)
    fresh = path.with_name(RECORD + ".new")
    try:
        if text is None:
            text = config.source.read_text(encoding="utf-8", errors="surrogateescape")
        statedir.write_text(fresh, _HEADER + text)
        try:
            if operator_changes(config, load_config(fresh, workdir), later=""):
                return f"{config.source} changed as it was read, so it was not recorded"
            statedir.replace(fresh, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(fresh)  # never a link followed: unlink removes the name
    except (ConfigError, OSError) as exc:
        return f"the confirmed config was not recorded: {exc}"
    return None
