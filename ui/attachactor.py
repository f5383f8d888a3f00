"""The attach actor: the attach socket's threads as a child of the session's tree.

The attach server (``attachserver.py``) moves the deck's bytes on two
threads of its own, the accept loop and the pump.  This actor owns them: it
starts them when it starts, and a thread that dies tells it
:class:`RelayDied`, which it raises, so its supervisor logs the crash, counts
it against its intensity and starts a fresh actor, which starts the dead
thread again (the socket stays bound; a client the pump was serving was sent
away first, with the reason).  A deliberate stop closes the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatchmethod
from typing import Any

from choragos.actors.base import Actor
from choragos.control.server import fault_hook
from choragos.ui.attachserver import AttachServer


@dataclass(frozen=True)
class RelayDied:
    """From a dying thread of the attach server."""

    error: str


class AttachRelayCrash(Exception):
    """The attach actor's crash when one of its server's threads died."""


class AttachActor(Actor):
    def __init__(self, server: AttachServer, me: Any, supervisor: Any = None) -> None:
        super().__init__("attach", supervisor)
        self.server = server
        self.me = me

    def on_start(self) -> None:
        self.server.on_died = self._died
        self.server.serve()  # after a death: the dead thread again

    def _died(self, error: str) -> None:
        """On the dying thread: make it this actor's crash."""
        self.me.tell(RelayDied(error))

    def on_shutdown(self) -> None:
        self.server.close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(RelayDied)
    def _relay_died(self, message: RelayDied) -> None:
        raise AttachRelayCrash(f"the attach socket's {message.error}")


def install_fault_hook(server: AttachServer) -> bool:
    """Test hook (``CHORAGOS_TEST_FAULTS=attach-pump``): SIGUSR2 makes the
    attach pump raise, so a test can kill it for real in a running session."""
    return fault_hook("attach-pump", server.inject_fault)
