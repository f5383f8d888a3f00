"""``choragos serve``: run a session in this directory.

- ``serve``: start the session server in the background (it owns the agents'
  PTYs, the actors and the deck) and attach this terminal to it, like tmux.
  Detaching (``prefix d``) leaves it running; ``choragos attach`` comes back.
- ``serve --detach``: start it and return once its orchestrator has booted,
  or say why it could not start (exit 1, the session stopped).
- ``serve --headless``: run in the foreground without a deck (servers, tests,
  CI), logging to stderr and ``.choragos/logs/server.log``, until SIGTERM,
  SIGINT or ``choragos shutdown``.
- ``serve --foreground``: the server with its deck, in the foreground and
  without a terminal of its own (for service managers); attach from elsewhere.
- ``serve --resume [STATE]``: continue the session saved in ``.choragos/state``
  (or in a state kept aside), with any of the modes above; ``--salvage``
  continues a damaged journal from every readable record.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import logging
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

from choragos import __version__, statedir
from choragos.cli import _client
from choragos.cli._quickargs import TRUE, VALUE, Option, quick
from choragos.config.model import ConfigError, load_config
from choragos.control.paths import socket_path
from choragos.gitstore import worktrees

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from choragos.session import confirmed

# Read without argparse (:mod:`choragos.cli._quickargs`) in their plain
# spellings: argparse with gettext is some 5 ms of the client before it starts
# the server, which keeps them (it is the client's fork).  ``--resume``, which
# takes an optional value, and anything unusual go to argparse.
OPTIONS = (
    Option("--config", VALUE, metavar="CONFIG", help="config file (default ./.choragos.toml)"),
    Option("--detach", TRUE, group="mode",
           help="start the session in the background and return"),
    Option("--headless", TRUE, group="mode", help="run in the foreground with no deck"),
    Option("--foreground", TRUE, group="mode",
           help="run the server and its deck in the foreground (attach from another "
                "terminal)"),
    Option("--dir", VALUE, metavar="DIR",
           help="the project directory (default: the current directory)"),
    Option("--loosen", TRUE,
           help="start although the config loosens what only you decide (gates, budgets, "
                "what a role runs, ...) since the last session here ran: you made those "
                "changes"),
)
PATHS = ("config", "dir")


def parse_args(argv: list[str]) -> argparse.Namespace | SimpleNamespace:
    args = quick(argv, OPTIONS)
    if args is not None and any(getattr(args, name) == "" for name in PATHS):
        args = None  # argparse says what is wrong with an empty path (see arguments)
    if args is not None:
        args.resume, args.salvage = False, False
    else:
        parser = arguments("serve")
        args = parser.parse_args(argv)
        if args.salvage and not args.resume:
            parser.error("--salvage goes with --resume")
    for name in PATHS:  # as argparse's type=Path did
        if isinstance(getattr(args, name), str):
            setattr(args, name, Path(getattr(args, name)))
    return args


def arguments(verb: str) -> argparse.ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    from choragos.cli._argparser import named

    parser = _client.bare_parser(verb, "Run a choragos session in this directory.")
    _client.add_options(parser, OPTIONS)
    for action in parser._actions:
        if action.dest in PATHS:  # '' would be the current directory: a slip, not a choice
            action.type = named
    parser.add_argument("--resume", nargs="?", const=True, default=False, type=Path,
                        metavar="STATE",
                        help="continue the saved session (.choragos/state, or a state "
                             "kept aside) instead of starting afresh")
    parser.add_argument("--salvage", action="store_true",
                        help="with --resume: continue a damaged journal from every readable "
                             "record (the damaged state is kept aside as it is)")
    return parser


class InertFormatter(logging.Formatter):
    """Log lines with every escape made visible, line by line (a traceback
    keeps its lines): a workdir, a role's reason or a config value holding an
    escape sequence reaches the terminal (stderr, `tail server.log`) as text."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(map(_client.inert, super().format(record).split("\n")))


