"""Opening a session's durable state: resume it, refuse it, or keep it aside.

:func:`open_state` runs once a new server holds the control socket (so a
live session's state is never touched).  With ``--resume`` the saved image
is checked (:func:`refusal`) and continued; without it a leftover state is
moved aside, never applied and never deleted, and the server says so.
The recap for the orchestrator's brief is built here too.
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from choragos.board import journal
from choragos.board.journal import Image, Journal, JournalError
from choragos.board.tasks import OPEN_STATES, Task
from choragos.config.model import Config
from choragos.plural import counted
from choragos.session import daemon

RECAP_LIMIT = 40        # tasks listed per section of the recap
HANDOFF_LIMIT = 20_000  # characters of handoff.md put into the brief


class ResumeRefused(Exception):
    """``--resume`` cannot continue this state; the message says why and what to do."""


@dataclass
class Opened:
    """A session's durable state as opened: its journal, and the image a resume restores."""

    journal: Journal
    restore: Image | None = None   # what to rebuild, as it was when the journal ended
    notices: list[str] = field(default_factory=list)


def config_label(config: Config) -> str:
    return str(config.source) if config.source else "built-in"


def open_state(workdir: Path, config: Config, resume: Path | bool,
               compact_every: int = journal.COMPACT_EVERY, salvage: bool = False) -> Opened:
    """The journal this server writes, and the image to restore when resuming
    (with ``salvage``, from every readable record of a damaged journal)."""
    home = journal.state_dir(workdir)
    if resume:
        source = home if resume is True else Path(resume).resolve()
        return _resume(home, source, config, compact_every, salvage)
    notices = _keep_aside(home, workdir)
    return Opened(Journal(home, compact_every=compact_every), None, notices)


def _resume(home: Path, source: Path, config: Config, compact_every: int,
            salvage: bool) -> Opened:
    if not journal.exists(source):
        if source != home:
            raise ResumeRefused(f"there is no saved session in {source}")
        return Opened(Journal(home, compact_every=compact_every), None,
                      ["there was no saved session to resume; this one starts afresh"])
    image, damage = _load(home, source, salvage)
    reason = refusal(image, config)
    if reason:
        raise ResumeRefused(reason)
    notices = [_salvaged(home, source, image, damage)] if damage else []
    if source != home:
        _keep_aside(home, home.parent.parent)
        journal.move_state(source, home)
        with contextlib.suppress(OSError):
            source.rmdir()  # only when nothing else was kept there
    saved = copy.deepcopy(image)
    notices.insert(0, f"resuming the session that ran as pid {image.pid} "
                      f"({_state_words(image)}, last written at {_clock(image.last_t)})")
    return Opened(Journal(home, image, compact_every=compact_every), saved, notices)


def _load(home: Path, source: Path, salvage: bool) -> tuple[Image, list[journal.Damage]]:
    """The image to resume, or ResumeRefused with the way out; nothing is written."""
    fresh = ("`choragos serve` without --resume to start afresh (the old state is kept "
             "aside, not deleted)")
    try:
        if salvage:
            return journal.load_readable(source)
        return journal.load(source), []
    except journal.NotAFile as exc:
        raise ResumeRefused(f"cannot resume: {exc}") from None
    except journal.JournalDamaged as exc:
        where = "" if source == home else f" {os.path.relpath(source, home.parent.parent)}"
        raise ResumeRefused(
            f"cannot resume: {exc}, which no crash leaves, so nothing was cut or changed. "
            f"Run `choragos serve --resume{where} --salvage` to continue from every "
            f"readable record (the damaged journal is kept aside as it is), or {fresh}"
        ) from None
    except (JournalError, OSError) as exc:
        raise ResumeRefused(f"cannot resume: {exc}. Run {fresh}") from None


def _salvaged(home: Path, source: Path, image: Image, damage: list[journal.Damage]) -> str:
    """Keep the damaged state as it is, then start its journal afresh from
    the readable records (a snapshot of them): the next start finds no damage."""
    kept = _kept_path(home)
    journal.copy_state(source, kept)
    os.close(journal.rewrite(source, image))
    first = damage[0]
    count = len(damage)
    return (f"{count} damaged record{'' if count == 1 else 's'} of {source / journal.JOURNAL} "
            f"skipped (the first at byte {first.offset}: {first.why}); the state as it was "
            f"is kept in {os.path.relpath(kept, home.parent.parent)}")


