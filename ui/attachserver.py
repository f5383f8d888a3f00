"""The attach socket: relays the deck's PTY to one client and its keys back.

It lives next to the control socket (``<hash>.ui.sock``) under the same
rules: a private directory, a 0600 socket, peers of another uid refused
(the helpers are the control server's own).  One client at a time: a second
one is refused and told the holder's pid, unless it asks to take over.  A
client inside one of the session's own panes is refused (the deck would be
drawn inside itself).

A client that passed its terminal with the hello (``ui/attachtty.py``) is
served *direct*: once it says its terminal is raw, the deck's frames are
written to that terminal and the keys read from it here, and the socket
carries only control frames.  Any other client is served through the relay:
screen and keys in ``D`` frames.

The deck's frames reach the client without a hand-over: the deck's screen
gives each frame to :meth:`AttachServer._frame_out` on the drawing thread,
which writes it at once when the terminal (or the socket) takes it (a
keystroke's echo waits for no other thread); what is not taken waits in the
client's outbox for the pump.  One pump thread moves every other byte: the
client's keys, the outbox's rest, and whatever reaches the deck's PTY (a
screen without a direct hand-over).  With nobody attached the bytes are
dropped.  A client that stops reading is dropped too, once its backlog
passes ``OUTBOX_LIMIT`` or it has made no progress for ``STALL_SECONDS``: a
stalled SSH session must never hold up the crew.

The accept loop and the pump are the attach actor's (``attachactor.py``):
one that dies is said (``relay died``) and told to ``on_died``, which makes
it the actor's crash; the restarted actor's :meth:`AttachServer.serve`
starts it again on the socket still bound.  Once the deck's supervisor
gives the deck up (:meth:`AttachServer.give_up`), the client is sent away
with the reason; the next client asks ``revive`` for a new deck
(``decktree.py``), which this server then serves (:meth:`AttachServer.adopt`),
and is refused with the reason only if that fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import socket
import termios
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choragos.control import authority
from choragos.control.server import _bind, _peer_creds, _prepare_dir, _remove_stale
from choragos.fdwait import wait_ready
from choragos.session import hopstamps
from choragos.ui import attachtty
from choragos.ui import framing as f
from choragos.ui.deck import ClientInfo, Deck, colors_for

log = logging.getLogger("choragos.attach")

HELLO_DEADLINE = 5.0
OUTBOX_LIMIT = 8 << 20
STALL_SECONDS = 10.0
READ_BUDGET = 1 << 20  # PTY bytes taken per pass, so the client side gets its turn
# A small socket buffer, so bytes the client has not taken show up as our
# backlog (the deck then holds back neighbours' frames) instead of hiding in
# the kernel ahead of the next echo.
SEND_BUFFER = 64 * 1024
# The poll masks a keystroke's dispatch tests, as module globals (no
# attribute look-up of the select module on a key's way).
_POLLIN, _POLLOUT = select.POLLIN, select.POLLOUT
_READABLE = select.POLLIN | select.POLLHUP | select.POLLERR


@dataclass
class _Client:
    """The attached client as the attach server serves it: its socket or terminal, its outbox."""

    sock: socket.socket
    pid: int
    info: ClientInfo
    decoder: f.Decoder = field(default_factory=f.Decoder)
    outbox: bytearray = field(default_factory=bytearray)  # for the terminal (or the socket)
    progress: float = field(default_factory=time.monotonic)
    tty: int | None = None  # served direct: the session's own descriptor of its terminal
    ready: bool = False  # direct: the client said its terminal is raw
    peer: int = 0  # the client's pid, as the socket's credentials give it
    saved: list | None = None  # direct: the terminal's settings before the client made it raw

    def __post_init__(self) -> None:
        self.fd = self.sock.fileno()

    def wrap(self, data: bytes) -> bytes:
        """Screen bytes as they go out: as they are to the terminal, else framed."""
        return data if self.tty is not None else f.encode_data(data)

    def write(self) -> int:
        """Write what the outbox holds as far as it goes (BlockingIOError:
        nothing went); 0 while a direct client's terminal is not ready."""
        if self.tty is None:
            sent = self.sock.send(self.outbox)
        elif not self.ready:
            return 0
        else:
            sent = os.write(self.tty, self.outbox)
        del self.outbox[:sent]
        return sent

    @property
    def out_fd(self) -> int | None:
        """What the outbox drains into, when it can be written now."""
        if self.tty is None:
            return self.fd
        return self.tty if self.ready else None

    def release_terminal(self) -> None:
        if self.tty is not None:
            with contextlib.suppress(OSError):
                os.close(self.tty)
            self.tty = None


