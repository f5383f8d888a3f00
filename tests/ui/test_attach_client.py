"""The attach client in a real PTY against a scripted server: it relays, and it
gives the terminal back -- after a detach and after a crash of its own."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from ptyprocess import PtyProcess

from choragos.ui import framing as f
from choragos.ui.attachtty import RESTORE
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]

CLIENT = """
import sys, termios
from pathlib import Path
import choragos.ui.attach as attach
if sys.argv[3] == "split":  # stdout on a terminal of its own, printed back at the end
    import os, pty
    master, slave = pty.openpty()
    saved = os.dup(1)
    os.dup2(slave, 1)
if sys.argv[3] == "crash":
    def boom(self, kind, payload):
        raise RuntimeError("boom")
    attach.Client._frame = boom
code = attach.attach_to(Path(sys.argv[1]), force=False, workdir=Path(sys.argv[2]))
if sys.argv[3] == "split":
    os.dup2(saved, 1)
echo = bool(termios.tcgetattr(0)[3] & termios.ECHO)
print(f"exit={code} echo={'on' if echo else 'off'}")
"""


class ScriptedServer:
    """Accepts one client, answers its hello, sends a frame, records what came back."""

    def __init__(self, path: Path, then: list[bytes]) -> None:
        self.dir = str(path.parent)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(1)
        self.then = then
        self.received: list[tuple[bytes, bytes]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.listener.close()  # one client only
        decoder = f.Decoder()
        with conn:
            conn.settimeout(10)
            while not self.received:
                self.received += decoder.feed(conn.recv(65536))
            conn.sendall(f.encode_json(f.ACCEPTED, {"pid": 1, "dir": self.dir}))
            for frame in self.then:
                conn.sendall(frame)
            try:
                while data := conn.recv(65536):
                    self.received += decoder.feed(data)
            except OSError:
                pass


def spawn_client(sock: Path, workdir: Path, mode: str, cwd: Path | None = None) -> PtyProcess:
    return PtyProcess.spawn([sys.executable, "-c", CLIENT, str(sock), str(workdir), mode],
                            env={"PYTHONPATH": str(ROOT), "TERM": "xterm-256color",
                                 "PATH": "/usr/bin:/bin"},
                            cwd=str(cwd or workdir), dimensions=(30, 100))


def run_client(sock: Path, workdir: Path, mode: str,
               cwd: Path | None = None) -> tuple[str, PtyProcess]:
    proc = spawn_client(sock, workdir, mode, cwd)
    output = bytearray()
    while True:
        try:
            output += proc.read(65536)
        except EOFError:
            break
    proc.wait()
    return output.decode(errors="replace"), proc


@pytest.fixture
def where(short_tmp):
    (short_tmp / ".choragos" / "logs").mkdir(parents=True)
    return short_tmp


def test_a_detach_restores_the_terminal(where):
    server = ScriptedServer(where / "u.sock", [
        f.encode_data(b"\x1b[?1049h\x1b[?1000hDECK"),
        f.encode_json(f.EXIT, {"reason": "detached", "code": f.DETACHED})])
    output, _ = run_client(where / "u.sock", where, "plain")
    assert "DECK" in output
    assert RESTORE.decode() in output
    assert f"[detached from {where}; `choragos attach` brings the deck back]" in output
    assert "detached: detached" not in output
    assert "exit=0 echo=on" in output
    hello = f.decode_json(server.received[0][1])
    assert (hello["cols"], hello["rows"]) == (100, 30) and hello["force"] is False


def test_a_detach_elsewhere_names_the_session_to_come_back_to(where, tmp_path):
    """Detached in a shell whose directory is not the session's (a demo's),
    a plain ``choragos attach`` would find nothing: the line names it."""
    ScriptedServer(where / "u.sock", [
        f.encode_json(f.EXIT, {"reason": "detached", "code": f.DETACHED})])
    output, _ = run_client(where / "u.sock", where, "plain", cwd=tmp_path)
    assert f"`choragos attach -t {where}` brings the deck back]" in output


def test_a_crash_restores_the_terminal_and_leaves_the_traceback(where):
    ScriptedServer(where / "u.sock", [f.encode_data(b"\x1b[?1049hDECK")])
    output, _ = run_client(where / "u.sock", where, "crash")
    assert RESTORE.decode() in output
    assert "the attach client crashed: RuntimeError('boom')" in output
    assert "exit=1 echo=on" in output
    log = where / ".choragos" / "logs" / "crash.log"
    wait_until(log.exists, 5, message="the crash log")
    assert "RuntimeError: boom" in log.read_text()


def test_a_refusal_is_one_line_and_touches_nothing(where):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(where / "u.sock"))
    listener.listen(1)

    def refuse() -> None:
        conn, _ = listener.accept()
        listener.close()
        with conn:
            conn.recv(65536)
            conn.sendall(f.encode_json(f.EXIT, {"reason": "the session is already attached "
                                                "by pid 4242", "code": f.REFUSED}))
    threading.Thread(target=refuse, daemon=True).start()
    output, _ = run_client(where / "u.sock", where, "plain")
    assert "refused: the session is already attached by pid 4242" in output
    assert "exit=1 echo=on" in output
    assert "\x1b[?1049" not in output  # the terminal was never switched


def test_no_session_is_a_plain_sentence(where):
    output, _ = run_client(where / "missing.ui.sock", where, "plain")
    assert "no choragos session with a deck is running" in output
    assert "exit=3" in output


def test_only_a_pane_of_the_same_session_refuses_locally(where, monkeypatch):
    from choragos.ui.attach import own_role

    ui_sock = where / "s.ui.sock"
    monkeypatch.setenv("CHORAGOS_ROLE", "coder")
    monkeypatch.setenv("CHORAGOS_SOCK", str(where / "s.sock"))
    assert own_role(ui_sock) == "coder"
    monkeypatch.setenv("CHORAGOS_SOCK", str(where / "other.sock"))
    assert own_role(ui_sock) is None  # a pane of another session may attach here
    monkeypatch.delenv("CHORAGOS_ROLE")
    assert own_role(ui_sock) is None


class FloodingServer:
    """Accepts one client and sends it screen bytes without end (on a thread of
    their own), recording the client's frames meanwhile."""

    def __init__(self, path: Path) -> None:
        self.dir = str(path.parent)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(1)
        self.received: list[tuple[bytes, bytes]] = []
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.listener.close()  # one client only
        decoder = f.Decoder()
        conn.settimeout(10)
        while not self.received:
            self.received += decoder.feed(conn.recv(65536))
        conn.sendall(f.encode_json(f.ACCEPTED, {"pid": 1, "dir": self.dir}))
        flood = threading.Thread(target=self._flood, args=(conn,), daemon=True)
        flood.start()
        with contextlib.suppress(OSError):
            while data := conn.recv(65536):
                self.received += decoder.feed(data)
        flood.join(10)  # the client is gone: its next send fails
        conn.close()

    def _flood(self, conn: socket.socket) -> None:
        frame = f.encode_data(b"\x1b[31mflood line\x1b[0m\r\n" * 2000)
        with contextlib.suppress(OSError):
            while not self.stop.is_set():
                conn.sendall(frame)
            conn.sendall(f.encode_json(f.EXIT, {"reason": "test over", "code": f.DETACHED}))

    def typed(self) -> bytes:
        return b"".join(payload for kind, payload in list(self.received) if kind == f.DATA)


