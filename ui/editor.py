"""``$EDITOR`` over the deck, in a PTY of its own inside the server.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from choragos.terminal.emulator import Terminal
from choragos.ui import keys as k
from choragos.ui.pane import Line, PaneView, clipped_line, inert


class EditorPopup:
    """``$EDITOR`` in a terminal of its own, drawn over the whole deck until it exits.

    The editor runs inside the server like every pane, so it survives a
    detach and is still there on the next attach.
    """

    def __init__(self, argv: list[str], path: str, cwd: Path, cols: int, rows: int,
                 on_exit: Callable[[], None], on_output: Callable[[], None]) -> None:
        from choragos.terminal.ptyproc import PtyChild, Reader

        self.path = path
        env = {**os.environ, "TERM": "xterm-256color"}
        self.terminal = Terminal(cols, rows)
        self.child = PtyChild.spawn(argv, cwd, env, cols, rows)
        self.terminal.reply = self.child.write

        def data(chunk: bytes) -> None:
            self.terminal.feed(chunk)
            on_output()

        self.reader = Reader(self.child, data, lambda status: on_exit(), name="deck-editor")
        self.reader.start()
        self.view = PaneView("editor")

    def send(self, token: k.Token) -> None:
        data = k.to_agent(token, application_cursor=self.terminal.application_cursor,
                          bracketed_paste=self.terminal.bracketed_paste)
        if data:
            self.child.write(data)

    def resize(self, cols: int, rows: int) -> None:
        if (cols, rows) != (self.terminal.cols, self.terminal.rows):
            self.terminal.resize(cols, rows)
            self.child.resize(cols, rows)

    def render(self, cols: int, rows: int, colors: int) -> tuple[list[Line],
                                                                tuple[int, int] | None]:
        height = max(rows - 1, 1)
        self.resize(cols, height)
        self.view.generation += 1
        lines, cursor = self.view.content(self.terminal, cols, height, focused=True,
                                          colors=colors)
        status = clipped_line(cols, [(" EDITOR ", "status accent"),
                                  (f" {inert(self.path)}: the deck comes back when the editor "
                                   "exits ", "status")], "status")
        return [*lines, status][:rows], cursor

    def kill(self) -> None:
        self.reader.halt()
        self.child.terminate(1.0)
        self.child.close()
