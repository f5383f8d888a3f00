"""The session's roles as the listener, the deck and the web view see them.

One typed, narrow view instead of the session's dictionaries and closures:
a role's terminal and its screen, the keys typed into it (the deck's echo
first, see ``choragos/terminal/echowait.py``), its handle and last published view,
and whom a process acts for (pid → role, for the caller's authority).
Roles come and go (the start, a reload): every call looks them up anew,
from whichever thread it is on.  The session and its reload actor are the
only writers (:meth:`add`, :meth:`remove`, :attr:`config`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from choragos.actors import roleio
from choragos.actors.handle import Handle
from choragos.actors.role import RoleState
from choragos.config.model import Config
from choragos.control import authority
from choragos.session.news import RoleView
from choragos.terminal.echowait import EchoWait

if TYPE_CHECKING:  # the emulator is loaded with the first role's screen: see RoleState
    from choragos.terminal.emulator import Snapshot, Terminal


class RolesView:
    def __init__(self, config: Config, echo_wait: EchoWait | None = None,
                 behalf: authority.Behalf | None = None) -> None:
        self.config = config  # the config the roles run from (a reload replaces it)
        self.echo_wait = echo_wait or EchoWait()
        self.behalf = behalf or authority.Behalf()  # what runs for a role counts as it
        self._states: dict[str, RoleState] = {}
        self._handles: dict[str, Handle] = {}

    # -- the writers' side ------------------------------------------------------

    def add(self, name: str, state: RoleState, handle: Handle) -> None:
        state.echo_wait = self.echo_wait
        self._states[name] = state
        self._handles[name] = handle

    def remove(self, name: str) -> Handle | None:
        """Forget ``name``; its handle, for the one who stops its actor."""
        self._states.pop(name, None)
        return self._handles.pop(name, None)

    def state(self, name: str) -> RoleState | None:
        """The role's live state: for its own actor's owners (the session's stop)."""
        return self._states.get(name)

    def states(self) -> dict[str, RoleState]:
        return dict(self._states)

    # -- the readers' side ------------------------------------------------------

    def names(self) -> list[str]:
        return list(self._handles)

    def __len__(self) -> int:
        return len(self._handles)

    def handle(self, name: str) -> Handle | None:
        return self._handles.get(name)

    def handles(self) -> dict[str, Handle]:
        return dict(self._handles)

    def tell(self, name: str, message: Any) -> None:
        """A message to ``name``'s actor; nothing when there is no such role."""
        handle = self._handles.get(name)
        if handle is not None:
            handle.tell(message)

    def terminal(self, name: str) -> Terminal | None:
        state = self._states.get(name)
        return state.terminal if state is not None else None

    def snapshot(self, name: str) -> Snapshot | None:
        terminal = self.terminal(name)
        return terminal.snapshot() if terminal is not None else None

    def view(self, name: str) -> RoleView | None:
        """The view the role last published (a frozen value, safe on any thread)."""
        state = self._states.get(name)
        return state.last_view if state is not None else None

    def env_of(self, name: str) -> dict[str, str] | None:
        """The environment ``name``'s process runs with now (a reload may change it)."""
        state = self._states.get(name)
        return dict(state.env) if state is not None else None

    # -- keys -------------------------------------------------------------------

    def type_keys(self, name: str, data: bytes) -> None:
        """The operator's keys, written to the role's PTY on the calling thread
        (the deck's) when nothing waits ahead of them; see ``actors/roleio.py``."""
        state, handle = self._states.get(name), self._handles.get(name)
        if state is not None and handle is not None:
            roleio.type_keys(state, data, handle.tell)

    def type_echoed(self, name: str, data: bytes) -> bool:
        """The operator's keys typed straight at ``name``'s agent (the deck's
        way for plain typing): their echo announced first (the other roles'
        output waits for it), then written as :meth:`type_keys` writes them.
        False (nothing done) when there is no such role.  One call on every
        keystroke's way, where :meth:`expect_echo` and :meth:`type_keys`
        would look the role up twice."""
        state, handle = self._states.get(name), self._handles.get(name)
        if state is None or handle is None:
            return False
        self.echo_wait.expect(name, len(data))
        roleio.type_keys(state, data, handle.tell)
        return True

    def expect_echo(self, name: str, size: int) -> None:
        """``size`` bytes of keys were written straight to ``name``: other
        roles' output waits (briefly) for their echo."""
        self.echo_wait.expect(name, size)

    def echo_drawn(self, name: str) -> None:
        self.echo_wait.drawn(name)

    # -- whom a process acts for ----------------------------------------------------

    def pids(self) -> dict[int, str]:
        """The running agents' pids and what runs on their behalf → their role."""
        running = {state.child.pid: name for name, state in list(self._states.items())
                   if state.child is not None and state.child.poll() is None}
        return {**self.behalf.pids(), **running}

    def caller_of(self, pid: int | None) -> str | None:
        """Whom ``pid`` acts for (on a socket thread): see choragos/control/authority.py."""
        return authority.caller_role(pid, self.pids(), os.getpid())
