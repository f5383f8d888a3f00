"""Wires a session together: start in dependency order, stop in reverse.

Order: control socket bound (the lock) → event log → timers → the session
supervisor and its children, as the table in :meth:`Session.children`
lists them (``actors/children.py`` builds it): core → notifier →
checkpointer → built-in gateway (its own supervisor; up before any role) →
the roles supervisor and one child per role, each told to spawn its agent
before its actor starts → gateway prober → listener (accepting from now on)
→ web view, when ``[web] listen`` is set; then, from :meth:`Session.start_rest`
(``serve`` calls it once its deck has drawn for the attaching client, so
their start is not on the way to the first frame), the clocks → aftercare →
the reload actor (the table in :meth:`Session.rest`).  The agents' start is
the longest part of the session's, so it begins as early as what the roles
need allows; the clocks, the aftercare and the reload actor wait only for
a task or a reload, their handles made beforehand so what the core tells
them meanwhile waits there.
Stopping runs the other way round, in a ``finally``, so the socket
disappears first (no new work), then every role's process group is
terminated in parallel, then the actors and the timer thread stop.

The roles themselves (how one is started, what a reload changes) are the
crew's (``actors/crew.py``); what anyone else may see of them, the
:class:`~actors.rolesview.RolesView`.  The tree, its restart types and
strategies are drawn in docs/architecture.md.
When the session supervisor gives up (a child failed more often than its
intensity allows), the session stops the same clean way, logs what gave up
and why, keeps its journal for ``serve --resume`` and :attr:`Session.failure`
makes ``serve`` exit non-zero.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import logging
import os
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pykka

from choragos import __version__, statedir
from choragos.actors import messages as m
from choragos.actors import threadhook
from choragos.actors.children import Child, Start, build, nested
from choragos.actors.core import CoreActor, CoreState
from choragos.actors.crew import STOP_GRACE, Crew, role_intensity
from choragos.actors.durable import JournaledBoard, Restore
from choragos.actors.gatewaygate import GatewayGate
from choragos.actors.guardrails import budget_summary
from choragos.actors.handle import Handle
from choragos.actors.latemessages import FlushTick, FlushTokens, Probe, ProberState
from choragos.actors.rolesview import RolesView
from choragos.actors.supervisor import (
    TEMPORARY,
    StopAll,
    Supervisor,
    SupervisorState,
    stop_children,
)
from choragos.actors.timers import Timers
from choragos.board import journal, taskids
from choragos.board.events import EventLog, default_path
from choragos.board.tasks import SETTLED_STATES
from choragos.config.memfloor import MemoryGate
from choragos.config.model import HOOK_KEYS, Config
from choragos.control import wire
from choragos.control.server import (
    FAULT_HOOK,
    ControlServer,
    ServerStartError,
    bind_server,
    fault_hook,
)
from choragos.gateway.client import GatewayMode, decide_session
from choragos.gateway.counts import session_path
from choragos.gateway.roles import new_session_key
from choragos.roles import selfpath
from choragos.session import resume
from choragos.session.hooks import Hooks
from choragos.session.stopflag import StopFlag
from choragos.web.access import clear_addr

if TYPE_CHECKING:
    from choragos.actors.gatewayrevival import GatewayRevival
    from choragos.actors.listener import ListenerState
    from choragos.actors.proxyrunner import ProxyRunnerState
    from choragos.actors.startwatch import StartReport
    from choragos.web.news import NewsHub

log = logging.getLogger("choragos.session")

# How many restarts each supervisor allows within PERIOD seconds before it
# gives up (the roles supervisor's is per role: see actors/crew.py).
SESSION_INTENSITY = 5
GATEWAY_INTENSITY = 5
PERIOD = 60.0
JOURNAL_SYNC_WAIT = 60.0  # the start fails if its first record is not on disk by then


def unenforced_budgets(reason: str) -> str:
    """What the start says of budgets the gateway is not there to count."""
    return (f"budgets cannot be enforced: the gateway is off ({reason}), "
            "so no tokens are counted; set `[gateway] builtin = true` in .choragos.toml "
            "and start again to count and enforce them")


# The start's notices: ``serve`` prints them on its terminal, the deck shows
# them in a dialog on its first frame, ``serve --detach`` on the terminal
# that started it (choragos/cli/serve.py).  A warning the operator must know
# of (checkpoints off, an endpoint that cannot listen, a gateway that did
# not start) is one of them, not only a line in a log nobody reads.  Here,
# not in a module of their own: every start loads this one already.
class StartNotices(list[str]):
    """The notices, in the order said (a list: they go out as JSON too)."""

    def __init__(self) -> None:
        super().__init__()
        self.open = True  # until the session's start() returns

    def warn(self, notice: str) -> None:
        """One plain sentence, what is wrong and what to do: in the server's
        log and, while the session starts, among the notices.  Said later (a
        child started again) it is the log's only: the notices were told."""
        log.warning("%s", notice)
        if self.open:
            self.append(notice)