def test_keys_go_out_while_the_terminal_is_behind(where):
    """A terminal that takes the screen slower than it comes (here: not at all
    until the key arrived) does not hold the keys back: they are read and sent
    while the screen waits."""
    sock, workdir = where / "u.sock", where
    server = FloodingServer(sock)
    proc = spawn_client(sock, workdir, "normal")
    try:
        wait_until(lambda: server.received, 10, message="the hello")
        time.sleep(0.5)  # the flood fills the terminal, which nobody reads yet
        proc.write(b"k")
        wait_until(lambda: b"k" in server.typed(), 10, message="the key despite the backlog")
        server.stop.set()
        output = bytearray()
        while True:  # now the terminal is read: the screen and the exit arrive
            try:
                output += proc.read(65536)
            except EOFError:
                break
        assert b"flood line" in output
        assert b"exit=0 echo=on" in output
    finally:
        server.stop.set()
        if proc.isalive():
            proc.terminate(force=True)


class DirectServer:
    """Takes the terminal the client passes with its hello, as the session
    does: draws on it once the client says it is raw, reads the keys from
    it, and lets go of it before it tells the client the end."""

    def __init__(self, path: Path, leave: bool = True) -> None:
        self.dir = str(path.parent)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(1)
        self.leave = leave  # False: wait for the client to go
        self.hello: dict = {}
        self.keys = bytearray()
        self.ready = threading.Event()
        self.client_left = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.listener.close()  # one client only
        conn.settimeout(10)
        data, fds, _, _ = socket.recv_fds(conn, 65536, 4)
        decoder = f.Decoder()
        self.hello = f.decode_json(decoder.feed(data)[0][1])
        terminal = fds[0]
        conn.sendall(f.encode_json(f.ACCEPTED, {"pid": 1, "dir": self.dir, "direct": True}))
        while not any(kind == f.READY for kind, _ in decoder.feed(conn.recv(65536))):
            pass
        self.ready.set()
        os.write(terminal, b"drawn by the session\r\n")
        if not self.leave:
            conn.sendall(f.encode_data(b"a frame on the socket"))
            while conn.recv(65536):  # until the client half-closes
                pass
            self.client_left.set()
            os.write(terminal, b"the session's last words\r\n")
            os.close(terminal)
            conn.close()
            return
        while b"q" not in self.keys:
            self.keys += os.read(terminal, 1024)
        os.close(terminal)  # let go first, then say goodbye
        conn.sendall(f.encode_json(f.EXIT, {"reason": "test over", "code": f.DETACHED}))
        conn.close()


