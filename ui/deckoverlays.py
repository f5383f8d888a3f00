"""The deck's overlay stack: the dialog over the panes (one at a time, a
pager remembering the dialog it was opened from) and ``$EDITOR`` over the
whole deck.

:class:`OverlayStack` sets the loop's top widget: the deck's view alone,
or a dialog over it.  When the last dialog closes it calls ``when_free``
(the next waiting gate opens there); when one opens, ``on_open`` (a dialog
with clocks starts ticking).  :class:`StartNotices` holds what the session
said as it started until a dialog on the stack has shown it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import urwid

from choragos.ui import keys as k
from choragos.ui.deckbase import DeckHost
from choragos.ui.ptyscreen import PtyScreen

if TYPE_CHECKING:
    from choragos.ui.editor import EditorPopup

Back = tuple[Any, str]  # (a dialog, its kind) to go back to


class OverlayStack:
    """What covers the panes: a dialog, or the editor."""

    def __init__(self, host: DeckHost, view: urwid.Widget, screen: PtyScreen, workdir: Path,
                 editor_command: Callable[[], str]) -> None:
        self.host = host
        self.view = view
        self.screen = screen
        self.workdir = workdir
        self.editor_command = editor_command
        self.loop: urwid.MainLoop | None = None  # set while the loop runs
        self.widget: Any = None  # the open dialog
        self.kind = ""           # its kind: gate | board | pager | confirm | search | help
        self.editor: EditorPopup | None = None
        self.when_free: Callable[[], None] = lambda: None
        self.on_open: Callable[[], None] = lambda: None

    @property
    def free(self) -> bool:
        """Nothing covers the panes, and a loop runs to show a dialog."""
        return self.widget is None and self.editor is None and self.loop is not None

    def open(self, widget: urwid.Widget, kind: str, width: Any = ("relative", 80),
             height: Any = ("relative", 70)) -> None:
        self.widget, self.kind = widget, kind
        # A small terminal gives a dialog all it has, up to these: its question
        # and its keys need the room more than the panes behind it.
        self.loop.widget = urwid.Overlay(widget, self.view, "center", width, "middle", height,
                                         min_width=60, min_height=16)
        self.on_open()

    def close(self) -> None:
        self.drop()
        if self.loop is not None:
            self.loop.widget = self.view
        self.when_free()

    def drop(self) -> None:
        """Forget the dialog (the loop that showed it is gone)."""
        self.widget, self.kind = None, ""

    def back(self, back: Back, not_to: tuple[str, ...]) -> None:
        """Reopen the dialog ``back`` names unless it is of a kind in ``not_to``."""
        if back[0] is not None and back[1] not in not_to:
            self.open(back[0], back[1], ("relative", 90), ("relative", 80))
        else:
            self.close()

    def page(self, title: str, text: str) -> None:
        """``text`` in the pager; closing it goes back to the dialog it covered."""
        from choragos.ui.overlays import PagerOverlay

        back = (self.widget, self.kind)
        self.open(PagerOverlay(title, text, lambda: self.back(back, ("gate",))), "pager",
                  ("relative", 90), ("relative", 85))

    def key(self, token: k.Token) -> None:
        """A key for the open dialog."""
        from choragos.ui.overlays import PromptOverlay

        if isinstance(self.widget, PromptOverlay) and token.key in (k.PASTE_TEXT,):
            self.widget.insert(k.text_of(token))
            return
        if token.key in ("begin paste", "end paste", k.PASTE_TEXT):
            return
        self.loop.process_input([token.key])

    def mouse(self, event: tuple) -> None:
        self.loop.process_input([event])

    # -- the editor --------------------------------------------------------------------------

    def edit(self, path: str | None) -> None:
        """``$EDITOR`` on ``path`` over the deck, until it exits."""
        from choragos.ui.editor import EditorPopup

        say = self.host.say
        if not path:
            say("nothing to edit")
            return
        command = (self.editor_command() or os.environ.get("VISUAL")
                   or os.environ.get("EDITOR") or "vi")
        try:
            argv = [*shlex.split(command), path]
        except ValueError:
            say(f"cannot parse the editor command {command!r}")
            return
        cols, rows = self.screen.get_cols_rows()
        back = (self.widget, self.kind)
        self.drop()
        self.loop.widget = self.view
        post = self.host.post
        try:
            self.editor = EditorPopup(argv, path, self.workdir, cols, max(rows - 1, 1),
                                      lambda: post(lambda: self._edit_done(back)),
                                      lambda: post(lambda: None))
        except Exception as exc:  # the deck goes on without it
            self.editor = None
            say(f"cannot start {argv[0]}: {exc}")
            self._restore(back)

    def _edit_done(self, back: Back) -> None:
        if self.editor is not None:
            self.editor.kill()
        self.editor = None
        self._restore(back)
        self.host.say("editor closed")

    def _restore(self, back: Back) -> None:
        if back[0] is not None and back[1] not in ("gate", "pager"):
            self.open(back[0], back[1], ("relative", 90), ("relative", 80))
        else:
            self.when_free()

    def stop(self) -> None:
        if self.editor is not None:
            self.editor.kill()


class StartNotices:
    """What the session said as it started, not read yet, and its dialog.

    ``choragos serve`` in a terminal prints its start notices (a previous
    state kept aside, config warnings) just before the deck takes the
    screen, whose alternate screen hides them until the deck leaves.  The
    deck shows them too, in a dialog on its first frame: it stays until a
    key closes it (a client that leaves meanwhile, or one taking the deck
    over, finds it again), and never comes back in this session after.
    Here, not in a module of its own: every deck makes one, and a start
    that has nothing to say loads no more than before."""

    def __init__(self, overlays: OverlayStack) -> None:
        self.overlays = overlays
        self.unread: tuple[str, ...] = ()

    def hold(self, notices: Sequence[str]) -> None:
        """Show ``notices`` on the next attach (or as soon as nothing covers the panes)."""
        self.unread = tuple(notices)

    def show(self) -> bool:
        """Open the dialog when there is anything unread and nothing else is
        open; True when it is open (a gate waits behind it)."""
        if self.overlays.kind == "notices":
            return True
        if not self.unread or not self.overlays.free:
            return False
        # The dialogs' module only for a start that has something to say.
        from choragos.ui.overlays import NoticeOverlay

        self.overlays.open(NoticeOverlay(self.unread, self._read), "notices",
                           ("relative", 80), ("relative", 70))
        return True

    def _read(self) -> None:
        self.unread = ()
        self.overlays.close()