def note_start(session: Session) -> None:
    """Before the actors: record the budgets (``report`` shows them), and say
    so if nothing can enforce them, or if admission by memory cannot work."""
    if said := session.memory_gate.off_notice():
        session.events.write("memory admission off", reason=said)
        session.notices.warn(said)
    summary = budget_summary(session.config)
    if summary is None:
        return
    session.events.write("budgets", **summary)
    if not session.gateway.on:
        why = unenforced_budgets(session.gateway.reason)
        session.events.write("config warning", message=why)
        session.notices.warn(why)


def cannot_listen(what: str, section: str, listen: str, error: OSError) -> str:
    """The notice for an endpoint (``[section] listen``) that could not bind."""
    return (f"{what} is off: cannot listen on {listen} ({error}); free that address or "
            f"change [{section}] listen, then restart the session")


def gateway_failed(problem: str) -> str:
    """The notice for a built-in gateway that did not start (its supervisor tries again)."""
    return f"{problem}; it is started again by itself, and .choragos/logs/gateway.log says why"


@dataclass
class SessionOptions:
    """How a session starts: its directory and socket, headless or with the deck, resumed or not."""

    workdir: Path
    socket: Path
    mode: str = "headless"
    cols: int = 120
    rows: int = 40
    resume: Path | bool = False  # True: this directory's saved session; a path: that one
    salvage: bool = False  # resume a damaged journal from its readable records
    compact_every: int = journal.COMPACT_EVERY