def setup_logging(workdir: Path, to_stderr: bool = True) -> Path:
    path = workdir / ".choragos" / "logs" / "server.log"
    fmt = InertFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    # Never closed, not even by logging's own shutdown at exit: a daemon
    # thread's last line (a hard stop's, a dying actor's) still lands then.
    handlers: list[logging.Handler] = [logging.StreamHandler(statedir.open_append(path))]
    if to_stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)
    logging.getLogger("pykka").setLevel(logging.WARNING)
    logging.getLogger("urwid").setLevel(logging.WARNING)
    return path


EXIT_INTERRUPTED = 128 + signal.SIGINT  # as a shell reports a program ctrl-c ended
HARD_STOP_AFTER = 60.0  # longer than a clean stop ever takes (3 s grace, 30 s actors)


def install_signals(stop, hard_stop=None) -> None:
    """A signal stops the session; if the clean stop is stuck, ``hard_stop``
    runs after HARD_STOP_AFTER seconds, so SIGTERM always ends the process."""
    armed = []

    def on_signal(signum, frame) -> None:
        # The stop's flags are set from a thread of their own.  This handler
        # runs on the main thread between two of its bytecodes, perhaps inside
        # an Event's wait on the very flag the stop sets, holding that Event's
        # lock (not reentrant): a set() from here waited for it for ever.  Seen
        # as a detached start's SIGTERM that hung the server, and with it every
        # later stop (the core's set() queued behind the same lock).
        try:
            threading.Thread(target=stop, name="signal-stop", daemon=True).start()
        except RuntimeError:  # the interpreter is exiting: no new thread, no wait either
            stop()
        if hard_stop is not None and not armed:
            armed.append(threading.Timer(HARD_STOP_AFTER, hard_stop))
            armed[0].daemon = True
            armed[0].start()
        # Said after the stop, never before it: the signal may come while this
        # (the main) thread is writing a log line to the same stream, and a
        # second write from here raises (a reentrant call); raised before the
        # stop, it left the session running (seen beside a full run).  The
        # stop is logged as the session ends all the same.
        with contextlib.suppress(RuntimeError):
            logging.getLogger("choragos").info("signal %d: stopping the session", signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)


def write_stacks_to(log_path: Path) -> None:
    """Every thread's stack goes to the server log on SIGUSR1 (stuck-actor
    triage), and on a crash in C code (SIGSEGV, SIGBUS, SIGFPE, SIGABRT,
    SIGILL) just before the process dies, so no crash is silent."""
    dump = statedir.open_append(log_path)  # open for the server's whole life
    faulthandler.enable(file=dump, all_threads=True)
    # Not faulthandler.register: it dumps from inside the C signal handler, on
    # whichever thread took the signal, and walks the other threads' frames
    # while they run; a thread starting or ending meanwhile can crash the
    # server.  A Python handler runs in the main thread holding the
    # interpreter's lock, so every other thread's stack holds still.  The main
    # thread only waits (for a stop, or in the deck's loop), so it runs at once.
    signal.signal(signal.SIGUSR1,
                  lambda signum, frame: faulthandler.dump_traceback(dump, all_threads=True))


def run(argv: list[str], verb: str = "serve") -> int:
    try:
        return _run(argv, verb)
    finally:
        collector_on()  # on every way out too: a refused start, --help


def collector_on() -> None:
    """The cyclic collector on again after the start (``choragos serve``
    turned it off as it began, in choragos/cli/main.py), with every object
    made so far moved into its oldest generation, not traversed: frozen
    and let go again at once (two list splices).  The next collections then
    look at new objects only; the start's, and what garbage it left, wait
    for the next full collection, which comes as it would have."""
    gc.freeze()
    gc.unfreeze()
    gc.enable()