@contextlib.contextmanager
def _ready_client(server: DirectServer, sock: Path, workdir: Path, mode: str = "normal"):
    """The client in a PTY of its own, once it has told ``server`` its
    terminal is raw; never left running."""
    proc = spawn_client(sock, workdir, mode)
    try:
        assert server.ready.wait(10), "the client never said its terminal is ready"
        yield proc
    finally:
        if proc.isalive():
            proc.terminate(force=True)


def _rest(proc: PtyProcess) -> bytes:
    output = bytearray()
    while True:
        try:
            output += proc.read(65536)
        except EOFError:
            return bytes(output)


def test_the_session_is_given_the_terminal_and_the_client_only_waits(where):
    sock, workdir = where / "u.sock", where
    server = DirectServer(sock)
    with _ready_client(server, sock, workdir) as proc:
        assert server.hello["tty"] is True
        seen = bytearray()
        while b"drawn by the session" not in seen:  # the test's timeout bounds it
            seen += proc.read(65536)
        # Keys typed are the session's to read, not the client's to relay.
        proc.write(b"abc q")
        output = bytes(seen) + _rest(proc)
    assert bytes(server.keys).startswith(b"abc q")
    assert output.index(b"drawn by the session") < output.index(RESTORE)
    assert b"[detached from" in output and b"exit=0 echo=on" in output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_client_leaving_on_a_signal_waits_for_the_session_to_let_go(where, signum):
    sock, workdir = where / "u.sock", where
    server = DirectServer(sock, leave=False)
    with _ready_client(server, sock, workdir) as proc:
        proc.kill(signum)
        output = _rest(proc)
    assert server.client_left.is_set()
    name = signal.Signals(signum).name.encode()
    assert b"[detached from %s: stopped by %s;" % (str(workdir).encode(), name) in output
    assert b"exit=0 echo=on" in output
    assert b"crashed" not in output and b"Traceback" not in output
    assert not (where / ".choragos" / "logs" / "crash.log").exists()
    # The session let go of the terminal before the client restored it.
    assert output.index(b"the session's last words") < output.index(RESTORE)


def test_a_client_crashing_while_served_direct_lets_the_session_go_first(where):
    sock, workdir = where / "u.sock", where
    server = DirectServer(sock, leave=False)
    with _ready_client(server, sock, workdir, "crash") as proc:
        output = _rest(proc)
    assert server.client_left.is_set()
    assert b"the attach client crashed" in output and b"echo=on" in output
    assert output.index(b"the session's last words") < output.index(RESTORE)


def test_a_client_whose_output_is_another_terminal_is_relayed(where):
    sock, workdir = where / "u.sock", where
    server = ScriptedServer(sock, [f.encode_data(b"relayed screen"),
                                   f.encode_json(f.EXIT, {"reason": "bye", "code": f.DETACHED})])
    output, _ = run_client(sock, workdir, "split")
    hello = f.decode_json(server.received[0][1])
    assert hello["tty"] is False  # stdin's terminal is not stdout's: nothing to hand over
    assert "exit=0" in output
