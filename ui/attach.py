"""``choragos attach``'s client: this terminal becomes the deck's screen.

Standard library only.  The terminal goes into raw mode and window-size
changes go to the session as ``W`` frames.  When stdin and stdout are one
terminal, its descriptor goes with the hello and the session reads the keys
and writes the deck straight to it, as tmux does (``ui/attachtty.py``); the
client then only waits for the end.  Otherwise it relays: keys go to the
session as ``D`` frames, and whatever the deck draws comes back and is
written out unchanged.

The terminal is always given back as it was: raw mode off and the modes
the deck turned on (alternate screen, mouse, bracketed paste, hidden
cursor) off again, whether the session detached us, refused us, ended,
dropped us, or this client crashed (its traceback then goes to
``.choragos/logs/crash.log``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import shlex
import signal
import socket
import sys
import termios
import time
import traceback
import tty
from pathlib import Path

from choragos.ui import attachtty
from choragos.ui import framing as f

CONNECT_TIMEOUT = 5.0
LEAVE_TIMEOUT = 1.0  # served direct: how long a leaving client waits for the session to let go
# Screen bytes held for a terminal that is slower than the session: past
# this the socket is not read, so the session sees the backlog (and holds
# back the frames of panes not typed into until the terminal caught up).
SCREEN_BACKLOG = 32 * 1024

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_UNREACHABLE = 3


class AttachError(Exception):
    """Attaching did not work; the message says why in one sentence."""

    def __init__(self, message: str, code: int = EXIT_UNREACHABLE) -> None:
        super().__init__(message)
        self.code = code


def attach_to(ui_socket: Path, *, force: bool, workdir: Path | None = None) -> int:
    """Attach this terminal to the deck behind ``ui_socket``; returns an exit status."""
    if not (os.isatty(0) and os.isatty(1)):
        print("choragos attach: needs a terminal (stdin and stdout must be a tty)",
              file=sys.stderr)
        return 2
    role = own_role(ui_socket)
    if role:
        print(f"choragos attach: refused: this terminal is a pane of that very session "
              f"(role {role}); attaching here would draw the deck inside itself",
              file=sys.stderr)
        return EXIT_REFUSED
    client = Client(ui_socket, force, workdir)
    try:
        return client.run()
    except AttachError as exc:
        print(f"choragos attach: {exc}", file=sys.stderr)
        return exc.code


def own_role(ui_socket: Path) -> str | None:
    """The role whose pane we are in, when it belongs to the session behind ``ui_socket``.

    Roles get ``CHORAGOS_ROLE`` and ``CHORAGOS_SOCK``; a pane of *another*
    session may attach here (the server still checks process ancestry).
    """
    role, sock = os.environ.get("CHORAGOS_ROLE"), os.environ.get("CHORAGOS_SOCK")
    if not (role and sock):
        return None
    control = ui_socket.with_name(ui_socket.name.removesuffix(".ui.sock") + ".sock")
    try:
        same = Path(sock).resolve() == control.resolve()
    except OSError:
        same = False
    return role if same else None


class Client:
    def __init__(self, ui_socket: Path, force: bool, workdir: Path | None) -> None:
        self.path = ui_socket
        self.force = force
        self.workdir = workdir
        self.sock: socket.socket | None = None
        self.saved: list | None = None
        self.decoder = f.Decoder()
        self.reason = ""
        self.code = f.DETACHED
        self._pending: list[tuple[bytes, bytes]] = []
        self.direct = False  # the session uses this terminal itself
        self._screen = bytearray()  # for the terminal, not written yet
        self._out_flags: int | None = None  # stdout's flags before the relay
        self._signals_r, self._signals_w = os.pipe()
        os.set_blocking(self._signals_r, False)
        os.set_blocking(self._signals_w, False)

    def run(self) -> int:
        self.sock = self._connect()
        try:
            accepted = self._hello()
            self.workdir = Path(accepted.get("dir") or self.workdir or ".")
            self.direct = accepted.get("direct") is True
            self._relay_guarded()
        finally:
            self.sock.close()
        return self._report()

    # -- connecting --------------------------------------------------------------

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(os.fspath(self.path))
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            raise AttachError(self._not_running()) from None
        except OSError as exc:
            sock.close()
            raise AttachError(f"cannot connect to {self.path}: {exc.strerror or exc}") from None
        return sock

    def _not_running(self) -> str:
        control = self.path.with_name(self.path.name.removesuffix(".ui.sock") + ".sock")
        where = f" for {self.workdir}" if self.workdir else ""
        if control.is_socket():
            return (f"the session{where} runs without a deck (--headless), so there is "
                    "nothing to attach to")
        from choragos.session.resume import with_resume_hint

        return with_resume_hint(f"no choragos session with a deck is running{where} (socket "
                                f"{self.path} not found); start one with `choragos serve`",
                                self.workdir)

    def _hello(self) -> dict:
        cols, rows = _size()
        hello = {"pid": os.getpid(), "cols": cols, "rows": rows,
                 "term": os.environ.get("TERM", ""), "colorterm": os.environ.get("COLORTERM", ""),
                 "editor": os.environ.get("VISUAL") or os.environ.get("EDITOR") or "",
                 # https://no-color.org: set and not empty means no colour
                 "no_color": bool(os.environ.get("NO_COLOR")),
                 "tmux": bool(os.environ.get("TMUX")),
                 "force": self.force, "role": own_role(self.path)}
        terminal = attachtty.shared_terminal()
        hello["tty"] = terminal is not None
        attachtty.send_hello(self.sock, f.encode_json(f.HELLO, hello), terminal)
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                raise AttachError("the session did not answer within "
                                  f"{CONNECT_TIMEOUT:g}s") from None
            if not data:
                raise AttachError("the session closed the connection without an answer")
            frames = self.decoder.feed(data)
            if not frames:
                continue
            kind, payload = frames[0]
            self._pending = frames[1:]
            if kind == f.EXIT:
                reason = f.decode_json(payload).get("reason", "refused")
                raise AttachError(f"refused: {reason}", EXIT_REFUSED)
            if kind != f.ACCEPTED:
                raise AttachError("the session answered with something unexpected")
            return f.decode_json(payload)

    # -- relaying ----------------------------------------------------------------

    def _relay_guarded(self) -> None:
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGWINCH, signal.SIGTERM, signal.SIGHUP, signal.SIGCONT,
                                signal.SIGINT)}
        self.saved = termios.tcgetattr(0)
        try:
            tty.setraw(0)
            if self.direct:
                self._direct()
                return
            # The screen is written without blocking, so keys are read and sent
            # while the terminal is still taking a big frame (keys first).
            self._out_flags = fcntl.fcntl(1, fcntl.F_GETFL)
            fcntl.fcntl(1, fcntl.F_SETFL, self._out_flags | os.O_NONBLOCK)
            self._relay()
        except BaseException:
            trace = traceback.format_exc()
            if self.direct:
                self._let_go()
            self._restore()
            where = _write_crash(self.workdir, trace)
            self.reason = (f"the attach client crashed: {sys.exc_info()[1]!r}; traceback in "
                           f"{where}" if where else trace)
            self.code = -1
        finally:
            self._restore()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.write(self._signals_w, bytes([signum]))

    def _direct(self) -> None:
        """The session reads and writes this terminal itself: pass on window
        changes and wait for the end."""
        self.sock.setblocking(False)
        outbox = bytearray(f.encode(f.READY))
        while True:
            if outbox:
                _send_some(self.sock, outbox)
            if self._pending:
                frames, self._pending = self._pending, []
                if self._frames(frames):
                    return
            ready, _, _ = select.select([self.sock, self._signals_r],
                                        [self.sock] if outbox else [], [], 1.0)
            if self._signals_r in ready and self._signals(outbox):
                self._let_go()
                return
            if self.sock in ready and self._from_session(leaving=False):
                return

    def _let_go(self) -> None:
        """Leaving on our own while served direct (a signal, a crash): tell
        the session by half-closing the socket and wait, a second at most,
        until it has let go of the terminal, so nothing it writes lands
        after the terminal was restored."""
        with contextlib.suppress(OSError, ValueError):
            self.sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LEAVE_TIMEOUT
            while time.monotonic() < deadline:
                ready, _, _ = select.select([self.sock], [], [], deadline - time.monotonic())
                if ready and self._from_session(leaving=True):
                    return

    def _from_session(self, leaving: bool) -> bool:
        """What the session sent, when served direct; True at the end."""
        try:
            data = self.sock.recv(1 << 18)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if data == b"":
            if not leaving:
                self.reason = self.reason or "the session closed the connection"
                self.code = f.ENDED
            return True
        if leaving:
            return False  # its goodbye to a client that is going anyway
        return self._frames(self.decoder.feed(data))

    def _frames(self, frames: list[tuple[bytes, bytes]]) -> bool:
        for kind, payload in frames:
            if self._frame(kind, payload):
                return True
        if self._screen:  # not sent while served direct; written all the same
            _write_all(1, bytes(self._screen))
            self._screen.clear()
        return False

    def _relay(self) -> None:
        self.sock.setblocking(False)
        try:
            self._relay_loop()
        finally:
            with contextlib.suppress(OSError):
                _write_all(1, bytes(self._screen))  # what the session said last
            self._screen.clear()

    def _relay_loop(self) -> None:
        for kind, payload in self._pending:
            if self._frame(kind, payload):
                return
        outbox = bytearray()
        while True:
            want = [0, self._signals_r]
            if len(self._screen) < SCREEN_BACKLOG:
                want.append(self.sock)
            writes = ([self.sock] if outbox else []) + ([1] if self._screen else [])
            ready, writable, _ = select.select(want, writes, [], 1.0)
            if self._signals_r in ready and self._signals(outbox):
                return
            if 0 in ready:
                try:
                    data = os.read(0, 1 << 16)
                except BlockingIOError:  # stdin may share stdout's non-blocking flag
                    data = None
                if data == b"":
                    self.reason = "the terminal closed"
                    return
                if data:
                    outbox += f.encode_data(data)
                    _send_some(self.sock, outbox)  # keys go out before the screen is served
            if 1 in writable:
                self._write_screen()
            if self.sock in ready:
                try:
                    data = self.sock.recv(1 << 18)
                except BlockingIOError:
                    data = None
                if data == b"":
                    self.reason = self.reason or "the session closed the connection"
                    self.code = f.ENDED
                    return
                if data:
                    for kind, payload in self.decoder.feed(data):
                        if self._frame(kind, payload):
                            return
                    if self._screen:  # at once: the terminal usually takes it now
                        self._write_screen()
            if outbox:
                _send_some(self.sock, outbox)

    def _signals(self, outbox: bytearray) -> bool:
        try:
            got = os.read(self._signals_r, 64)
        except BlockingIOError:
            return False
        for signum in got:
            if signum in (signal.SIGWINCH, signal.SIGCONT):
                if signum == signal.SIGCONT and self.saved is not None:
                    tty.setraw(0)
                outbox += f.window(*_size())
            else:
                # SIGINT too: a ctrl-c from outside the deck (the deck's own
                # terminal is raw, so one typed there is a key) detaches.
                self.reason = f"stopped by {signal.Signals(signum).name}"
                return True
        return False

    def _write_screen(self) -> None:
        try:
            written = os.write(1, self._screen)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno == errno.EINTR:
                return
            raise
        del self._screen[:written]

    def _frame(self, kind: bytes, payload: bytes) -> bool:
        if kind == f.DATA:
            self._screen += payload
            return False
        if kind == f.EXIT:
            value = f.decode_json(payload)
            self.reason = str(value.get("reason", ""))
            self.code = int(value.get("code", f.DETACHED))
            return True
        return False

    # -- leaving -------------------------------------------------------------------

    def _restore(self) -> None:
        if self._out_flags is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(1, fcntl.F_SETFL, self._out_flags)
            self._out_flags = None
        if self.saved is None:
            return
        with contextlib.suppress(OSError):
            _write_all(1, attachtty.RESTORE)
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(0, termios.TCSADRAIN, self.saved)
        self.saved = None

    def _again(self) -> str:
        """The command that finds this session again from the shell's
        directory: a plain attach looks for the session of the directory it
        runs in (a demo's runs elsewhere)."""
        if self.workdir is None:
            return "choragos attach"
        try:
            here = os.path.realpath(os.getcwd())
        except OSError:  # the shell's directory is gone
            here = ""
        there = os.path.realpath(self.workdir)
        if here == there or here.startswith(there.rstrip(os.sep) + os.sep):
            return "choragos attach"
        return f"choragos attach -t {shlex.quote(str(self.workdir))}"

    def _report(self) -> int:
        where = f" from {self.workdir}" if self.workdir else ""
        if self.code == f.DETACHED:
            why = f": {self.reason}" if self.reason not in ("", "detached") else ""
            print(f"[detached{where}{why}; `{self._again()}` brings the deck back]")
            return EXIT_OK
        if self.code == f.ENDED:
            # A session that failed says why, here, not only in its log.
            failed = self.reason not in ("", f.ENDED_REASON)
            print(f"[the session{where.replace(' from', ' in')} ended"
                  f"{': ' + self.reason if failed else ''}]")
            return 1 if failed else EXIT_OK
        if self.code == -1:
            print(self.reason, file=sys.stderr)
            return 1
        print(f"[detached{where}: {self.reason}]")
        return EXIT_OK if self.code == f.TAKEN_OVER else 1


def _size() -> tuple[int, int]:
    try:
        size = os.get_terminal_size(1)
        return max(size.columns, 1), max(size.lines, 1)
    except OSError:
        return 80, 24


def _send_some(sock: socket.socket, outbox: bytearray) -> None:
    with contextlib.suppress(BlockingIOError):
        sent = sock.send(outbox)
        del outbox[:sent]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        view = view[written:]


def _write_crash(workdir: Path | None, trace: str) -> Path | None:
    from choragos.session.daemon import write_crash

    return write_crash(workdir or Path.cwd(), "attach client crash", trace)