def _run(argv: list[str], verb: str) -> int:
    try:
        args = parse_args(argv)
    except _client.Failure as failure:  # a usage error, said as every verb says one
        print(f"choragos {verb}: {_client.said(failure.message)}", file=sys.stderr)
        return failure.code
    except SystemExit as leaving:  # --help
        return leaving.code if isinstance(leaving.code, int) else _client.EXIT_USAGE
    if args.dir is not None and not os.path.isdir(args.dir):  # never raises
        print(f"choragos {verb}: --dir {_client.inert(args.dir)} is not a directory; give "
              "the project's folder", file=sys.stderr)
        return _client.EXIT_USAGE
    workdir = (args.dir or Path.cwd()).resolve()
    if isinstance(args.resume, Path):
        args.resume = workdir / args.resume  # as the kept-aside notice names it
    try:
        config = load_config(args.config or _handed_off_config(args.resume, workdir,
                                                               args.salvage), workdir)
    except ConfigError as exc:
        for line in str(exc).splitlines():  # every error, then the doctor hint
            print(_client.inert(line), file=sys.stderr)
        return 2
    interactive = not (args.detach or args.headless or args.foreground)
    if interactive and not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("choragos serve: the deck needs a terminal; use --detach to start the session "
              "in the background or --headless to run it without a deck", file=sys.stderr)
        return 2
    for warning in config.warnings:
        print(f"warning: {_client.inert(warning)}", file=sys.stderr)
    refusal = statedir.check(workdir) or worktree_refusal(config, workdir)
    if refusal:
        print(f"choragos serve: {_client.inert(refusal)}", file=sys.stderr)
        return 2
    from choragos.session import confirmed

    # Before anything is moved or opened: a loosening an agent may have
    # written while the last session ran waits for the operator's word.
    checked = confirmed.check(config, workdir)
    if checked.loosened and not args.loosen:
        refusal = confirmed.refusal(config, checked.loosened, verb, argv)
        print(f"choragos {verb}: {_client.inert(refusal)}", file=sys.stderr)
        return 2
    start = Start(args.resume, args.salvage, checked)
    if args.headless:
        write_stacks_to(setup_logging(workdir))
        return _serve(config, workdir, start=start)
    cols, rows = _terminal_size()
    if args.foreground:
        return _serve(config, workdir, deck=(cols, rows), start=start)
    return _start_background(config, workdir, cols, rows, attach=interactive, start=start)


class Start(NamedTuple):
    """How the session starts: resumed or not, and its config as checked
    against the last confirmed one (choragos/session/confirmed.py)."""

    resume: Path | bool = False
    salvage: bool = False
    checked: confirmed.StartCheck | None = None


FRESH = Start()


def _handed_off_config(resume: Path | bool, workdir: Path,
                       salvage: bool = False) -> Path | None:
    """After ``handoff --config NEW``, a plain ``serve --resume`` runs the new team."""
    if not resume:
        return None
    from choragos.board import journal

    source = journal.state_dir(workdir) if resume is True else Path(resume)
    read = (lambda path: journal.load_readable(path)[0]) if salvage else journal.load
    try:
        image = read(source) if journal.exists(source) else None
    except (journal.JournalError, OSError):
        return None  # the resume itself says what is wrong with it
    config = (image.handoff or {}).get("config") if image else None
    return Path(config) if config and config != "built-in" else None


def _compact_every() -> int:
    from choragos.board import journal

    value = os.environ.get("CHORAGOS_JOURNAL_COMPACT", "")
    return int(value) if value.isdigit() and int(value) > 0 else journal.COMPACT_EVERY


def worktree_refusal(config, workdir: Path) -> str | None:
    """``worktree = true`` needs a git checkout with a commit; the reason if not."""
    wanting = [index for index, spec in enumerate(config.roles, 1) if spec.worktree]
    if not wanting:
        return None
    reason = worktrees.refusal(workdir)
    if reason is None:
        return None
    where = config.source.name if config.source else "config"
    return f"{where}:roles[{wanting[0]}].worktree: {reason}"


