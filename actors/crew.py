"""The session's roles as processes: started, updated, stopped.

:class:`Crew` holds how one role is started (its launch recipe through
``choragos.roles.launch``, its worktree or remote seat, its state, its actor
under the roles supervisor), and the steps a reload takes on the team
(``actors/reload.py``): add, update, respawn, remove, the briefs, the
team notice to the core.  It writes the session's :class:`RolesView`,
which everyone else reads.  It asks only the roles supervisor (to start and
stop roles; that supervisor never waits on the crew's callers); a remote
role's socket listener goes to the session's supervisor as a tell, so no
child ever waits on its parent.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pykka

from choragos import statedir
from choragos.actors import messages as m
from choragos.actors.core import Seat
from choragos.actors.handle import ActorGone, Handle
from choragos.actors.role import RoleActor, RoleState, new_state
from choragos.actors.rolesview import RolesView
from choragos.actors.supervisor import (
    ChildSpec,
    SetIntensity,
    StartChild,
    StartChildren,
    StopChild,
)
from choragos.board import journal
from choragos.config.memfloor import MemoryGate
from choragos.config.model import Config, RoleSpec
from choragos.control.server import ServerStartError
from choragos.gateway.roles import role_key
from choragos.gitstore import worktrees
from choragos.roles import briefs, ownership
from choragos.roles.launch import Launch, LaunchContext, launch
from choragos.session import resume

if TYPE_CHECKING:
    from choragos.actors.remoteseats import RemoteSeats, RoleSocket

log = logging.getLogger("choragos.session")

STOP_GRACE = 3.0
# The roles supervisor allows ROLE_INTENSITY restarts per role within its
# period, counted again whenever a reload adds or removes roles.
ROLE_INTENSITY = 5


def role_intensity(roles: int) -> int:
    """The restarts the roles supervisor allows within its period, for ``roles`` roles."""
    return ROLE_INTENSITY * max(1, roles)


class Crew:
    def __init__(self, config: Config, workdir: Path, control: Path, size: tuple[int, int],
                 roles: RolesView, log_event: Callable[..., None],
                 gateway_url: str | None = None, gateway_key: bytes = b"",
                 memory_gate: MemoryGate | None = None,
                 restored: journal.Image | None = None) -> None:
        self.config = config  # as the session started: hosts and the gateway stay
        self.workdir = workdir
        self.control = control  # the session's control socket, named in each role's env
        self.size = size
        self.roles = roles
        self.log_event = log_event
        self.gateway_url = gateway_url  # the gateway's address for agents, when it is on
        self.gateway_key = gateway_key
        self.memory_gate = memory_gate
        self.restored = restored
        self.trees: dict[str, Path] = {}  # worktree roles: name -> their git worktree
        self.remote: RemoteSeats | None = None  # roles on other machines, when there are
        self.dispatch_as: Callable[[str, dict], dict] | None = None  # the listener's
        # Set once they run (see Session): the actors a role's actor talks to.
        self.core: Handle | None = None
        self.timers: Any = None
        self.supervisor: Any = None  # the session's, for remote roles' socket listeners
        self.roles_sup: Handle | None = None

    # -- one role ---------------------------------------------------------------

    def launch(self, spec: RoleSpec, worktree: Path | None = None) -> Launch:
        ctx = LaunchContext(self.workdir, self.control, os.environ, self.gateway_url,
                            self._role_key if self.gateway_key else None)
        return launch(spec, ctx, worktree)

    def _role_key(self, role: str) -> str:
        """``role``'s key to the built-in gateway: only it can charge that role."""
        return role_key(self.gateway_key, role)

    def start(self, spec: RoleSpec, strict: bool = True, handle: Handle | None = None) -> Seat:
        """Start ``spec``'s actor (not its process: that is its ``Spawn``)."""
        state, start = self._prepared(spec, strict, handle)
        return self._started(spec, state, self.roles_sup.ask(start, timeout=10))

    def start_all(self, specs: tuple[RoleSpec, ...], seats: dict[str, Seat],
                  first: tuple[Any, ...] = (),
                  hold: Callable[[], Collection[str]] = tuple) -> None:
        """Start every role's actor, each seat in ``seats`` first.  ``first``:
        what each actor reads first (its Spawn), told to its handle before it
        starts; not to the roles ``hold()`` names (their Spawn comes later;
        asked once the first role's actor has started, so what it loads comes
        beside that agent's spawn, not before it).
        The first role's actor is started on its own, so its agent spawns
        while the others are prepared; the others with one request to the
        roles supervisor (the start waits for it once, not once a role).
        A role whose preparation may fail (its worktree, its remote seat) is
        prepared before any actor starts, so such a failure spawns nothing."""
        early = {spec.name: self._prepared(spec, strict=True, handle=Handle(f"role:{spec.name}"))
                 for spec in specs if spec.worktree or spec.host}
        held: Collection[str] = ()  # the first role is never held
        for second, batch in enumerate((specs[:1], specs[1:])):
            starts = []
            for spec in batch:
                state, start = early.get(spec.name) or self._prepared(
                    spec, strict=True, handle=Handle(f"role:{spec.name}"))
                seats[spec.name] = self._started(spec, state, start.handle)
                self.carry_over(spec)
                for message in () if spec.name in held else first:
                    start.handle.tell(message)
                starts.append(start)
            if starts:
                self.roles_sup.ask(StartChildren(tuple(starts)), timeout=10 + len(starts))
            if not second:
                held = hold()  # the first role's actor (and its spawn) under way

    def _prepared(self, spec: RoleSpec, strict: bool,
                  handle: Handle | None = None) -> tuple[RoleState, StartChild]:
        """The role's state, and the request that starts its actor."""
        # A remote role works from a worktree here too: the mirror of its checkout there.
        tree = self.worktree(spec.name, strict) if spec.worktree or spec.host else None
        launched, seat = self.launch(spec, tree), None
        if spec.host and tree is not None:
            gateway = self.config.sphragis.base_url if self.gateway_url else ""
            launched, seat = self.remote_seats().seat(spec, launched, tree, gateway)
        state = new_state(launched, self.workdir, *self.size)
        state.seat = seat
        state.memory_gate = self.memory_gate
        core, timers, roles = self.core, self.timers, self.roles_sup
        return state, StartChild(ChildSpec(
            f"role:{spec.name}", lambda h: RoleActor.start(state, core, timers, roles, h)),
            handle)

    def _started(self, spec: RoleSpec, state: RoleState, handle: Handle) -> Seat:
        self.roles.add(spec.name, state, handle)
        return Seat(spec.name, handle, m.RoleView(spec.name, state.status))

    def carry_over(self, spec: RoleSpec) -> None:
        """A resumed role keeps its restart budget and may continue its conversation
        (set before its first Spawn; a role a later reload adds starts plain)."""
        state = self.roles.state(spec.name)
        if self.restored is None or state is None:
            return
        saved = self.restored.roles.get(spec.name, {})
        state.restarts_used = saved.get("restarts_used", 0)
        state.restarts_total = saved.get("restarts_total", 0)
        state.resume_args = spec.resume_args
        # After a handoff the new team starts new conversations: the handoff
        # document carries what they need (see choragos.roles.conversations).
        state.new_conversation = bool(self.restored.handoff)

    def worktree(self, role: str, strict: bool) -> Path | None:
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
                self.log_event("worktree failed", role=role, error=str(exc))
                return None
            self.log_event("worktree", role=role, path=str(self.trees[role]),
                           branch=worktrees.branch_of(role))
        return self.trees[role]

    def prune_worktrees(self) -> None:
        """A worktree whose branch is fully merged and clean has nothing left to keep."""
        for name in self.trees:
            try:
                pruned = worktrees.prune(self.workdir, name)
            except worktrees.WorktreeError as exc:
                log.warning("keeping the worktree of %s: %s", name, exc)
                continue
            self.log_event("worktree pruned" if pruned else "worktree kept", role=name,
                           branch=worktrees.branch_of(name))

    # -- remote seats -------------------------------------------------------------

    def remote_seats(self) -> RemoteSeats:
        """Made with the first remote role (at start, or added by a reload)."""
        if self.remote is None:
            # Here, not at the top: a session without remote roles never loads
            # the seats' modules (ssh links, checkouts).
            from choragos.actors.listener import ListenerActor
            from choragos.actors.remoteseats import RemoteSeats

            top = self.supervisor

            def supervise(name: str, served: RoleSocket) -> None:
                top.tell(StartChild(ChildSpec(
                    name, lambda h: ListenerActor.start(served, h, top, name))))

            self.remote = RemoteSeats(self.config, self.workdir, self.control,
                                      self.log_event, supervise)
            self.remote.dispatch = self.dispatch_as
        return self.remote

    def serve_remote(self, dispatch_as: Callable[[str, dict], dict]) -> None:
        """The listener runs: remote roles' requests go through it from now on."""
        self.dispatch_as = dispatch_as
        if self.remote is not None:
            self.remote.dispatch = dispatch_as

    def remote_trees(self) -> dict:
        """A remote role's mirror -> its rollback hook (for the checkpointer)."""
        return self.remote.by_tree() if self.remote is not None else {}

    def fetchers(self) -> dict:
        """A remote role's branch -> how to bring its work back (for aftercare)."""
        return self.remote.by_branch() if self.remote is not None else {}

    # -- the team (the start, a reload) ----------------------------------------------

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

    def _orchestrator_extra(self) -> str:
        parts = []
        if self.restored is not None:
            parts += [resume.recap(self.restored), resume.handoff_section(self.workdir)
                      if self.restored.handoff else ""]
        parts.append(resume.memory_section(self.workdir))
        return "\n".join(part for part in parts if part)

    def use_config(self, config: Config) -> None:
        self.roles.config = config

    def add(self, spec: RoleSpec, handle: Handle | None = None) -> None:
        """A role a reload adds, at the address the core already handed out."""
        try:
            seat = self.start(spec, strict=False, handle=handle)
        except Exception as exc:  # e.g. a remote role on a host the session has no link to
            log.error("the role %s added by a reload did not start: %s", spec.name, exc)
            self.log_event("role start failed", role=spec.name, reason=str(exc))
            if handle is not None:
                handle.close(f"{spec.name} did not start: {exc}")
            return
        seat.handle.tell(m.Spawn())
        self._follow_role_count()

    def update(self, spec: RoleSpec) -> None:
        launched = self.launch(spec)
        env = launched.env
        if self.remote is not None and spec.name in self.remote.seats:
            # As at its start: this machine's ssh gets what ssh needs, never the
            # role's env (that went to the host with its seat).
            from choragos.remote.seat import ssh_env  # loaded with the remote seats

            env = ssh_env(env)
        self.roles.tell(spec.name, m.UpdateSpec(launched.spec, env))

    def respawn(self, spec: RoleSpec) -> None:
        self.update(spec)
        self.roles.tell(spec.name, m.Restart())

    def remove(self, names: list[str]) -> None:
        """Stop removed roles (each may wait out its grace period: on the reload
        actor's thread, never the core's)."""
        gone = [name for name in names if self.roles.remove(name) is not None]
        self._follow_role_count()
        for name in gone:
            try:
                self.roles_sup.ask(StopChild(f"role:{name}", STOP_GRACE + 5), timeout=30)
            except (pykka.Timeout, ActorGone) as exc:  # the next steps still run
                log.error("stopping the removed role %s: %s", name, exc)
                self.log_event("role stop failed", role=name, error=str(exc))
                continue
            self.log_event("role removed", role=name)

    def announce(self, added: list[str], removed: list[str]) -> None:
        """The team changed: the core tells the start role (its brief is written)."""
        self.core.tell(m.TeamChanged(tuple(added), tuple(removed)))

    def _follow_role_count(self) -> None:
        """The roles supervisor's allowance is per role: a reload moves it."""
        self.roles_sup.tell(SetIntensity(role_intensity(len(self.roles))))

    # -- the end ------------------------------------------------------------------

    def stop_all(self) -> None:
        """Terminate every role's process group at once, then wait for all."""
        futures = []
        handles = self.roles.handles()
        for name, handle in handles.items():
            ref = handle.current()
            if ref is None:
                continue
            try:
                futures.append((name, ref.ask(m.StopProcess(STOP_GRACE), block=False)))
            except pykka.ActorDeadError:
                continue
        orphans = [threading.Thread(target=self._stop_orphan, args=(name,), daemon=True)
                   for name, handle in handles.items() if handle.current() is None]
        for thread in orphans:
            thread.start()
        for name, future in futures:
            try:
                status = future.get(timeout=STOP_GRACE + 5)
                self.log_event("role stopped", role=name, status=str(status))
            except Exception as exc:
                log.warning("stopping %s: %s", name, exc)
        for thread in orphans:
            thread.join(timeout=STOP_GRACE + 5)
        if self.remote is not None:
            self.remote.close()

    def _stop_orphan(self, name: str) -> None:
        """A role whose actor is down (given up with its supervisor): its process
        group is still ours to end."""
        state: RoleState | None = self.roles.state(name)
        child = state.child if state is not None else None
        if child is None or child.poll() is not None:
            return
        state.stopping = True
        status = child.terminate(STOP_GRACE)
        if state.reader is not None:
            state.reader.halt()
        self.log_event("role stopped", role=name, status=str(status))

    def kill_all(self) -> None:
        """The clean stop is stuck: every role's process group, at once."""
        for state in self.roles.states().values():
            if state.child is not None:
                state.child.signal_group(signal.SIGKILL)
