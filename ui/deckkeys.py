"""The client's bytes on their way in.

Plain typing for the focused agent, with nothing else going on in the deck,
is written to its PTY on the attach pump's thread, so a keystroke's echo
waits for no hand-over to the deck's thread; everything else is posted to
the loop, routed key by key (``ui/deckinput.py``) with what is open at that
moment, and carried out by the actions (``ui/deckactions.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from choragos.ui import keys as k
from choragos.ui.deckactions import Actions
from choragos.ui.deckbase import ESC_WAIT, DeckHost, SessionPort
from choragos.ui.deckinput import Context, InputRouter, TypeKeys
from choragos.ui.deckmodel import DeckModel
from choragos.ui.deckoverlays import OverlayStack
from choragos.ui.deckpace import FramePacer


class KeyPath:
    """Bytes -> the agent's PTY directly, or -> the loop, the router and the actions."""

    def __init__(self, model: DeckModel, port: SessionPort, router: InputRouter,
                 actions: Actions, overlays: OverlayStack, pacer: FramePacer, host: DeckHost,
                 attached: Callable[[], bool]) -> None:
        self.model = model
        self.port = port
        self.router = router
        self.actions = actions
        self.overlays = overlays
        self.pacer = pacer
        self.host = host
        self.attached = attached
        self.loop: Any = None  # set while the loop runs (the flush alarm)
        self._flush_alarm: Any = None
        self._waiting = 0  # client bytes posted to the loop, not acted on yet
        self._guard = threading.Lock()

    def feed(self, data: bytes) -> None:
        """The client's bytes (on the attach pump's thread).

        Plain typing for the focused agent, with nothing else going on in
        the deck (no dialog, prefix, scroll, broadcast, key sequence or
        earlier input in progress), is written to its PTY right here; the
        keystroke's echo then waits for no hand-over to the deck's thread.
        Everything else is the deck's loop's to act on.  (Every keystroke
        takes this way: it is kept to a few calls.)"""
        if self.router.plain(data):
            role = self._target()
            # The port holds the neighbours first, so none of them takes the
            # interpreter while the keys are written; the rest is noted while
            # the agent works on its echo, which takes far longer than these
            # lines.  (Should the echo win all the same, it is drawn by the
            # loop: later, never lost.)  False: no such role to type at.
            if role is not None and self.port.type_echoed(role, data):
                self.pacer.typed_directly(role)
                # Acted on before the echo's wake-up (the echo is then drawn
                # at once, as for keys typed through the loop), without a
                # wake-up of its own competing with the echo's way back.
                self.host.post(lambda: self._typed_at(role), wake=False)
                return
        with self._guard:
            self._waiting += 1
        self.host.post(lambda: self._posted(data))

    def _typed_at(self, role: str) -> bool:
        """What typing through the loop notes, for keys written directly."""
        self.actions.typed([role])
        return False

    def _target(self) -> str | None:
        """The focused role when the deck would pass plain keys straight to it
        (the port says whether it runs)."""
        # Read without the guard: only this thread (the pump's) adds to it, so
        # a stale value is one the loop has since lowered: the keys then go
        # the loop's way, later, never ahead of earlier bytes.
        if self._waiting:
            return None  # earlier bytes first
        state = self.model.state
        if (not self.attached() or self.overlays.editor is not None
                or self.overlays.widget is not None or not self.router.idle
                or state.broadcast):
            return None
        role = state.layout.focus
        if role is None:
            return None
        pane = state.panes.get(role)
        return None if pane is not None and pane.scroll is not None else role

    def _posted(self, data: bytes) -> bool | None:
        try:
            return self.keys(data)
        finally:
            with self._guard:
                self._waiting -= 1

    def keys(self, data: bytes) -> bool | None:
        """Act on the client's keys; False when they only went to agents: the
        deck shows nothing new then, and the echo brings its own frame (drawing
        one here would hold the interpreter while the echo is on its way)."""
        typed_only = True
        for token in self.router.tokens(data):
            typed_only = self.key(token) and typed_only
        self._arm_flush()
        return False if typed_only and not self.router.pending else None

    def key(self, token: k.Token) -> bool:
        """Route one key and carry it out; True when it was only typed at the agents."""
        state = self.model.state
        focus = state.layout.focus
        pane = state.panes.get(focus) if focus else None
        context = Context(editing=self.overlays.editor is not None,
                          dialog=self.overlays.widget is not None,
                          scrolling=pane is not None and pane.scroll is not None)
        mode = self.router.mode
        intent = self.router.route(token, context)
        if intent is None:
            return False
        self.actions.do(intent)
        return isinstance(intent, TypeKeys) and self.router.mode == mode

    def _arm_flush(self) -> None:
        if self._flush_alarm is not None:
            self.loop.remove_alarm(self._flush_alarm)
            self._flush_alarm = None
        if self.router.pending:
            def flush(_loop: Any, _data: Any) -> None:
                self._flush_alarm = None
                for token in self.router.flush():
                    self.key(token)
                self.host.redraw()
            self._flush_alarm = self.loop.set_alarm_in(ESC_WAIT, flush)