def _terminal_size() -> tuple[int, int]:
    size = shutil.get_terminal_size((160, 48))
    return max(size.columns, 20), max(size.lines, 5)


def _start_background(config, workdir: Path, cols: int, rows: int, attach: bool,
                      start: Start) -> int:
    from choragos.session import daemon

    log_path = workdir / ".choragos" / "logs" / "server.log"

    def server(ready: daemon.Ready) -> int:
        return _serve(config, workdir, deck=(cols, rows), ready=ready, to_stderr=False,
                      start=start, wait_boot=not attach)

    # The deck's client is loaded while the server starts, not after it is ready.
    started = daemon.spawn(server, workdir, log_path, meanwhile=_load_attach if attach else None)
    from choragos import classcode

    classcode.release(write=False)  # the server, this process's fork, writes it
    _leave_module_cache()
    collector_on()  # the server is started: this client only attaches now
    if not started.ok:
        fresh_line = "\n" if started.interrupted else ""  # after the terminal's "^C"
        print(f"{fresh_line}choragos serve: {_client.inert(started.reason)}", file=sys.stderr)
        return EXIT_INTERRUPTED if started.interrupted else 1
    info = started.info or {}
    for notice in info.get("notices") or []:
        print(f"choragos: {_client.inert(notice)}", file=sys.stderr)
    if not attach:
        print(f"choragos: session started in {_client.inert(workdir)} "
              f"(pid {info.get('pid', '?')}); "
              "`choragos attach` shows the deck")
        return 0
    from choragos.ui.attach import attach_to

    try:
        return attach_to(Path(info["ui_socket"]), force=False, workdir=workdir)
    except KeyboardInterrupt:
        # Before the deck showed (once it does, ctrl-c is a key for the
        # agents): still the start, so what it started is stopped.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        left = daemon.stop_started(info["pid"], time.monotonic() + daemon.STOP_WAIT)
        print(f"\nchoragos serve: interrupted; "
              f"{left or 'the session it was starting was stopped'}", file=sys.stderr)
        return EXIT_INTERRUPTED


def _load_attach() -> None:
    _leave_module_cache()
    import choragos.ui.attach  # noqa: F401


def _leave_module_cache() -> None:
    """The client's own modules from here on are compiled as Python does:
    the server, its fork, writes the module cache with what they both used
    until the fork (choragos/session/modulecode.py)."""
    from choragos.session import modulecode

    modulecode.release(write=False)


BOOT_WAIT = 40.0  # what --detach waits for the orchestrator, within daemon.READY_TIMEOUT


def _boot_refusal(session, log: logging.Logger) -> str | None:
    """Why the session must not say it started (its orchestrator did not,
    or it was stopped meanwhile); None when it may.  Other roles' troubles
    become notices."""
    report = session.watch_start(BOOT_WAIT)
    start = session.config.start_role.name
    if session.stopped.is_set():
        return "the session was stopped while it was starting"
    if start in report.failed:
        who = start if start == "orchestrator" else f"{start} (the orchestrator)"
        reason = f"{who} did not start: {report.failed[start]}"
        log.error("%s; stopping the session", reason)
        return f"{reason}; the session was stopped"
    for name, why in report.failed.items():
        session.notices.append(f"{name} did not start: {why}")
    for name, why in report.unbriefed.items():
        session.notices.append(f"{name} is up but {why}")
    if start in report.waiting:
        session.notices.append(f"{start} is showing a question: `choragos attach` to answer it")
    elif start in report.booting:
        session.notices.append(f"{start} is still starting; `choragos status` says when it "
                               "is up")
    return None


