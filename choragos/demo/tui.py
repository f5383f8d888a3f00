"""A tiny prompt-based terminal UI, the way agent CLIs behave.

It reads the keyboard in raw mode, echoes what is typed after a ``> ``
prompt, and submits a line only on an Enter that arrives *on its own*:
text and Enter arriving in one read are a paste (the Enter becomes a
newline), which is how real agent TUIs behave and why choragos types a
task and its Enter separately.  Output while busy shows a spinner, so the
deck sees the agent *working*; the prompt means *idle*.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import time
import tty
from collections.abc import Callable

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
COLOURS = {"red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35, "cyan": 36}
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def paint(text: str, colour: str = "", bold: bool = False, dim: bool = False) -> str:
    codes = []
    if colour:
        codes.append(str(COLOURS[colour]))
    if bold:
        codes.append("1")
    if dim:
        codes.append("2")
    return f"\x1b[{';'.join(codes)}m{text}{RESET}" if codes else text


class PromptTUI:
    def __init__(self, name: str, prompt: str = "> ") -> None:
        self.name = name
        self.prompt = prompt
        self.line = ""
        self._saved = None

    # -- output ----------------------------------------------------------------

    def out(self, text: str) -> None:
        data = text.replace("\r\n", "\n").replace("\n", "\r\n").encode()
        while data:
            try:
                written = os.write(1, data)
            except BlockingIOError:
                select.select([], [1], [], 1.0)
                continue
            data = data[written:]

    def say(self, text: str = "") -> None:
        self.out(text + "\n")

    def show_prompt(self) -> None:
        self.out(paint(self.prompt, "cyan", bold=True))

    def busy(self, what: str, seconds: float) -> None:
        """Show a spinner line for ``seconds``; keys typed meanwhile are ignored."""
        end = time.monotonic() + seconds
        frame = 0
        while time.monotonic() < end:
            spinner = SPINNER[frame % len(SPINNER)]
            self.out(f"\r{paint(spinner, 'yellow')} {what}… "
                     f"{paint(f'{end - time.monotonic():3.0f}s', dim=True)}\x1b[K")
            frame += 1
            self._drain(0.12)
        self.out(f"\r{paint('✓', 'green')} {what}\x1b[K\n")

    # -- input -----------------------------------------------------------------

    def run(self, on_line: Callable[[str], None]) -> None:
        if os.isatty(0):
            self._saved = termios.tcgetattr(0)
            tty.setraw(0)
        try:
            self.show_prompt()
            while True:
                ready, _, _ = select.select([0], [], [], 0.5)
                if not ready:
                    continue
                data = os.read(0, 65536)
                if not data:
                    return
                line = self._keys(data.decode(errors="replace"))
                if line is not None:
                    self.out("\n")
                    on_line(line)
                    self.show_prompt()
        finally:
            if self._saved is not None:
                termios.tcsetattr(0, termios.TCSADRAIN, self._saved)

    def _keys(self, chunk: str) -> str | None:
        chunk = chunk.replace("\x1b[200~", "").replace("\x1b[201~", "")
        if chunk == "\r":
            line, self.line = self.line, ""
            return line
        if chunk == "\x03":
            self.out("^C\n")
            self.line = ""
            self.show_prompt()
            return None
        for char in chunk:  # text + Enter in one read is a paste, never a submit
            if char in "\x7f\b":
                if self.line:
                    self.line = self.line[:-1]
                    self.out("\b \b")
                continue
            if char == "\r":
                char = "\n"
            if char == "\x1b" or (ord(char) < 32 and char != "\n"):
                continue
            self.line += char
            self.out(char)
        return None

    def _drain(self, seconds: float) -> None:
        ready, _, _ = select.select([0], [], [], seconds)
        if ready:
            os.read(0, 65536)


def main_guard(body: Callable[[], None]) -> None:
    try:
        body()
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout.flush()
