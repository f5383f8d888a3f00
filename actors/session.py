"""Wires a session together: start in dependency order, stop in reverse.

Order: control socket bound (the lock) → event log → timers → the session
supervisor → core → clocks → checkpointer → aftercare → built-in gateway
(its own supervisor; up before any role) → gateway prober → the roles
supervisor and one child per role → listener (accepting from now on) →
web view, when ``[web] listen`` is set.
Stopping runs the other way round, in a ``finally``, so the socket
disappears first (no new work), then every role's process group is
terminated in parallel, then the actors and the timer thread stop.

The tree, its restart types and strategies are drawn in docs/architecture.md.
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
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pykka

from choragos import __version__, statedir
from choragos.actors import messages as m
from choragos.actors import threadhook
from choragos.actors.aftercare import AftercareActor
from choragos.actors.checkpointer import CheckpointerActor
from choragos.actors.clocks import ClockActor, ClockState
from choragos.actors.core import CoreActor, CoreState, Seat
from choragos.actors.durable import JournaledBoard, Restore
from choragos.actors.gatewayprober import FlushTick, FlushTokens, GatewayProber, Probe, ProberState
from choragos.actors.guardrails import budget_summary
from choragos.actors.handle import Handle
from choragos.actors.listener import (
    ListenerActor,
    ListenerState,
    bind_server,
    install_fault_hook,
)
from choragos.actors.notifier import start_notifier
from choragos.actors.proxyrunner import READY_TIMEOUT, ProxyRunner, ProxyRunnerState, Ready
from choragos.actors.remoteseats import RemoteSeats, RoleSocket
from choragos.actors.role import RoleActor, RoleState, new_state
from choragos.actors.startwatch import StartReport, watch_start
from choragos.actors.supervisor import (
    TEMPORARY,
    ChildSpec,
    SetIntensity,
    StartChild,
    StopAll,
    StopChild,
    Supervisor,
    SupervisorState,
    stop_children,
    supervisor_spec,
)
from choragos.actors.timers import Timers
from choragos.actors.websession import install_fault_hook as install_web_fault_hook
from choragos.actors.websession import start_web
from choragos.board import journal, taskids
from choragos.board.events import EventLog, default_path
from choragos.board.tasks import SETTLED_STATES
from choragos.config.memfloor import MemoryGate
from choragos.config.model import Config, RoleSpec, load_config
from choragos.control import authority, wire
from choragos.control.server import ControlServer, ServerStartError
from choragos.gateway import budgetgate
from choragos.gateway.client import GatewayMode, decide_session
from choragos.gateway.counts import session_path
from choragos.gateway.roles import new_session_key, role_key
from choragos.gitstore import worktrees
from choragos.gitstore.checkpoints import CheckpointStore, NotARepository
from choragos.roles import briefs, ownership, selfpath
from choragos.roles.launch import Launch, LaunchContext, launch
from choragos.session import resume
from choragos.session.hooks import Hooks
from choragos.session.news import RoleView
from choragos.session.reloadplan import ReloadPlan, plan_reload
from choragos.session.stopflag import StopFlag
from choragos.terminal.echowait import EchoWait
from choragos.web.access import clear_addr
from choragos.web.news import NewsHub

log = logging.getLogger("choragos.session")

STOP_GRACE = 3.0
# How many restarts each supervisor allows within PERIOD seconds before it
# gives up.  The roles supervisor allows ROLE_INTENSITY per role, counted
# again whenever a reload adds or removes roles.
SESSION_INTENSITY = 5
GATEWAY_INTENSITY = 5
ROLE_INTENSITY = 5
PERIOD = 60.0
HOOK_KEYS = ("on_gate", "on_input", "on_timeout", "on_budget", "on_exit", "on_idle", "on_done",
             "on_limit")


@dataclass
class SessionOptions:
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
        self.config = config
        self.options = options
        self.workdir = options.workdir
        self.stopped = StopFlag()
        self.events = EventLog(default_path(self.workdir))
        self.role_states: dict[str, RoleState] = {}
        self.echo_wait = EchoWait()  # keys first: the deck's typed echo ahead of other output
        self.handles: dict[str, Handle] = {}
        self.server: ControlServer | None = None
        self.timers: Timers | None = None
        self.supervisor: pykka.ActorRef | None = None  # the top of the tree
        self.tree = SupervisorState("session", intensity=SESSION_INTENSITY, period=PERIOD)
        self.roles: Handle | None = None  # the roles supervisor
        self.failure: str | None = None  # why the tree gave up, if it did
        self.core: Handle | None = None
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
        self.notices: list[str] = []
        self.prober_handle: Handle | None = None
        self.metrics = None  # the session's own /metrics, when [metrics] listen is set
        self.trees: dict[str, Path] = {}  # worktree roles: name -> their git worktree
        self.listening: ListenerState | None = None  # the control path the web view shares
        self.news_hub = NewsHub()  # the web view's event streams
        self.web = None  # the web actor's state, when [web] listen is served
        self.behalf = authority.Behalf()  # what runs for a role (its verify) counts as it
        self.remote: RemoteSeats | None = None  # roles on other machines, when there are
        self.dispatch_as = None  # the listener's way in for a socket only one role reaches
        self._unhook: Callable[[], None] = lambda: None  # puts threading.excepthook back

    # -- start ---------------------------------------------------------------

    def start(self) -> None:
        """Bind the socket first: a second session here must fail before it
        spawns anything or writes one line into the running session's log."""
        self.server = bind_server(self.options.socket, self.events.write)
        install_fault_hook(self.server)
        install_web_fault_hook(self)
        self._unhook = threadhook.install(self._thread_died)
        self.events.write("deck starting", version=__version__, pid=os.getpid(),
                          mode=self.options.mode, dir=str(self.workdir),
                          config=str(self.config.source) if self.config.source else "built-in")
        for warning in self.config.warnings:
            self.events.write("config warning", message=warning)
        self._decide_gateway()
        self._note_budgets()
        self._start_metrics()
        try:
            self._open_state()
            self._start_actors()
        except BaseException:
            self.stop()
            raise

    def _open_state(self) -> None:
        """After the socket is ours, so a live session's state is never touched."""
        try:
            opened = resume.open_state(self.workdir, self.config, self.options.resume,
                                       self.options.compact_every, self.options.salvage)
        except (resume.ResumeRefused, journal.JournalError, OSError) as exc:
            raise ServerStartError(str(exc)) from None
        self.journal, self.restored, self.notices = (opened.journal, opened.restore,
                                                     opened.notices)
        for notice in self.notices:
            self.events.write("session state", message=notice)
        self.journal.on_callback_error = self._journal_callback_failed
        self.journal.append("session", version=journal.VERSION,
                            config=resume.config_label(self.config), pid=os.getpid(),
                            resumed=self.restored is not None)
        self.journal.sync()
        self.journal.start()

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
            log.warning("metrics: cannot listen on %s: %s", listen, exc)
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

    def _note_budgets(self) -> None:
        """Record the budgets (``report`` shows them); say so if nothing can enforce them."""
        summary = budget_summary(self.config)
        if summary is None:
            return
        self.events.write("budgets", **summary)
        if not self.gateway.on:
            why = (f"budgets cannot be enforced: the gateway is off ({self.gateway.reason}), "
                   "so no tokens are counted")
            log.warning("%s", why)
            self.events.write("config warning", message=why)

    def _start_actors(self) -> None:
        self.timers = Timers()
        self.supervisor = Supervisor.start(self.tree, on_event=self.events.write,
                                           on_give_up=self._gave_up)
        sup = self.supervisor
        self.write_briefs(self.config)
        selfpath.write_shim(self.workdir)
        core_state = CoreState(config=self.config, workdir=self.workdir, events=self.events,
                               on_shutdown=self.stopped.set,
                               reloader=self if self.config.source else None,
                               gateway=self._gateway_label(),
                               board=JournaledBoard(
                                   journal=self.journal,
                                   next_number=taskids.first_free(self.workdir)),
                               journal=self.journal)
        self.core = self._start_child("core", lambda h: CoreActor.start(core_state, sup))
        core_state.timers, core_state.me = self.timers, self.core
        core_state.memory_gate = self.memory_gate
        core_state.hooks = self._hooks()
        start_notifier(self, core_state.hooks)
        clock_state = ClockState({})
        core, timers = self.core, self.timers
        core_state.clocks = self._start_child(
            "clocks", lambda h: ClockActor.start(clock_state, core, timers, h, sup))
        core_state.checkpointer = self._start_checkpointer(core_state)
        workdir, behalf = self.workdir, self.behalf

        def fetchers() -> dict:
            return self.remote.by_branch() if self.remote is not None else {}

        core_state.aftercare = self._start_child(
            "aftercare", lambda h: AftercareActor.start(workdir, core, sup, behalf, fetchers))
        self._start_gateway_server(core_state)
        self._start_prober(core_state)
        core_state.trees = self.trees
        core_state.role_env = self._env_of
        self.roles = self.supervisor.ask(StartChild(supervisor_spec(
            SupervisorState("roles", intensity=role_intensity(len(self.config.roles)),
                            period=PERIOD), sup, self.events.write)), timeout=10)
        for spec in self.config.roles:
            core_state.seats[spec.name] = self._start_role(spec)
            self._carry_over(spec, self.role_states[spec.name])
        if self.restored is not None:
            self.core.ask(Restore(self.restored), timeout=30)
        listening = ListenerState(self.server, self.core, self._gate, self.caller_of,
                                  self.journal)
        self.dispatch_as = listening.dispatch_as
        if self.remote is not None:
            self.remote.dispatch = listening.dispatch_as
        self._start_child("listener", lambda h: ListenerActor.start(listening, h, sup))
        self.listening = listening
        self.web = start_web(self, self.news_hub)
        for handle in self.handles.values():
            handle.tell(m.Spawn())
        for name, role in (self.restored.roles if self.restored else {}).items():
            if role.get("paused") and name in self.handles:
                self.handles[name].tell(m.Pause())

    def _worktree(self, role: str, strict: bool) -> Path | None:
        """The role's tree: the one it left with unmerged work, or a new one from HEAD."""
        if role not in self.trees:
            try:
                self.trees[role] = worktrees.ensure(self.workdir, role)
            except worktrees.WorktreeError as exc:
                if strict:  # at start: the session does not start without it
                    raise ServerStartError(f"the worktree of {role}: {exc}") from None
                # A role added by a reload into a repository that cannot have
                # one runs in the workspace, loudly.
                log.warning("%s runs in the workspace: %s", role, exc)
                self.events.write("worktree failed", role=role, error=str(exc))
                return None
            self.events.write("worktree", role=role, path=str(self.trees[role]),
                              branch=worktrees.branch_of(role))
        return self.trees[role]

    def _prune_worktrees(self) -> None:
        """A worktree whose branch is fully merged and clean has nothing left to keep."""
        for name in self.trees:
            try:
                pruned = worktrees.prune(self.workdir, name)
            except worktrees.WorktreeError as exc:
                log.warning("keeping the worktree of %s: %s", name, exc)
                continue
            self.events.write("worktree pruned" if pruned else "worktree kept", role=name,
                              branch=worktrees.branch_of(name))

    def _start_child(self, name: str, start, under=None) -> Handle:
        return (under or self.supervisor).ask(StartChild(ChildSpec(name, start)), timeout=10)

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

    def _start_checkpointer(self, core_state: CoreState) -> Handle | None:
        if not self.config.checkpoints.enabled:
            self.events.write("checkpoints off", reason="[checkpoints] enabled = false")
            return None
        try:
            store = CheckpointStore(self.workdir, watch=True)  # long-lived: it can watch
        except NotARepository as exc:
            self.events.write("checkpoints off", reason=str(exc))
            log.warning("checkpoints are off: %s", exc)
            return None
        removed = store.remove_stale_temporaries()
        if removed:
            self.events.write("checkpoint temporaries removed", count=removed)
        sup, core = self.supervisor, self.core
        events = self.events
        handle = self._start_child(
            "checkpointer", lambda h: CheckpointerActor.start(store, core, events, sup,
                                                               self._remote_trees))
        handle.tell(m.Prune(self.config.checkpoints.keep, _tasks_at_work(self.restored)))
        return handle

    def _gateway_label(self) -> str | None:
        """What the deck shows: nothing when the gateway was never configured."""
        if self.gateway.on:
            return "down"  # until the first probe answers
        return "off" if self.config.sphragis.enabled is False else None

    def _start_gateway_server(self, core_state: CoreState) -> None:
        """The built-in gateway, listening before any role can send it a request."""
        if not self.config.gateway.builtin:
            return
        logs = statedir.make_dir(self.workdir / ".choragos" / "logs")
        state = ProxyRunnerState(self.config.gateway, self.prober, logs / "gateway.log",
                                 self.events.write, session_path(self.workdir), self.gateway_key,
                                 policy=budgetgate.policy(self.config))
        # Its own supervisor, a temporary child: a gateway that keeps dying is
        # given up on and the session carries on, fail-closed.
        tree = SupervisorState("builtin-gateway", intensity=GATEWAY_INTENSITY, period=PERIOD)
        sup = self.supervisor.ask(StartChild(supervisor_spec(
            tree, self.supervisor, self.events.write, restart=TEMPORARY)), timeout=10)
        core = self.core
        handle = self._start_child("gateway-server",
                                   lambda h: ProxyRunner.start(state, core, sup), sup)
        core_state.gateway_runner = handle
        try:
            problem = handle.ask(Ready(), timeout=READY_TIMEOUT + 5)
        except Exception as exc:  # it crashed while starting, maybe for good
            problem = state.problem or f"{type(exc).__name__}: {exc}"
        if problem:
            self.events.write("gateway failed", reason=problem)
            log.warning("%s", problem)

    def _start_prober(self, core_state: CoreState) -> None:
        if not self.gateway.on:
            return
        sup, core, timers, state = self.supervisor, self.core, self.timers, self.prober
        handle = self.prober_handle = self._start_child(
            "gateway", lambda h: GatewayProber.start(state, core, timers, h, sup))
        handle.tell(Probe())
        timers.after(30.0, handle, FlushTick())

    def _launch(self, spec: RoleSpec, worktree: Path | None = None) -> Launch:
        gateway_url = self.config.sphragis.agent_url if self.gateway.on else None
        ctx = LaunchContext(self.workdir, self.options.socket, os.environ, gateway_url,
                            self._role_key if self.gateway_key else None)
        return launch(spec, ctx, worktree)

    def _role_key(self, role: str) -> str:
        """``role``'s key to the built-in gateway: only it can charge that role."""
        return role_key(self.gateway_key, role)

    def _env_of(self, role: str) -> dict[str, str] | None:
        """The environment ``role``'s process runs with now (a reload may change it)."""
        state = self.role_states.get(role)
        return dict(state.env) if state is not None else None

    def _start_role(self, spec: RoleSpec, strict: bool = True) -> Seat:
        # A remote role works from a worktree here too: the mirror of its checkout there.
        tree = self._worktree(spec.name, strict) if spec.worktree or spec.host else None
        launched, seat = self._launch(spec, tree), None
        if spec.host and tree is not None:
            gateway = self.config.sphragis.base_url if self.gateway.on else ""
            launched, seat = self._remote_seats().seat(spec, launched, tree, gateway)
        state = new_state(launched, self.workdir, self.options.cols, self.options.rows)
        state.seat = seat
        state.echo_wait = self.echo_wait
        state.memory_gate = self.memory_gate
        self.role_states[spec.name] = state
        roles, core, timers = self.roles, self.core, self.timers
        handle = self._start_child(
            f"role:{spec.name}",
            lambda h: RoleActor.start(state, core, timers, roles, h), roles)
        self.handles[spec.name] = handle
        return Seat(spec.name, handle, m.RoleView(spec.name, state.status))

    def _remote_trees(self) -> dict:
        return self.remote.by_tree() if self.remote is not None else {}

    def _remote_seats(self) -> RemoteSeats:
        """Made with the first remote role (at start, or added by a reload)."""
        if self.remote is None:
            sup = self.supervisor

            def supervise(name: str, served: RoleSocket) -> None:
                self._start_child(name, lambda h: ListenerActor.start(served, h, sup, name))

            self.remote = RemoteSeats(self.config, self.workdir, self.options.socket,
                                      self.events.write, supervise)
            self.remote.dispatch = self.dispatch_as
        return self.remote

    def _carry_over(self, spec: RoleSpec, state: RoleState) -> None:
        """A resumed role keeps its restart budget and may continue its conversation
        (set before its first Spawn; a role a later reload adds starts plain)."""
        if self.restored is None:
            return
        saved = self.restored.roles.get(spec.name, {})
        state.restarts_used = saved.get("restarts_used", 0)
        state.restarts_total = saved.get("restarts_total", 0)
        state.extra["resume_args"] = spec.resume_args
        # After a handoff the new team starts new conversations: the handoff
        # document carries what they need (see choragos.roles.conversations).
        state.extra["new_conversation"] = bool(self.restored.handoff)

    def _orchestrator_extra(self) -> str:
        parts = []
        if self.restored is not None:
            parts += [resume.recap(self.restored), resume.handoff_section(self.workdir)
                      if self.restored.handoff else ""]
        parts.append(resume.memory_section(self.workdir))
        return "\n".join(part for part in parts if part)

    def write_briefs(self, config: Config) -> None:
        folder = self.workdir / ".choragos" / "briefs"
        statedir.write_text(self.workdir / ".choragos" / ".gitignore", "*\n")
        # Made here, private, so the reports the agents write land in a 0700 dir.
        statedir.make_dir(self.workdir / ".choragos" / "reports")
        start = config.start_role
        workers = [{"name": r.name, "command": r.command, "model": r.model,
                    "approve": r.approve} for r in config.workers]
        for spec in config.roles:
            text = (briefs.orchestrator_brief(spec.name, spec.prompt_template, workers)
                    + self._orchestrator_extra()
                    if spec is start else briefs.worker_brief(spec.name, spec.prompt_template))
            text += ownership.map_section(ownership.owners(config))
            statedir.write_text(folder / f"{spec.name}.md", text)

    # -- live reload (called by the core, on its thread) -------------------------

    def plan(self, running: Config, busy: set[str]) -> ReloadPlan:
        """Re-read the config file and plan the convergence; raises ConfigError."""
        fresh = load_config(self.config.source, self.workdir)
        plan = plan_reload(running, fresh, busy)
        self.config = plan.config
        return plan

    def add_role(self, spec: RoleSpec) -> Seat:
        seat = self._start_role(spec, strict=False)
        seat.handle.tell(m.Spawn())
        self._follow_role_count()
        return seat

    def update_role(self, spec: RoleSpec) -> None:
        launched = self._launch(spec)
        self.handles[spec.name].tell(m.UpdateSpec(launched.spec, launched.env))

    def respawn_role(self, spec: RoleSpec) -> None:
        self.update_role(spec)
        self.handles[spec.name].tell(m.Restart())

    def stop_roles(self, names: list[str]) -> None:
        """Stop removed roles off the core's thread: a stop may wait out a grace period."""
        handles = {name: self.handles.pop(name) for name in names if name in self.handles}
        for name in handles:
            self.role_states.pop(name, None)
        self._follow_role_count()

        def stop_all() -> None:
            for name in handles:
                self.roles.ask(StopChild(f"role:{name}", STOP_GRACE + 5), timeout=30)
                self.events.write("role removed", role=name)

        if handles:
            threading.Thread(target=stop_all, name="reload-stop", daemon=True).start()

    def _follow_role_count(self) -> None:
        """The roles supervisor's allowance is per role: a reload moves it."""
        self.roles.tell(SetIntensity(role_intensity(len(self.handles))))

    def caller_of(self, pid: int | None) -> str | None:
        """Whom ``pid`` acts for (on a socket thread): see choragos/control/authority.py."""
        pids = {state.child.pid: name for name, state in list(self.role_states.items())
                if state.child is not None and state.child.poll() is None}
        return authority.caller_role(pid, {**self.behalf.pids(), **pids}, os.getpid())

    def _gate(self, request: dict) -> str | None:
        """Fail closed while an enforced gateway is down (or not yet seen up)."""
        if not self.gateway.enforced or self.prober.health.up:
            return None
        refusal = wire.gateway_refusal(request)
        if refusal is None:
            return None
        self.events.write(wire.GATEWAY_DOWN, cmd=request.get("cmd"),
                          reason=self.prober.health.reason)
        return refusal["error"]

    def watch_start(self, timeout: float) -> StartReport:
        """How the roles came up: waits for the orchestrator to boot or fail
        (at most ``timeout`` s; a stop ends the wait)."""
        return watch_start(self._look, self.config.start_role.name,
                           [spec.name for spec in self.config.roles], self.stopped, timeout)

    def _look(self, name: str) -> RoleView | None:
        """The view the role last published (a frozen value, safe to read here)."""
        state = self.role_states.get(name)
        return state.last_view if state is not None else None

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
        self._stop_roles()
        if self.remote is not None:
            self.remote.close()
        self._prune_worktrees()
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
        for state in list(self.role_states.values()):
            if state.child is not None:
                state.child.signal_group(signal.SIGKILL)
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

    def _stop_roles(self) -> None:
        """Terminate every role's process group at once, then wait for all."""
        futures = []
        for name, handle in self.handles.items():
            ref = handle.current()
            if ref is None:
                continue
            try:
                futures.append((name, ref.ask(m.StopProcess(STOP_GRACE), block=False)))
            except pykka.ActorDeadError:
                continue
        orphans = [threading.Thread(target=self._stop_orphan, args=(name,), daemon=True)
                   for name, handle in self.handles.items() if handle.current() is None]
        for thread in orphans:
            thread.start()
        for name, future in futures:
            try:
                status = future.get(timeout=STOP_GRACE + 5)
                self.events.write("role stopped", role=name, status=str(status))
            except Exception as exc:
                log.warning("stopping %s: %s", name, exc)
        for thread in orphans:
            thread.join(timeout=STOP_GRACE + 5)

    def _stop_orphan(self, name: str) -> None:
        """A role whose actor is down (given up with its supervisor): its process
        group is still ours to end."""
        state = self.role_states.get(name)
        child = state.child if state is not None else None
        if child is None or child.poll() is not None:
            return
        state.stopping = True
        status = child.terminate(STOP_GRACE)
        if state.reader is not None:
            state.reader.halt()
        self.events.write("role stopped", role=name, status=str(status))


def role_intensity(roles: int) -> int:
    """The restarts the roles supervisor allows within PERIOD, for ``roles`` roles."""
    return ROLE_INTENSITY * max(1, roles)


def _tasks_at_work(image: journal.Image | None) -> frozenset[str]:
    """A resumed session's tasks still at work: the start's prune leaves
    their checkpoints, as the running session's prunes do."""
    if image is None:
        return frozenset()
    settled = {str(state) for state in SETTLED_STATES}
    return frozenset(task_id for task_id, task in image.tasks.items()
                     if task.get("state") not in settled)