def refusal(image: Image, config: Config) -> str | None:
    """Why ``config`` cannot continue ``image``, with the way out; None when it can."""
    now, then = config_label(config), image.config
    handed_to = (image.handoff or {}).get("config")
    fresh = "or run `choragos serve` to start afresh (the old state is kept aside)"
    if then and now not in (then, handed_to):
        wanted = handed_to or then
        return (f"cannot resume: the saved session ran with the config {then}, this one "
                f"uses {now}. Run `choragos serve --resume --config {wanted}`, {fresh}")
    if image.handoff:
        return None  # a new team after a handoff keeps dropped roles as history
    names = {role.name for role in config.roles}
    dropped: dict[str, list[str]] = {}
    for task in image.tasks.values():
        if task["role"] not in names and task["state"] in _OPEN:
            dropped.setdefault(task["role"], []).append(task["id"])
    if dropped:
        which = "; ".join(f"{role} ({', '.join(ids)})" for role, ids in dropped.items())
        return (f"cannot resume: the config no longer has roles that still have open "
                f"tasks: {which}. Put them back in {now}, or hand the session over with "
                f"`choragos handoff --config NEW` from a running session, {fresh}")
    return None


_OPEN = frozenset(str(state) for state in OPEN_STATES)


def _keep_aside(home: Path, workdir: Path) -> list[str]:
    """Rename a leftover state out of the way; say where it went and why.
    Its task files stay where they are: a new session numbers its tasks on
    from the directory's highest id, so it never writes over one of them."""
    if not journal.exists(home):
        return []
    try:
        image = journal.load(home)
    except journal.NotAFile:
        raise  # no session's state: nothing to keep, and nothing to start on
    except (JournalError, OSError) as exc:
        image, damaged = None, str(exc)
        salvage = " --salvage" if isinstance(exc, journal.JournalDamaged) else ""
    else:
        damaged = salvage = ""
    notices = []
    if image is not None and not image.stopped and image.pid and not daemon.alive(image.pid):
        notices.append(f"the session that ran as pid {image.pid} died at "
                       f"{_clock(image.last_t)}")
    if image is not None and image.empty and not notices:
        _discard_empty(home)
        return []
    kept = _kept_path(home)
    journal.move_state(home, kept)
    where = os.path.relpath(kept, workdir)
    what = f"unreadable: {damaged}" if damaged else _state_words(image)
    notices.append(f"a previous session's state ({what}) was kept in {where}, not applied; "
                   f"to resume it, stop this session and run "
                   f"`choragos serve --resume {where}{salvage}`")
    return notices


def kept_states(workdir: Path) -> list[tuple[Path, str]]:
    """The states kept aside in ``workdir``, newest first, each with what it
    holds ("3 tasks, 1 open", or why it cannot be read)."""
    home = journal.state_dir(workdir)
    found = []
    for path in sorted(home.parent.glob(f"{home.name}.kept-*"), reverse=True):
        if not path.is_dir() or not journal.exists(path):
            continue
        try:
            words = _state_words(journal.load(path))
        except (JournalError, OSError) as exc:
            words = f"unreadable: {exc}"
        found.append((path, words))
    return found


def resume_hint(workdir: Path) -> str | None:
    """With no session running in ``workdir``: the sentence that names
    ``serve --resume`` when the last session's state is saved there (a plain
    ``serve`` would keep it aside instead), or None when there is nothing to
    resume.  Said wherever "no session" is, so a person who stopped a
    session, or lost it to a crash, is not steered into starting afresh."""
    home = journal.state_dir(workdir)
    if not journal.exists(home):
        return None
    try:
        image = journal.load(home)
    except (JournalError, OSError) as exc:
        words = f"unreadable: {exc}"
    else:
        if image.empty:
            return None  # the next serve discards it: nothing anyone was told about
        words = _state_words(image)
    return (f"the last session here is saved ({words}): `choragos serve --resume` "
            "carries it on; a plain `choragos serve` starts afresh and keeps it aside")


def left_open(tasks: list[Task]) -> dict[str, str]:
    """What ``shutdown`` adds to its answer when tasks are still open: said
    now, since a later plain ``serve`` keeps them aside, never resumes them."""
    left = [task.id for task in tasks if task.is_open]
    if not left:
        return {}
    shown = ", ".join(left[:5]) + (", …" if len(left) > 5 else "")
    return {"message": f"{counted(len(left), 'task')} still open ({shown}); `choragos serve "
                       f"--resume` carries {'it' if len(left) == 1 else 'them'} on"}