# The classes' and modules' docstrings (0.4 MB the server never reads) are
# let go of this long after the start, once the first frame is drawn: the
# walk takes 5-8 ms of CPU, which the client's attach (it waits for the
# server to say it is ready) and its first frame waited for.  The start's
# caches are let go with them: what a thread (the deck's, a role's) loads
# lazily about the start's end is kept for the next start too.
LET_GO_AFTER = 2.0


class _LetGo:
    """The session's timer's target (it is told, on the timers' thread):
    lets go of the start's caches, writing them again if they compiled
    anything since the start, and of the docstrings of the classes and
    modules loaded (see choragos/session/modulecode.py); says so in the log."""

    def __init__(self, log: logging.Logger, methods: int | None, modules: int | None) -> None:
        self.log = log
        self.at_start = methods, modules  # compiled by the start (see _settle)

    def tell(self, _message: object) -> None:
        from choragos.mallocarenas import give_back
        from choragos.session import modulecode

        self.caches()
        stripped = modulecode.strip_loaded()
        # What they held (the caches' files' code, the texts) lay among what
        # the start's last 2 s allocated: its pages go back.
        give_back()
        self.log.info("docstrings let go: %d classes', %d modules' (%d bytes); functions "
                      "holding one: %d (%d bytes)", *stripped)

    def caches(self) -> None:
        """Let go of the start's caches, written again if anything was
        compiled since the start; nothing when they are let go already.
        Also called as the session stops, when that comes before the timer."""
        from choragos import classcode
        from choragos.session import modulecode

        methods, modules = classcode.release(), modulecode.release()
        if methods is not None and modules is not None:
            self.log.info("start caches let go; compiled since the start (and cached): "
                          "%d dataclasses' methods, %d modules",
                          methods - (self.at_start[0] or 0), modules - (self.at_start[1] or 0))


# How long `serve` in a terminal waits for its client's first frame before
# it starts the session's clocks, aftercare and reload actors (Session.rest:
# none of them answers anyone, and their start, some 1.4 ms of CPU, was on
# the way to that frame).  The deck's thread says when the frame is out (the
# attach server's on_client), so they never share the interpreter with its
# drawing; a client that never comes only delays them.  The other modes
# start them with the session, where they were: the caches' save then
# comes where it did, before the deck's thread loads what it loads lazily
# (its first board's cells; kept for the next start either way, see _LetGo).
REST_WAIT = 2.0
# And how long after that frame went out: started at once, their start and
# the caches' save (some 3 ms of the process's CPU) came while the
# client's terminal took the frame, and the bench's count of the server's
# CPU when it saw the frame rose by 5-7 ms in 6 of 6 pairs.
DRAWN_AFTER = 0.2


def start_notices(config, session) -> tuple[str, ...]:
    """What `serve` in a terminal says on stderr just before the deck takes
    the screen (its config's warnings, the session's notices: a previous
    state kept aside, a resume): the deck's alternate screen hides them, so
    the deck shows them too, on its first frame."""
    return (*(f"warning: {warning}" for warning in config.warnings), *session.notices)


def _hidden_at_first(config) -> tuple[str, ...]:
    """The roles the deck does not show as it starts.  Their agents spawn
    once its client's first frame is out, not beside the shown ones: on a
    machine with fewer cores than agents, twelve agents starting at once
    share the cores evenly, so the shown panes' prompts (and the deck)
    came only when every agent had started.  Held, the hidden ones start
    after the frame, on the cores the shown ones no longer need; their
    actors start with the others, so what is sent to them waits in their
    handles as for any role still booting."""
    from choragos.ui.deckstate import first_layout

    return tuple(first_layout(config).hidden())