class Session:
    def __init__(self, config: Config, options: SessionOptions) -> None:
        self.config = config  # as the session started (the roles' live one: roles.config)
        self.options = options
        self.workdir = options.workdir
        self.stopped = StopFlag()
        self.events = EventLog(default_path(self.workdir))
        self.roles = RolesView(config)  # what the listener, the deck and the web view see
        self.server: ControlServer | None = None
        self.timers: Timers | None = None
        self.supervisor: pykka.ActorRef | None = None  # the top of the tree
        self.tree = SupervisorState("session", intensity=SESSION_INTENSITY, period=PERIOD)
        self.gateway_revival: GatewayRevival | None = None  # with the built-in gateway
        self.roles_tree = SupervisorState("roles", intensity=role_intensity(len(config.roles)),
                                          period=PERIOD)
        self.failure: str | None = None  # why the tree gave up, if it did
        self.core: Handle | None = None
        # Started after the roles (see children()): what the core sends them
        # from the first role's report on waits in their handles.
        self.clocks, self.aftercare = Handle("clocks"), Handle("aftercare")
        # The reload actor's likewise, when the team came from a file (the
        # built-in team has none to re-read: no reloader, the core says so).
        self.reloader = Handle("reload") if config.source else None
        self.core_state: CoreState | None = None
        self.gateway: GatewayMode = GatewayMode(False, False, "not decided yet")
        self.prober = ProberState(config.sphragis.base_url + "/metrics")
        # The built-in gateway charges a request to a role only with that role's key;
        # a new one each session, held in memory and by the gateway process only.
        self.gateway_key = new_session_key() if config.gateway.builtin else b""
        self.journal: journal.Journal | None = None
        self.memory_gate = MemoryGate(config.ui.min_free_memory)
        if config.web.listen:
            # Loaded before the session answers, so the web view is up as soon as
            # the session is; without [web] listen it is never loaded (its memory).
            import choragos.web.server  # noqa: F401
        self.restored: journal.Image | None = None  # the image being resumed
        self.notices = StartNotices()
        self.crew: Crew | None = None  # starts and stops the roles, once the state is open
        self.prober_handle: Handle | None = None
        self._gateway_server_state: ProxyRunnerState | None = None
        self.metrics = None  # the session's own /metrics, when [metrics] listen is set
        self.listening: ListenerState | None = None  # the control path the web view shares
        self.news_hub: NewsHub | None = None  # the web view's event streams, when served
        self.web = None  # the web actor's state, when [web] listen is served
        self._unhook: Callable[[], None] = lambda: None  # puts threading.excepthook back
        self.handles: dict[str, Handle] = {}  # the started children's, by name
        self._rest_started = False
        self._hold: Callable[[], Collection[str]] = tuple  # see start()
        self._held: tuple[str, ...] = ()  # the roles whose agents spawn later

    # -- start ---------------------------------------------------------------

    def start(self, *, rest: bool = True,
              hold: Callable[[], Collection[str]] = tuple) -> None:
        """Bind the socket first: a second session here must fail before it
        spawns anything or writes one line into the running session's log.
        ``rest=False`` leaves the children of :meth:`rest` to :meth:`start_rest`.
        ``hold()``: the roles whose actors start with the others but whose
        agents spawn only at :meth:`spawn_held` (or :meth:`start_rest`),
        asked once the first role's actor has started: ``serve`` holds the
        ones its deck does not show until its first frame is out (a resumed
        session spawns every role with its board back)."""
        self._hold = hold
        self.server = bind_server(self.options.socket, self.events.write)
        fault_hook("accept-loop", self.server.inject_fault)
        if os.environ.get(FAULT_HOOK):  # a test's; the web view's modules only then
            from choragos.actors.websession import install_fault_hook as install_web_fault_hook

            install_web_fault_hook(self)
        self._unhook = threadhook.install(self._thread_died)
        self.events.write("deck starting", version=__version__, pid=os.getpid(),
                          mode=self.options.mode, dir=str(self.workdir),
                          config=str(self.config.source) if self.config.source else "built-in")
        for warning in self.config.warnings:
            self.events.write("config warning", message=warning)
        self._decide_gateway()
        note_start(self)
        self._start_metrics()
        try:
            self._open_state()
            self._start_actors()
        except BaseException:
            self.stop()
            raise
        self.notices.open = False  # a warning said after this is the log's only
        if rest:
            self.start_rest()

    def start_rest(self) -> bool:
        """Start the children of :meth:`rest` (once; not once the session is
        stopping); whether this call started them.  A failure to start one
        raises, as :meth:`start` does."""
        if self._rest_started or self.stopped.is_set():
            return False
        self._rest_started = True
        self.spawn_held()  # never later than the rest
        try:
            build(self.rest(), self.supervisor, self.handles)
        except Exception:
            if self.stopped.is_set():  # stopped meanwhile: the tree is going anyway
                return False
            raise
        return True

    def _held_now(self) -> tuple[str, ...]:
        """What :meth:`start` was told to hold, kept for :meth:`spawn_held`."""
        self._held = tuple(self._hold())
        return self._held

    def spawn_held(self) -> tuple[str, ...]:
        """Spawn the agents :meth:`start` held (once; not once the session
        is stopping): the roles spawned by this call."""
        held, self._held = self._held, ()
        if self.stopped.is_set():
            return ()
        for name in held:
            self.roles.tell(name, m.Spawn())
        return held

    def _open_state(self) -> None:
        """After the socket is ours, so a live session's state is never touched."""
        try:
            opened = resume.open_state(self.workdir, self.config, self.options.resume,
                                       self.options.compact_every, self.options.salvage)
        except (resume.ResumeRefused, journal.JournalError, OSError) as exc:
            raise ServerStartError(str(exc)) from None
        self.journal, self.restored = opened.journal, opened.restore
        self.notices.extend(opened.notices)  # after the start's own (the budgets')
        for notice in opened.notices:
            self.events.write("session state", message=notice)
        self.journal.on_callback_error = self._journal_callback_failed
        self.journal.append("session", version=journal.VERSION,
                            config=resume.config_label(self.config), pid=os.getpid(),
                            resumed=self.restored is not None)
        # Made durable by the fsync thread, beside the agents' start (a sync on
        # a busy disk takes tens of ms); the listener waits for it, so nobody
        # is answered before the session's own record is on disk.
        self.journal.start()

    def _journal_synced(self) -> None:
        """Before anyone connects: the journal's records so far are on disk."""
        error = self.journal.wait_synced(JOURNAL_SYNC_WAIT)
        if error:
            raise ServerStartError(f"the session's journal is not on disk: {error}")

    def _journal_callback_failed(self, error: str) -> None:
        """On the fsync thread, which goes on: say what was not carried out."""
        self.events.write("journal callback failed", error=error)

    def _thread_died(self, died: threadhook.ThreadDied) -> None:
        """A stray thread's death goes to the top of the tree, or straight to
        the event log when the tree is not up."""
        top = self.supervisor
        if top is not None:
            with contextlib.suppress(pykka.ActorDeadError):
                top.tell(died)
                return
        self.events.write("thread died", thread=died.thread, error=died.error)

    def _decide_gateway(self) -> None:
        """The gateway is decided once; a reload does not turn the gateway on or off."""
        self.gateway = decide_session(self.config)
        if self.gateway.on:
            self.events.write("gateway on", reason=self.gateway.reason,
                              addr=self.config.sphragis.addr, enforced=self.gateway.enforced)
            return
        self.events.write("gateway off", reason=self.gateway.reason)
        if self.config.sphragis.enabled is None:
            # An optional feature nobody asked for: a note, not a warning.
            log.info("gateway off: %s", self.gateway.reason)

    def _start_metrics(self) -> None:
        """``[metrics] listen``: fail soft, the session runs without its endpoint."""
        listen = self.config.metrics.listen
        if not listen:
            return
        from choragos.session.metrics import SessionMetrics

        metrics = SessionMetrics(self._ask_core)
        try:
            metrics.serve(listen)
        except OSError as exc:
            self.events.write("metrics off", listen=listen, reason=str(exc))
            self.notices.warn(cannot_listen("the session's /metrics", "metrics", listen, exc))
            return
        self.events.listeners.append(metrics.hear)
        self.metrics = metrics
        self.events.write("metrics on", listen=listen)

    def _ask_core(self, request: dict) -> dict:
        """A control command through the core's registry, as the socket sends it."""
        if self.core is None:
            raise pykka.Timeout("the session is still starting")
        parsed = wire.parse_request(json.dumps(request).encode())
        return self.core.ask(m.Dispatch(parsed), timeout=2.0)

    def _start_actors(self) -> None:
        self.timers = Timers()
        self.supervisor = Supervisor.start(self.tree, on_event=self.events.write,
                                           on_give_up=self._gave_up)
        self.crew = Crew(self.config, self.workdir, self.options.socket,
                         (self.options.cols, self.options.rows), self.roles, self.events.write,
                         self.config.sphragis.agent_url if self.gateway.on else None,
                         self.gateway_key, self.memory_gate, self.restored)
        if self._briefs_first():
            self.crew.write_briefs(self.config)
        selfpath.write_shim(self.workdir)
        self.core_state = CoreState(
            config=self.config, workdir=self.workdir, events=self.events,
            on_shutdown=self.stopped.set, gateway=self._gateway_label(),
            board=JournaledBoard(journal=self.journal,
                                 next_number=taskids.first_free(self.workdir)),
            journal=self.journal, memory_gate=self.memory_gate, hooks=self._hooks(),
            trees=self.crew.trees, role_env=self.roles.env_of, notices=self.notices,
            clocks=self.clocks, aftercare=self.aftercare, reloader=self.reloader)
        self.handles = build(self.children(), self.supervisor)

    # -- the tree ------------------------------------------------------------------

    def children(self) -> tuple[Child, ...]:
        """The session supervisor's children, in start order (see actors/children.py)."""
        core, sup, on_event = ("core",), self.supervisor, self.events.write
        return (
            Child("core", self._core, started=self._core_started),
            Child("notifier", self._notifier, needs=core, started=self._notifier_started),
            Child("checkpointer", self._checkpointer, needs=core,
                  started=self._checkpointer_started),
            self._gateway_subtree(),
            # The roles as soon as what they may need is up: their agents'
            # start is the longest part of the session's (and beside it the
            # rest of the tree starts, the deck loads).
            nested("roles", self.roles_tree, sup, on_event, started=self._roles_started),
            # Before the listener: an enforced gateway refuses the agents'
            # requests until the prober's first probe finds it up.
            Child("gateway", self._prober, needs=core, started=self._prober_started),
            Child("listener", self._listener, needs=core),
            Child("web", self._web, needs=("listener",)),
        )

    def _gateway_subtree(self) -> Child:
        """The built-in gateway under a temporary supervisor of its own, tried
        again after a cool-down when it is given up (actors/gatewayrevival.py,
        loaded only then)."""
        table = (Child("gateway-server", self._gateway_server, needs=("core", "builtin-gateway"),
                       started=self._gateway_server_started),)
        if not self.config.gateway.builtin:
            return nested("builtin-gateway", SupervisorState("builtin-gateway"), self.supervisor,
                          self.events.write, wanted=False, restart=TEMPORARY, children=table)
        from choragos.actors.gatewayrevival import GatewayRevival

        self.gateway_revival = GatewayRevival(self, intensity=GATEWAY_INTENSITY, period=PERIOD,
                                              children=table)
        return self.gateway_revival.subtree.child()

    def rest(self) -> tuple[Child, ...]:
        """The children :meth:`start_rest` starts after the others, in order:
        none of them is needed to answer anyone, so ``serve`` starts them once
        its first frame is drawn."""
        core = ("core",)
        return (
            Child("clocks", self._clocks, needs=core, handle=self.clocks),
            Child("aftercare", self._aftercare, needs=core, handle=self.aftercare),
            Child("reload", self._reload, needs=("core", "roles"), handle=self.reloader),
        )

    def _core(self, deps: Mapping[str, Handle]) -> Start:
        state, sup = self.core_state, self.supervisor
        return lambda h: CoreActor.start(state, sup)

    def _core_started(self, handle: Handle) -> None:
        self.core = handle
        self.core_state.timers, self.core_state.me = self.timers, handle
        self.crew.core, self.crew.timers = handle, self.timers
        self.crew.supervisor = self.supervisor
        if self.gateway_revival is not None:
            self.core_state.restart_gateway = self.gateway_revival.restart

    # The notifier's and the web view's modules are loaded only when their
    # section is set: a session without them starts (and draws) sooner.
    def _notifier(self, deps: Mapping[str, Handle]) -> Start | None:
        if not self.config.notify.url:
            return None
        from choragos.actors.notifier import notifier

        return notifier(self)

    def _notifier_started(self, handle: Handle) -> None:
        from choragos.actors.notifier import notifier_started

        notifier_started(self, self.core_state.hooks, handle)

    # The clocks', the aftercare's, the prober's and the listener's actors are
    # loaded as they start, after the roles' spawns (their messages are in
    # actors/latemessages.py and actors/messages.py); the clocks' and the
    # aftercare's with the reload's after the first frame (see rest()).
    def _clocks(self, deps: Mapping[str, Handle]) -> Start:
        from choragos.actors.clocks import ClockActor, ClockState

        state, core, timers, sup = ClockState({}), deps["core"], self.timers, self.supervisor
        return lambda h: ClockActor.start(state, core, timers, h, sup)

    def _checkpointer(self, deps: Mapping[str, Handle]) -> Start | None:
        if not self.config.checkpoints.enabled:
            self.events.write("checkpoints off", reason="[checkpoints] enabled = false")
            return None
        # Here, not at the top: a session with checkpoints off never loads the
        # store (see choragos/actors/aftercare.py).
        from choragos.actors.checkpointer import CheckpointerActor
        from choragos.gitstore.checkpoints import CheckpointStore, NotARepository

        try:
            store = CheckpointStore(self.workdir, watch=True)  # long-lived: it can watch
        except NotARepository as exc:
            self.events.write("checkpoints off", reason=str(exc))
            self.notices.warn(f"checkpoints are off: {exc}")
            return None
        removed = store.remove_stale_temporaries()
        if removed:
            self.events.write("checkpoint temporaries removed", count=removed)
        core, events, sup = deps["core"], self.events, self.supervisor
        trees = self.crew.remote_trees
        return lambda h: CheckpointerActor.start(store, core, events, sup, trees)

    def _checkpointer_started(self, handle: Handle) -> None:
        self.core_state.checkpointer = handle
        handle.tell(m.Prune(self.config.checkpoints.keep, _tasks_at_work(self.restored)))

    def _aftercare(self, deps: Mapping[str, Handle]) -> Start:
        from choragos.actors.aftercare import AftercareActor

        workdir, core, sup = self.workdir, deps["core"], self.supervisor
        behalf, fetchers = self.roles.behalf, self.crew.fetchers
        return lambda h: AftercareActor.start(workdir, core, sup, behalf, fetchers)

    def _gateway_server(self, deps: Mapping[str, Handle]) -> Start:
        """The built-in gateway, listening before any role can send it a request."""
        from choragos.actors.proxyrunner import ProxyRunner, ProxyRunnerState
        from choragos.gateway import budgetgate

        state = self._gateway_server_state
        if state is None:  # the first; a gateway started again goes on with its counts
            logs = statedir.make_dir(self.workdir / ".choragos" / "logs")
            state = self._gateway_server_state = ProxyRunnerState(
                self.config.gateway, self.prober, logs / "gateway.log", self.events.write,
                session_path(self.workdir), self.gateway_key,
                policy=budgetgate.policy(self.config),
                resumed=None if self.restored is None else dict(self.restored.tokens))
        core, sup = deps["core"], deps["builtin-gateway"]
        return lambda h: ProxyRunner.start(state, core, sup)

    def _gateway_server_started(self, handle: Handle) -> None:
        from choragos.actors.proxyrunner import READY_TIMEOUT, Ready

        self.core_state.gateway_runner = handle
        try:
            problem = handle.ask(Ready(), timeout=READY_TIMEOUT + 5)
        except Exception as exc:  # it crashed while starting, maybe for good
            problem = self._gateway_server_state.problem or f"{type(exc).__name__}: {exc}"
        if problem:
            self.events.write("gateway failed", reason=problem)
            self.notices.warn(gateway_failed(problem))

    def _prober(self, deps: Mapping[str, Handle]) -> Start | None:
        if not self.gateway.on:
            return None
        from choragos.actors.gatewayprober import GatewayProber

        state, core, timers, sup = self.prober, deps["core"], self.timers, self.supervisor
        return lambda h: GatewayProber.start(state, core, timers, h, sup)

    def _prober_started(self, handle: Handle) -> None:
        self.prober_handle = handle
        handle.tell(Probe())
        self.timers.after(30.0, handle, FlushTick())

    def _roles_started(self, handle: Handle) -> None:
        """One actor per role, each spawning its agent as it starts; a resumed
        session's roles spawn once the board they resume is back.  Before
        anyone connects either way."""
        self.crew.roles_sup = handle
        if self.restored is None:
            self.crew.start_all(self.config.roles, self.core_state.seats, first=(m.Spawn(),),
                                hold=self._held_now)
        else:
            self.crew.start_all(self.config.roles, self.core_state.seats)
            self.core.ask(Restore(self.restored), timeout=30)
            for name in self.roles.names():
                self.roles.tell(name, m.Spawn())
                if self.restored.roles.get(name, {}).get("paused"):
                    self.roles.tell(name, m.Pause())
        if not self._briefs_first():
            self.crew.write_briefs(self.config)

    def _briefs_first(self) -> bool:
        """Whether the roles' briefs are written before their agents spawn.
        An agent reads its brief only when told to, once it has booted (its
        prompt, then at least rolescreen's BOOT_QUIET, 1.2 s, of quiet), so
        they are written right after the spawns, beside the agents' start:
        some 3 ms of this thread for 12 roles that no longer come before the
        first agent.  A remote role's seat sends its brief as it is prepared,
        before its actor starts, so with one they are written first."""
        return any(spec.host for spec in self.config.roles)

    def _reload(self, deps: Mapping[str, Handle]) -> Start | None:
        if not self.config.source:  # the built-in team: no file to re-read
            return None
        from choragos.actors.reload import ReloadActor

        crew, sup = self.crew, self.supervisor
        return lambda h: ReloadActor.start(crew, sup)

    def _listener(self, deps: Mapping[str, Handle]) -> Start:
        from choragos.actors.listener import ListenerActor, ListenerState

        self._journal_synced()
        gate = GatewayGate(self.gateway, self.prober, self.events.write)
        self.listening = listening = ListenerState(self.server, deps["core"], gate, self.roles,
                                                   self.journal)
        self.crew.serve_remote(listening.dispatch_as)
        sup = self.supervisor
        return lambda h: ListenerActor.start(listening, h, sup)

    def _web(self, deps: Mapping[str, Handle]) -> Start | None:
        if not self.config.web.listen:
            clear_addr(self.workdir)  # a crashed run's address is no one's now
            return None
        from choragos.actors.websession import WebAccess, web
        from choragos.web.news import NewsHub

        self.news_hub = self.news_hub or NewsHub()
        made = web(self, self.news_hub, WebAccess(self.roles, self.listening, self.workdir))
        if made is None:
            return None
        self.web, start = made
        return start

    def _gave_up(self, reason: str) -> None:
        """The top of the tree gave up (on the supervisor's thread): stop cleanly."""
        self.failure = reason
        log.error("the session is stopping: %s", reason)
        self.events.write("session gave up", reason=reason)
        self.stopped.set()

    def _hooks(self) -> Hooks:
        ui = self.config.ui
        commands = {name: getattr(ui, name) for name in HOOK_KEYS}
        return Hooks(commands, self.workdir,
                     lambda **fields: self.events.write("hook failed", **fields))

    def _gateway_label(self) -> str | None:
        """What the deck shows: nothing when the gateway was never configured."""
        if self.gateway.on:
            return "down"  # until the first probe answers
        return "off" if self.config.sphragis.enabled is False else None

    def watch_start(self, timeout: float) -> StartReport:
        """How the roles came up: waits for the orchestrator to boot or fail
        (at most ``timeout`` s; a stop ends the wait)."""
        from choragos.actors.startwatch import watch_start

        return watch_start(self.roles.view, self.config.start_role.name,
                           [spec.name for spec in self.config.roles], self.stopped, timeout)

    # -- run and stop ----------------------------------------------------------

    def wait(self, timeout: float | None = None) -> bool:
        """True once the session is stopping; with no timeout, on the main
        thread, a signal's handler still runs at once (see choragos/session/stopflag.py)."""
        if timeout is not None or threading.current_thread() is not threading.main_thread():
            return self.stopped.wait(timeout)
        self.stopped.sleep()
        return True

    def stop(self) -> None:
        self.stopped.set()
        if self.server is not None:
            self.server.close()
        if self.metrics is not None:
            self.metrics.close()
        if self.web is not None:  # no new work from a browser either
            self.web.server.close()
            clear_addr(self.workdir)
        self._flush_tokens()
        if self.crew is not None:
            self.crew.stop_all()
            self.crew.prune_worktrees()
        if self.supervisor is not None:
            self._stop_tree()
        if self.timers is not None:
            self.timers.stop()
            self.timers = None
        if self.journal is not None:
            try:
                self.journal.append("stop", pid=os.getpid())
            except OSError as exc:  # a full disk: the next start reads it as a crash
                log.error("the journal's stop record was not written: %s", exc)
                self.events.write("journal write failed", error=exc.strerror or str(exc))
            self.journal.close()
        self.events.write("deck stopped", pid=os.getpid())
        self._unhook()
        self.events.close()
        left = [t.name for t in threading.enumerate()
                if t.name.startswith("pty-") and t.is_alive()]
        if left:
            log.warning("reader threads still running after stop: %s", ", ".join(left))

    def _stop_tree(self) -> None:
        try:
            self.supervisor.ask(StopAll(), timeout=30)
        except (pykka.ActorDeadError, pykka.Timeout) as exc:
            # The top itself crashed or hangs: stop the children from its state.
            log.error("the session supervisor did not stop its children (%s)", exc)
            stop_children(self.tree, STOP_GRACE)
        finally:
            with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
                self.supervisor.stop(timeout=5)
            self.supervisor = None

    def hard_stop(self) -> None:
        """The clean stop is stuck: dump every stack, kill the roles, leave."""
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(all_threads=True)
        if self.crew is not None:
            self.crew.kill_all()
        with contextlib.suppress(Exception):
            self.server.close()
        os._exit(1)

    def _flush_tokens(self) -> None:
        """The last cumulative snapshot goes into the log on the way out."""
        if self.core is None or not self.gateway.on:
            return
        try:
            if self.prober_handle is not None:
                # One last scrape, so the final snapshot has the last requests too.
                self.prober_handle.ask(Probe(), timeout=5)
            self.core.ask(FlushTokens(force=True), timeout=5)
        except Exception as exc:
            log.warning("writing the last token totals: %s", exc)


def _tasks_at_work(image: journal.Image | None) -> frozenset[str]:
    """A resumed session's tasks still at work: the start's prune leaves
    their checkpoints, as the running session's prunes do."""
    if image is None:
        return frozenset()
    settled = {str(state) for state in SETTLED_STATES}
    return frozenset(task_id for task_id, task in image.tasks.items()
                     if task.get("state") not in settled)