# The advice a "no session" message ends with, wrong when there is a state to resume.
_START_ADVICE = ("; start one with `choragos serve`",
                 " (it may have crashed; `choragos serve` starts a new one)")


def with_resume_hint(message: str, workdir: Path | None) -> str:
    """A "no session" ``message`` whose advice to start one names ``serve
    --resume`` instead, when ``workdir`` holds a state to resume."""
    hint = resume_hint(workdir) if workdir is not None else None
    if hint is None:
        return message
    for advice in _START_ADVICE:
        message = message.replace(advice, "")
    return f"{message}; {hint}"


def _discard_empty(home: Path) -> None:
    """A state with no task and nothing queued holds nothing anyone was told about."""
    for name in (journal.JOURNAL, journal.SNAPSHOT):
        with contextlib.suppress(FileNotFoundError):
            (home / name).unlink()


def _kept_path(home: Path) -> Path:
    """A new name beside ``home`` for a state kept aside: state.kept-<date>-<time>."""
    return _unused(home.with_name(f"{home.name}.kept-{time.strftime('%Y%m%d-%H%M%S')}"))


def _unused(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _state_words(image: Image) -> str:
    open_tasks = sum(1 for t in image.tasks.values() if t["state"] in _OPEN)
    count = len(image.tasks)
    return f"{count} task{'' if count == 1 else 's'}, {open_tasks} open"


def _clock(t: float) -> str:
    return time.strftime("%H:%M", time.localtime(t)) if t else "an unknown time"


# -- what the orchestrator is told ---------------------------------------------------------

def recap(image: Image) -> str:
    """The orchestrator's recap of a resumed session, as a brief section."""
    tasks = list(image.tasks.values())
    done = [t for t in tasks if t["state"] == "done"]
    flight = [t for t in tasks if t["state"] in _OPEN and t["state"] != "gated"]
    gated = [t for t in tasks if t["state"] == "gated"]
    ended = [t for t in tasks if t["state"] in ("failed", "blocked", "rejected")]
    lines = ["## This session was resumed", "",
             f"choragos restarted this session from its journal (the previous server, pid "
             f"{image.pid}, last wrote at {_clock(image.last_t)}). The board is as it was.",
             ""]
    lines += _section("Done", done, lambda t: t.get("summary") or t["text"])
    lines += _section("In flight (the worker has it again)", flight,
                      lambda t: f"{t['state']}: {t['text']}")
    lines += _section("Waiting at a gate for the operator", gated, lambda t: t["text"])
    lines += _section("Failed, blocked or rejected", ended,
                      lambda t: f"{t['state']}: {t.get('note') or t.get('summary') or ''}")
    lines += ["Do not re-delegate in-flight tasks unless you decide to: their workers "
              "have them again and will report as usual. `choragos board` shows every "
              "task.", ""]
    return "\n".join(lines)


def _section(title: str, tasks: list[dict], text) -> list[str]:
    if not tasks:
        return []
    shown = tasks[-RECAP_LIMIT:]
    lines = [f"### {title}", ""]
    if len(tasks) > len(shown):
        lines.append(f"- ({len(tasks) - len(shown)} earlier ones not listed)")
    for task in shown:
        words = " ".join(str(text(task)).split())[:200]
        lines.append(f"- {task['id']} ({task['role']}): {words}")
    return [*lines, ""]


def handoff_section(workdir: Path) -> str:
    path = Path(workdir) / ".choragos" / "handoff.md"
    try:  # never through a link: an agent wrote this file
        text = journal.read_private(path).decode("utf-8", errors="replace")
    except (OSError, JournalError):  # JournalError: not a regular file
        return ""
    if len(text) > HANDOFF_LIMIT:
        text = text[:HANDOFF_LIMIT] + "\n\n(cut here; read .choragos/handoff.md for the rest)"
    return ("## Handoff from the previous team\n\nThe team before you wrote this in "
            ".choragos/handoff.md when it ended the session:\n\n" + text.strip() + "\n")


def memory_section(workdir: Path) -> str:
    if not (Path(workdir) / ".choragos" / "memory.md").is_file():
        return ""
    return ("## Project memory\n\nRead .choragos/memory.md before you plan: it is what "
            "earlier sessions learned about this project. When you learn something the "
            "next team must know, append a dated entry to it.\n")