def _settle(session, log: logging.Logger, start: Start, when: str = "") -> _LetGo:
    """The end of the start: its config recorded as the confirmed one (off
    the first frame's way, some 1-4 ms of writing and reading it back), the
    session's remaining children if they wait (see Session.rest; one that
    cannot start stops the session like any failed start), then the caches
    of the start written (let go with the modules' and classes' docstrings,
    _LetGo) and the collector on again.  The let-go, which the session's
    stop also gives its caches to."""
    _record_confirmed(session, start, log)
    try:
        if session.start_rest():
            log.info("clocks, aftercare and reload started %s", when)
    except Exception as exc:
        log.error("the session's clocks, aftercare or reload actor did not start: %s", exc)
        session.failure = f"the rest of the tree did not start: {exc}"
        session.stopped.set()
    from choragos import classcode
    from choragos.session import modulecode

    # Every dataclass and module of the start is made: written for the next
    # start (when any was compiled), the caches kept until the _LetGo.
    methods = classcode.save()
    if methods is not None:
        log.info("dataclasses' methods compiled at the start: %d (cached in %s)",
                 methods, classcode.cache_path())
    modules = modulecode.save()
    if modules is not None:
        log.info("modules compiled at the start without their functions' docstrings: "
                 "%d (cached in %s)", modules, modulecode.cache_path())
    collector_on()  # the session and its deck are made
    let_go = _LetGo(log, methods, modules)
    session.timers.after(LET_GO_AFTER, let_go, None)
    return let_go


def _said_changes(session, checked: confirmed.StartCheck) -> None:
    """The start's notices name what the file changed, since the last
    confirmed config, of what only the operator decides."""
    for notice in checked.notices(confirmed=bool(checked.loosened)):
        session.notices.append(notice)


def _record_confirmed(session, start: Start, log: logging.Logger) -> None:
    """The config this session runs with is now the confirmed one (the file
    as read at the start, not as it is now: an agent may have edited it);
    the event log says what it changed."""
    checked = start.checked
    if checked is None or checked.text is None:
        return
    from choragos.session import confirmed

    if checked.loosened or checked.tightened:
        session.events.write("config changed since the last start", loosened=checked.loosened,
                             tightened=checked.tightened, confirmed=bool(checked.loosened))

    problem = confirmed.record(session.workdir, session.config, checked.text)
    if problem:
        log.warning("%s; the next start compares the file with the config recorded before",
                    problem)
        session.events.write("confirmed config not recorded", reason=problem)


def _ended(session) -> str:
    """What the deck's client says as the session ends: why, when it failed
    (a late start failure too: the rest of the tree, after the first frame),
    so the terminal the deck leaves says it, not only the server's log."""
    from choragos.ui.framing import ENDED_REASON

    if not session.failure:
        return ENDED_REASON
    return (f"it stopped: {session.failure}; its state is kept, `choragos serve --resume` "
            "takes it up again")