class AttachServer:
    def __init__(self, path: Path, deck: Deck, *, role_pids: Callable[[], list[int]],
                 workdir: Path, on_event: Callable[..., None] | None = None,
                 on_client: Callable[[int | None], None] | None = None) -> None:
        self.path = Path(path)
        self.role_pids = role_pids
        self.workdir = workdir
        self.on_event = on_event or (lambda *a, **kw: None)
        self.on_client = on_client or (lambda pid: None)
        self._listener: socket.socket | None = None
        self._client: _Client | None = None
        self._requests: deque = deque()
        self._lock = threading.Lock()
        self._out = threading.Lock()  # the client's outbox: the pump and the drawing thread
        # on_client, told by the deck's thread (a frame) and the pump's (a drop)
        self._telling = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._closed = False
        # Told (on the dying thread) when the accept loop or the pump dies.
        self.on_died: Callable[[str], None] | None = None
        self.refusal = ""  # while the deck is given up: what a client is told
        # Asked (on the handshake's thread, with the client's pid) when a
        # client comes while the deck is given up: True once it runs again.
        self.revive: Callable[[int], bool] | None = None
        self._bound = False
        self._wire(deck)

    def _wire(self, deck: Deck) -> None:
        """Serve ``deck`` (the first one, or the one built after a give-up)."""
        self.deck = deck
        self.master = deck.screen.master
        deck.on_detach = lambda reason: self._request("detach", reason)
        deck.on_client_frame = self._client_drawn
        deck.on_crash = lambda reason: self.on_event("deck crashed", reason=reason)
        if self._bound:
            self._hand_frames()

    def _hand_frames(self) -> None:
        """The deck's frames come straight to the client (see _frame_out)."""
        set_sink = getattr(self.deck.screen, "set_sink", None)
        if set_sink is not None:
            set_sink(self._frame_out)
        self.deck.client_backlog = self.backlog

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Bind the socket and start its threads (see :meth:`bind`, :meth:`serve`)."""
        self.bind()
        self.serve()

    def bind(self) -> None:
        """The private directory and the socket; raises ServerStartError."""
        _prepare_dir(self.path.parent, lambda kind, fields: self.on_event(kind, **fields))
        _remove_stale(self.path)
        self._listener = _bind(self.path)
        self._bound = True
        self._hand_frames()

    def serve(self) -> None:
        """Start the accept loop and the pump, or the one of them that died."""
        if self._stopping.is_set():
            return
        self._threads = [t for t in self._threads if t.is_alive()]
        running = {t.name for t in self._threads}
        for target, name in ((self._accept_loop, "attach-accept"), (self._pump, "attach-pump")):
            if name not in running:
                thread = threading.Thread(target=self._guarded, args=(target, name),
                                          name=name, daemon=True)
                thread.start()
                self._threads.append(thread)

    def _guarded(self, duty: Callable[[], None], name: str) -> None:
        """A thread's duty; its death is said and handed to ``on_died`` (the
        attach actor's crash, see ``ui/attachactor.py``), never silent."""
        try:
            duty()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.error("%s died", name, exc_info=True)
            if duty == self._pump:
                # The client it served may be what killed it: sent away, so the
                # pump that replaces this one starts clean.
                with contextlib.suppress(Exception):
                    self._drop(f"the deck's relay failed ({error}); attach again", f.DROPPED)
            self.on_event("relay died", thread=name, error=error)
            if self.on_died is None:
                raise  # nobody owns this thread: the session's thread hook reports it
            # Dead from now on, though this thread still winds down: the actor
            # the supervisor starts next must start its duty again.
            me = threading.current_thread()
            self._threads = [t for t in self._threads if t is not me]
            self.on_died(f"{name}: {error}")

    def close(self, reason: str = f.ENDED_REASON) -> None:
        if self._closed:  # the UI's stop, then the attach actor's shutdown
            return
        self._closed = True
        set_sink = getattr(self.deck.screen, "set_sink", None)
        if set_sink is not None:
            set_sink(None)
        self._request("close", reason)
        self._stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept loop
        for thread in self._threads:
            thread.join(timeout=3.0)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def give_up(self, reason: str) -> None:
        """The deck is given up for good (its supervisor's last word): the
        attached client is told ``reason`` and let go, and every later one is
        refused with it.  The socket stays bound until the session ends, so
        nobody hangs on it or is told there is no session."""
        with self._lock:  # a client handed in after this is refused (_hand_in)
            self.refusal = reason
        self.on_died = None  # its actor is gone: a death now goes to the thread hook
        set_sink = getattr(self.deck.screen, "set_sink", None)
        if set_sink is not None:
            set_sink(None)
        self.serve()  # a dead thread again: the pump sends the client away, accepts go on
        self._request("give up", reason)

    def adopt(self, deck: Deck) -> None:
        """A new deck after a give-up (``revive`` builds it): served from now
        on, once the given-up one's pump has stopped; its actor's
        :meth:`serve` starts the pump again."""
        for thread in [t for t in self._threads if t.name == "attach-pump"]:
            thread.join(timeout=3.0)
            if thread.is_alive():
                raise RuntimeError("the given-up deck's relay has not stopped")
        self._wire(deck)
        with self._lock:
            self.refusal = ""

    def inject_fault(self) -> None:
        """Test hook: make the pump raise, as a real failure would."""
        self._request("fault")

    @property
    def holder(self) -> int | None:
        with self._lock:
            return self._client.pid if self._client else None

    def _request(self, kind: str, value: Any = None) -> None:
        self._requests.append((kind, value))
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"!")

    # -- accepting ----------------------------------------------------------------------

    def _accept_loop(self) -> None:
        listener = self._listener
        while not self._stopping.is_set():
            # No timeout: close() shuts the listener down, which wakes this.
            if not wait_ready(listener, None) or self._stopping.is_set():
                continue
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._handshake, args=(conn,), daemon=True,
                             name="attach-hello").start()

    def _handshake(self, conn: socket.socket) -> None:
        try:
            client = self._greet(conn)
            self._hand_in(client)
        except _Refusal as refusal:
            self.on_event("attach refused", reason=refusal.reason, pid=refusal.pid)
            _send_exit(conn, refusal.reason, f.REFUSED)
            conn.close()
            return
        except (OSError, f.FrameError) as exc:
            self.on_event("attach failed", error=str(exc))
            conn.close()
            return

    def _hand_in(self, client: _Client) -> None:
        """The accepted client to the pump, unless the deck was given up
        meanwhile (a revived deck failing again at once): then refused with
        the reason, never left waiting behind the pump's last request."""
        with self._lock:  # give_up sets the refusal under it, then asks the pump
            refusal = self.refusal
            if not refusal:
                self._requests.append(("client", client))
        if refusal:
            client.release_terminal()
            raise _Refusal(refusal, client.peer or client.pid)
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"!")

    def _greet(self, conn: socket.socket) -> _Client:
        conn.settimeout(HELLO_DEADLINE)
        creds = _peer_creds(conn)
        pid = creds[0] if creds else 0
        if creds is not None and creds[1] != os.getuid():
            raise _Refusal(f"uid {creds[1]} does not own this session", pid)
        hello, passed = _read_hello(conn)
        try:
            return self._accept(conn, pid, hello, passed)
        finally:
            attachtty.close_all(passed)  # the terminal, if used, was opened again

    def _accept(self, conn: socket.socket, pid: int, hello: dict,
                passed: list[int]) -> _Client:
        size = f.size_of(hello)
        if size is None:
            raise _Refusal("the client did not say its window size", pid)
        role = self._inside_pane(pid, hello)
        if role:
            raise _Refusal(f"you are inside this session's own pane ({role}); attaching "
                           "there would draw the deck inside itself", pid)
        if self.refusal and not self._revived(pid):
            raise _Refusal(self.refusal, pid)
        with self._lock:
            holder = self._client
        if holder is not None and not hello.get("force"):
            raise _Refusal(f"the session is already attached by pid {holder.pid}; "
                           "`choragos attach --force` takes it over", pid)
        info = ClientInfo(pid=int(hello.get("pid") or pid), cols=size[0], rows=size[1],
                          term=str(hello.get("term") or "xterm-256color")[:64],
                          colors=colors_for(str(hello.get("term", "")),
                                            str(hello.get("colorterm", "")),
                                            hello.get("no_color") is True),
                          editor=str(hello.get("editor") or "")[:512],
                          in_tmux=hello.get("tmux") is True)
        conn.settimeout(None)
        conn.setblocking(False)
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        tty = attachtty.reopen(passed) if hello.get("tty") is True else None
        if hello.get("tty") is True and tty is None:
            log.info("attach client pid %d: its terminal cannot be used here; relaying", pid)
        # The client waits for our answer before it makes the terminal raw:
        # these are the settings to give back should it die without doing so.
        saved = attachtty.modes(tty) if tty is not None else None
        return _Client(conn, info.pid, info, tty=tty, peer=pid, saved=saved)

    def _revived(self, pid: int) -> bool:
        """The deck is given up: this attach asks for it back (once)."""
        return not self._closed and self.revive is not None and self.revive(pid)

    def _inside_pane(self, pid: int, hello: dict) -> str | None:
        if hello.get("role"):
            return str(hello["role"])[:32]
        # An ancestry that cannot be read to its end is never let in.
        found = authority.trace(pid, set(self.role_pids()))
        if found.holder is not None:
            return f"pid {found.holder}"
        return None if found.complete else "an ancestry too deep to trace"

    # -- the pump -------------------------------------------------------------------------

    def _pump(self) -> None:
        from choragos.terminal.timeslice import short_slice  # with the first client

        short_slice()  # the key's first thread: in ahead of a flood's batch
        poller = select.poll()
        poller.register(self.master, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        watched: list[int] = []
        # What the poll set was made for: made again only when one of these
        # changed (after a keystroke, none has: its write is the pump's last
        # step but for this look).
        seen: tuple[_Client | None, bool, bool] | None = None
        while True:
            client = self._client
            # Frames still waiting for the client: watch for room to send them,
            # and keep a clock for the stall check.  Else asleep until something comes.
            waiting = client is not None and bool(client.outbox)
            ready = client is not None and client.ready
            if seen is None or seen[0] is not client or seen[1] != waiting \
                    or seen[2] != ready:
                watched = _watch(poller, watched, client, waiting)
                seen = (client, waiting, ready)
            for fd, events in poller.poll(1000 if waiting else None):
                client = self._client
                # The direct client's terminal first: a keystroke comes this way.
                if client is not None and fd == client.tty:
                    self._terminal_event(client, events)
                elif fd == self._wake_r:
                    if self._serve_requests():
                        return
                elif fd == self.master:
                    self._from_deck()
                elif client is not None and fd == client.fd:
                    self._client_event(events)
            self._check_stall()

    def backlog(self) -> int:
        """Bytes on their way to the client it has not read yet: the outbox
        and what waits in the socket (0 with nobody attached)."""
        with self._out:
            client = self._client
            if client is None:
                return 0
            queued = len(client.outbox)
            fd = client.out_fd
        if fd is None:
            return queued
        try:
            waiting = fcntl.ioctl(fd, termios.TIOCOUTQ, b"\0\0\0\0")
        except OSError:
            return queued
        return queued + int.from_bytes(waiting, "little", signed=True)

    def _frame_out(self, data: bytes) -> None:
        """A frame from the deck, on its drawing thread: sent now if the socket
        takes it, else left in the outbox and the pump woken to finish it."""
        if hopstamps.ON:
            hopstamps.mark("frame-in")
        with self._out:
            client = self._client
            if client is None:
                return
            queued = bool(client.outbox)
            # As client.wrap, inline: a key's echo comes this way.
            client.outbox += data if client.tty is not None else f.encode_data(data)
            if not queued:  # nothing waits ahead of it: the frame may go now
                try:
                    if client.write():
                        client.progress = time.monotonic()
                except OSError:
                    pass  # a broken socket is the pump's to see
                if hopstamps.ON:
                    hopstamps.mark("frame-written")
            if not client.outbox or client.out_fd is None:
                return
            if hopstamps.ON:
                hopstamps.mark("frame-queued")
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"!")  # the pump polls for POLLOUT now

    def _serve_requests(self) -> bool:
        with contextlib.suppress(OSError):
            os.read(self._wake_r, 4096)
        while self._requests:
            kind, value = self._requests.popleft()
            if kind == "client":
                self._take(value)
            elif kind == "detach":
                self._drop(value, f.DETACHED)
            elif kind == "close":
                self._drop(value, f.ENDED)
                return True
            elif kind == "give up":  # the deck is gone: nothing left to pump
                self._drop(value, f.DROPPED)
                return True
            elif kind == "fault":
                raise RuntimeError("a fault was injected into the attach pump")
        return False

    def _take(self, client: _Client) -> None:
        if self._client is not None:
            self._drop(f"taken over by pid {client.pid}", f.TAKEN_OVER)
        accepted = f.encode_json(f.ACCEPTED, {"pid": os.getpid(), "dir": str(self.workdir),
                                              "direct": client.tty is not None})
        with self._out:
            if client.tty is None:
                client.outbox += accepted
            else:  # the socket is new and empty: a small frame always fits
                with contextlib.suppress(OSError):
                    client.sock.sendall(accepted)
            with self._lock:
                self._client = client
        self.on_event("attached", pid=client.pid, cols=client.info.cols,
                      rows=client.info.rows, direct=client.tty is not None)
        # on_client (the sidecar's write, the rest of `serve`'s start) waits
        # for the client's first frame: see _client_drawn.
        self.deck.client_attached(client.info)

    def _client_drawn(self) -> None:
        """The attached client's first frame went out (on the deck's thread)."""
        with self._telling:  # a drop meanwhile has cleared the client first
            client = self._client
            if client is not None:
                self.on_client(client.pid)

    def _drop(self, reason: str, code: int) -> None:
        client = self._client
        if client is None:
            return
        with self._out, self._lock:
            self._client = None
        if client.tty is not None:
            # The terminal's last bytes, then it is the client's alone again
            # before it hears the end (and restores the terminal).
            _flush(client, 1.0)
            if client.peer and attachtty.gone(client.peer):
                # Killed (SIGKILL leaves it no say): nobody else will give the
                # terminal back its settings, and its shell would type blind.
                attachtty.restore(client.tty, client.saved)
                self.on_event("terminal restored", pid=client.pid)
            client.release_terminal()
            client.outbox.clear()
        client.outbox += f.encode_json(f.EXIT, {"reason": reason, "code": code})
        _flush(client, 1.0)
        with contextlib.suppress(OSError):
            client.sock.close()
        self.on_event("detached", pid=client.pid, reason=reason)
        with self._telling:
            self.on_client(None)
        self.deck.client_detached()

    def _from_deck(self) -> None:
        taken = 0
        while taken < READ_BUDGET:
            try:
                chunk = os.read(self.master, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                time.sleep(0.05)  # the slave side is being reopened; never spin
                break
            if not chunk:
                break
            taken += len(chunk)
            with self._out:
                client = self._client
                if client is not None:
                    client.outbox += client.wrap(chunk)
        client = self._client
        if client is not None and client.outbox:
            self._send(client)

    def _client_event(self, events: int) -> None:
        client = self._client
        if events & select.POLLOUT and client.tty is None:
            self._send(client)
            if self._client is not client:
                return
        if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
            data = _read_some(client.sock.recv)
            if data is None:
                return
            if not data:
                self._drop("the client went away", f.DETACHED)
                return
            try:
                frames = client.decoder.feed(data)
            except f.FrameError as exc:
                self._drop(f"protocol error: {exc}", f.DROPPED)
                return
            for kind, payload in frames:
                self._client_frame(kind, payload)

    def _terminal_event(self, client: _Client, events: int) -> None:
        """The direct client's terminal: room for the outbox, or keys."""
        if events != _POLLIN:  # a key alone skips these two looks
            if events & _POLLOUT:
                self._send(client)
                if self._client is not client:
                    return
            if not events & _READABLE:
                return
        try:  # read here, not through _read_some: a key's way is kept short
            data = os.read(client.tty, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop("the terminal closed", f.DETACHED)
            return
        if hopstamps.ON:
            hopstamps.mark("key-read")
        self.deck.feed_input(data)

    def _client_frame(self, kind: bytes, payload: bytes) -> None:
        if kind == f.READY:
            self._terminal_ready()
        elif kind == f.DATA:
            self.deck.feed_input(payload)
        elif kind == f.WINDOW:
            with contextlib.suppress(f.FrameError):
                size = f.size_of(f.decode_json(payload))
                if size is not None:
                    self.deck.resize(*size)

    def _terminal_ready(self) -> None:
        """The direct client's terminal is raw: what the deck drew meanwhile goes now."""
        client = self._client
        if client is None or client.tty is None or client.ready:
            return
        with self._out:
            client.ready = True
            client.progress = time.monotonic()
        self._send(client)

    def _send(self, client: _Client) -> None:
        try:
            with self._out:
                sent = client.write()
        except BlockingIOError:
            return
        except OSError:
            self._drop("the client went away", f.DETACHED)
            return
        if sent:
            client.progress = time.monotonic()
            if hopstamps.ON:
                hopstamps.mark("pump-sent")

    def _check_stall(self) -> None:
        client = self._client
        if client is None or not client.outbox:
            return
        stalled = time.monotonic() - client.progress > STALL_SECONDS
        if stalled or len(client.outbox) > OUTBOX_LIMIT:
            log.warning("dropping attach client pid %d: it stopped reading", client.pid)
            with self._out:
                client.outbox.clear()
            self._drop("dropped: the client stopped reading", f.DROPPED)


class _Refusal(Exception):
    def __init__(self, reason: str, pid: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pid = pid


def _read_hello(conn: socket.socket) -> tuple[dict, list[int]]:
    """The client's hello and the descriptors that came with it (the
    caller's to close, also when this raises: none are then left)."""
    decoder = f.Decoder()
    passed: list[int] = []
    end = time.monotonic() + HELLO_DEADLINE
    try:
        while time.monotonic() < end:
            data, fds = attachtty.receive(conn, 4096)
            passed += fds
            if not data:
                raise f.FrameError("the client left before saying hello")
            for kind, payload in decoder.feed(data):
                if kind != f.HELLO:
                    raise f.FrameError("the first frame must be a hello")
                return f.decode_json(payload), passed
            if decoder.buffered > 65536:
                raise f.FrameError("the hello is too large")
        raise f.FrameError("no hello within the deadline")
    except BaseException:
        attachtty.close_all(passed)
        raise


def _send_exit(conn: socket.socket, reason: str, code: int) -> None:
    with contextlib.suppress(OSError):
        conn.settimeout(1.0)
        conn.sendall(f.encode_json(f.EXIT, {"reason": reason, "code": code}))


def _flush(client: _Client, seconds: float) -> None:
    """Give a leaving client its last bytes, briefly; it may be gone already."""
    end = time.monotonic() + seconds
    with contextlib.suppress(OSError):
        while client.outbox and time.monotonic() < end:
            fd = client.out_fd
            if fd is None or not wait_ready(fd, max(end - time.monotonic(), 0), write=True):
                return
            with contextlib.suppress(BlockingIOError):
                client.write()


def _read_some(read: Callable[[int], bytes]) -> bytes | None:
    """What ``read`` gives: None when nothing is there yet, b"" at the end
    (a failure included)."""
    try:
        return read(1 << 16)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _watch(poller: select.poll, watched: list[int], client: _Client | None,
           waiting: bool) -> list[int]:
    """Poll ``client``'s socket (control frames, or everything when relayed)
    and its terminal (keys) when direct, for room too while bytes wait;
    returns the descriptors now registered."""
    masks: dict[int, int] = {}
    if client is not None:
        masks[client.fd] = select.POLLIN
        if client.tty is not None:
            masks[client.tty] = select.POLLIN
        out = client.out_fd
        if waiting and out is not None:
            masks[out] |= select.POLLOUT
    for fd in watched:
        if fd not in masks:
            _unregister(poller, fd)
    for fd, mask in masks.items():
        if fd in watched:
            poller.modify(fd, mask)
        else:
            poller.register(fd, mask)
    return list(masks)


def _unregister(poller: select.poll, fd: int) -> None:
    with contextlib.suppress(KeyError, ValueError, OSError):
        poller.unregister(fd)