def _serve(config, workdir: Path, deck: tuple[int, int] | None = None, ready=None,
           to_stderr: bool = True, start: Start = FRESH, wait_boot: bool = False) -> int:
    from choragos.session import modulecode

    modulecode.install()  # the session's modules without their functions' docstrings: see there
    from choragos.actors.session import Session, SessionOptions
    from choragos.control.server import ServerStartError
    from choragos.mallocarenas import drain_thread_cache, one_arena
    from choragos.session import daemon

    one_arena()  # before the session's threads start: see there
    if deck is not None:
        # Keys cross several threads on their way to an agent and back to the
        # screen; with a pane flooding output, each hand-over would wait up to
        # the default 5 ms for the GIL.  A shorter slice keeps typing snappy.
        sys.setswitchinterval(0.001)
        write_stacks_to(setup_logging(workdir, to_stderr=to_stderr))
    log = logging.getLogger("choragos")
    mode = "headless" if deck is None else "daemon" if ready is not None else "foreground"
    control = socket_path(workdir)
    options = SessionOptions(workdir=workdir, socket=control, mode=mode, resume=start.resume,
                             salvage=start.salvage, compact_every=_compact_every())
    session = Session(config, options)
    if start.checked is not None:
        _said_changes(session, start.checked)
    attaching = ready is not None and not wait_boot  # `serve` in a terminal
    drawn = threading.Event()  # its client's first frame went out, or a signal came meanwhile

    def stop() -> None:
        session.stopped.set()
        drawn.set()  # a stop does not wait for a client that is not coming

    install_signals(stop, session.hard_stop)
    try:
        # In a terminal the rest once the client's frame is drawn (below),
        # and the agents of the roles its deck does not show then too.
        session.start(rest=not attaching,
                      hold=(lambda: _hidden_at_first(config)) if attaching else tuple)
    except ServerStartError as exc:
        if ready is not None:
            ready.fail(str(exc))
        print(f"choragos: {_client.inert(exc)}", file=sys.stderr)
        return 1
    sidecar = daemon.Sidecar(control, dir=str(workdir), mode=mode, version=__version__,
                             roles=[role.name for role in config.roles],
                             ui_socket=str(daemon.ui_path_for(control)) if deck else None)
    ui = None
    let_go: _LetGo | None = None

    def on_client(pid: int | None) -> None:
        # A client's first frame has gone out (the deck's thread), or it left.
        if pid is not None:
            drawn.set()
        sidecar.attached(pid)

    try:
        if deck is not None:
            from choragos.ui.urwidload import load_urwid

            load_urwid()  # before the deck's modules import it: see there
            from choragos.ui.decktree import start_ui

            try:
                ui = start_ui(session, daemon.ui_path_for(control), *deck,
                              on_client=on_client,
                              notices=start_notices(config, session) if attaching else ())
            except ServerStartError as exc:
                if ready is not None:
                    ready.fail(f"the deck could not start: {exc}")
                print(f"choragos: the deck could not start: {_client.inert(exc)}",
                      file=sys.stderr)
                return 1
        sidecar.write()
        if not attaching:
            let_go = _settle(session, log, start)
        for notice in session.notices:
            print(f"choragos: {_client.inert(notice)}", file=sys.stderr)
        log.info("session running in %s (socket %s, pid %d, %s)", workdir, control,
                 os.getpid(), mode)
        if ready is not None and wait_boot:
            refusal = _boot_refusal(session, log)
            if refusal is not None:
                ready.fail(refusal)
                return 1
        if ready is not None:
            ready.ok(pid=os.getpid(), dir=str(workdir), socket=str(control),
                     ui_socket=str(daemon.ui_path_for(control)), notices=session.notices)
        elif deck is not None:
            print(f"choragos: session running in {_client.inert(workdir)} (pid {os.getpid()}); "
                  "`choragos attach` shows the deck", file=sys.stderr)
        if attaching:
            # The client attaches once it hears the server is ready, and the
            # deck's thread draws its whole frame: the rest starts after that
            # frame has gone out, not beside it.
            came = drawn.wait(REST_WAIT)  # (set by a stop too: then nothing starts)
            held = session.spawn_held()
            if held:
                log.info("the agents of %d roles the deck does not show spawned %s", len(held),
                         "after its client's first frame" if came else
                         f"when no client's frame was drawn within {REST_WAIT:g} s")
            if came:
                session.stopped.wait(DRAWN_AFTER)
            let_go = _settle(session, log, start, "after its client's first frame" if came else
                             f"when no client's frame was drawn within {REST_WAIT:g} s")
        # The start's freed blocks this thread keeps cached (up to 0.2 MB of
        # pages kept resident) go back to the heap: it only waits from here.
        drain_thread_cache()
        session.wait()  # wakes for a stop or a signal, never on a clock
    finally:
        if ui is not None:
            ui.stop(_ended(session))
        session.stop()
        if let_go is not None:
            # Stopped before the let-go's timer: what a thread compiled
            # since the start is kept for the next start all the same.
            let_go.caches()
        sidecar.remove()
    if session.failure:
        # The supervision tree gave up: the state is kept for `serve --resume`.
        log.error("session stopped: %s", session.failure)
        return 1
    log.info("session stopped")
    return 0
