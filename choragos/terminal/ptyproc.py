"""The one seam between choragos and the operating system's processes.

A role's agent runs in a pseudo-terminal as the leader of its own session
and process group, so signals (stop, pause, resume) reach everything it
started.  Spawning, writing, signalling and reaping go through
:class:`PtyChild`; the reading happens on a :class:`Reader` thread that hands
bytes to a callback and reports the exit exactly once.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import signal
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from choragos import safeexec
from choragos.fdwait import wait_ready
from choragos.mallocarenas import give_back
from choragos.terminal import ptyspawn
from choragos.terminal.restartpolicy import ExitStatus

READ_CHUNK = 65536
# Without a pidfd, how often a silent child is looked at for its exit; after
# the exit, how long the PTY must be quiet before the reader ends.
EXIT_CHECK = 0.25
# A flood: this much output with no pause of TURN_QUIET seconds.  Once the
# PTY is then quiet that long, a fresh thread reads on (see Reader).
FLOOD_BYTES = 1 << 20
TURN_QUIET = 1.0
TIOCGPTN = 0x80045430  # Linux: the number of a master's /dev/pts end (not in termios)



def name_os_thread(name: str) -> None:
    """Give the calling thread ``name`` where the system shows it (Linux:
    ``top -H``, ``ps -L``, ``/proc/<pid>/task/<tid>/comm``; 15 bytes kept),
    so a role's reader and what it costs can be told from the session's
    other threads (the soak bench splits the server's CPU this way)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError), open("/proc/thread-self/comm", "wb") as comm:
            comm.write(name.encode("utf-8", "replace")[:15])


class SpawnError(Exception):
    """The agent could not be started; the message says why in one sentence."""


def resolve_command(command: str, env: Mapping[str, str], workspace: Path) -> str:
    """Find ``command`` on the role's own PATH, the one it will really run
    with, minus the folders inside ``workspace`` (agents write there: one
    worker's ``.choragos/bin/claude`` would become every role's agent)."""
    if os.sep in command:
        if os.access(command, os.X_OK) and not os.path.isdir(command):
            return command
        raise SpawnError(f"{command} is not an executable file{_args_hint(command)}")
    found = safeexec.which(command, env, workspace)
    if found is None:
        raise SpawnError(f"command {command!r} was not found on PATH outside the workspace; "
                         f"install it or fix `command` in .choragos.toml{_args_hint(command)}")
    return found


def _args_hint(command: str) -> str:
    """A command line written whole into ``command`` (``"sh -c '...'"``) is
    looked up as one program's name: say where its words go."""
    words = command.split()
    if len(words) < 2:
        return ""
    return (f" (`command` is one program, its arguments go in `args`: "
            f'command = "{words[0]}", args = [...])')


class PtyChild:
    def __init__(self, spawned: ptyspawn.Spawned) -> None:
        self.pid: int = spawned.pid
        self.fd: int = spawned.fd
        self._close = spawned.close
        self.closed = False
        self._exit: ExitStatus | None = None
        self._lock = threading.Lock()
        # Writes come from several threads (the role actor's injections, the
        # deck's keys, the terminal's replies on the reader thread): one write
        # at a time, so each call's bytes reach the agent contiguous, and
        # never after close (the fd number may be another pane's by then).
        self._write_lock = threading.Lock()
        self._slave = _slave_path(self.fd)
        # The reader has taken output off the PTY and not yet handed it on
        # (see :meth:`output_unseen`): set before its read, cleared after.
        self.taking = False
        os.set_blocking(self.fd, False)

    @classmethod
    def spawn(cls, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
              cols: int = 120, rows: int = 40) -> PtyChild:
        argv = [resolve_command(argv[0], env, safeexec.workspace_of(cwd)), *argv[1:]]
        try:
            spawned = ptyspawn.spawn(argv, str(cwd), env, cols, rows)
        except OSError as exc:
            raise SpawnError(f"could not start {argv[0]}: {exc.strerror or exc}") from exc
        return cls(spawned)

    def write(self, data: bytes) -> bool:
        """Write everything, waiting for the PTY to drain when it is full.

        False when the PTY is gone: the reader reports the exit, so a write
        racing with it is not an error of its own.
        """
        with self._write_lock:
            if self.closed:
                return False
            view = memoryview(data)
            while view:
                try:
                    written = os.write(self.fd, view)
                except BlockingIOError:
                    wait_ready(self.fd, 1.0, write=True)
                    if self._exit is not None or self.poll() is not None:
                        return False  # nobody will ever read the rest
                    continue
                except OSError:
                    return False
                view = view[written:]
            return True

    def try_write(self, data: bytes) -> bytes | None:
        """Write what the PTY takes now, never waiting: another thread's write
        in progress or a full PTY leave the rest.  Returns the bytes not
        written (empty when all went in), None when the PTY is gone."""
        if not self._write_lock.acquire(blocking=False):
            return data
        try:
            if self.closed:
                return None
            try:
                written = os.write(self.fd, data)
            except BlockingIOError:
                return data
            except OSError:
                return None
            return data[written:]
        finally:
            self._write_lock.release()

    def signal_group(self, sig: int) -> bool:
        """Signal the whole process group; False when it is already gone."""
        try:
            os.killpg(self.pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def stopped(self) -> bool:
        """The process is stopped (SIGSTOP, SIGTSTP, a tracer), as /proc says."""
        return process_state(self.pid) in (b"T", b"t")

    def unread_input(self) -> int:
        """Bytes written to the agent that it has not read yet (0 when unknown).

        Asked of the terminal's own end: a process starved of CPU, or
        stopped, leaves what was typed there, where a deaf one has read it.
        """
        if self._slave is None or self.closed:
            return 0  # closed, the number may be another terminal's by now
        return unread_bytes(self._slave)

    def output_unseen(self) -> bool:
        """The agent has written output the session has not fed to its
        screen yet: a screen read now may not show the dialog it just drew.
        What waits in the PTY is asked first, then whether the reader holds
        a piece it read: it sets its mark before the read and clears it only
        once the piece is fed, so output is in one place or the other."""
        if self.closed:
            return False
        try:
            waiting = struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0" * 4))[0]
        except OSError:
            return False
        return waiting > 0 or self.taking

    def running(self) -> bool:
        """A thread of the agent, or of a process it started in its session,
        is on a CPU or waiting for one (state R): it is at work on what it
        read, not ignoring it.  The whole session counts because a CLI may be
        a wrapper whose child does the work (Codex's launcher runs its
        native binary so)."""
        return any(_thread_running(pid) for pid in session_members(self.pid))

    def wanted_ns(self) -> int | None:
        """Nanoseconds the threads of the agent's session have spent on a CPU
        or waiting on a run queue for one (None where the system does not
        say): see :mod:`choragos.terminal.runqueue`."""
        from choragos.terminal import runqueue  # with the first boot check, not the server's start

        return runqueue.wanted_ns(session_members(self.pid))

    def resize(self, cols: int, rows: int) -> None:
        with contextlib.suppress(OSError):
            ptyspawn.set_size(self.fd, cols, rows)

    def size(self) -> tuple[int, int]:
        """``(cols, rows)`` as the agent sees them."""
        return ptyspawn.get_size(self.fd)

    def poll(self) -> ExitStatus | None:
        """Reap the child if it has exited; never blocks."""
        with self._lock:
            if self._exit is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    self._exit = ExitStatus(code=None)
                    return self._exit
                if pid == 0:
                    return None
                self._exit = _decode(status)
            return self._exit

    def wait(self, timeout: float) -> ExitStatus | None:
        stop = threading.Event()
        for _ in range(max(1, int(timeout / 0.02))):
            status = self.poll()
            if status is not None:
                return status
            stop.wait(0.02)
        return self.poll()

    def close(self) -> None:
        """Close our end once (the number may be another pane's terminal afterwards)."""
        with self._write_lock:  # a write in progress finishes on the fd it started on
            if self.closed:
                return
            self.closed = True
            with contextlib.suppress(OSError):
                self._close()

    def terminate(self, grace: float = 3.0) -> ExitStatus | None:
        """SIGHUP+SIGTERM the group, then SIGKILL after ``grace`` seconds."""
        if self.poll() is not None:
            return self._exit
        self.signal_group(signal.SIGCONT)  # a paused group cannot act on SIGTERM
        self.signal_group(signal.SIGHUP)
        self.signal_group(signal.SIGTERM)
        status = self.wait(grace)
        if status is None:
            self.signal_group(signal.SIGKILL)
            status = self.wait(2.0)
        return status


def _slave_path(master: int) -> str | None:
    """The agent's end of the terminal whose controlling end is ``master``."""
    try:
        number = struct.unpack("I", fcntl.ioctl(master, TIOCGPTN, b"\0" * 4))[0]
    except OSError:
        return None
    return f"/dev/pts/{number}"


def _decode(status: int) -> ExitStatus:
    if os.WIFSIGNALED(status):
        return ExitStatus(signal=os.WTERMSIG(status))
    return ExitStatus(code=os.WEXITSTATUS(status))


class Reader(threading.Thread):
    """Reads a child's PTY until it exits; reports data and the exit status.

    It sleeps until there is something to do: output to read, :meth:`halt`,
    or the child's exit (a pidfd, where the system has them).  Without a
    pidfd it looks for the exit every ``EXIT_CHECK`` seconds of silence.
    After the exit it reads on until the PTY has been quiet that long, since
    a grandchild may still hold it open and the last output may still come.

    ``on_data`` may return a number of seconds: then, unless more output
    comes first, ``on_lull`` is called once that long after (and before
    ``on_exit``) -- for a consumer that holds output back to take it in
    batches and must not keep the last batch once the output stops.

    The reading is done in turns, each on a thread of its own: after a
    flood (``FLOOD_BYTES`` of output without a pause of ``TURN_QUIET``
    seconds) the turn ends once the PTY has been quiet that long, its
    thread starts the next turn's and ends.  glibc keeps up to about
    180 KB of the blocks a thread freed in a cache of that thread's own,
    handed back only when the thread ends; a flood's parse fills it, so
    five flooded panes kept 0.9 MB of the server's memory that way, and the
    heap's pages around those blocks.  Output in bursts with pauses between
    (an agent's turns) keeps its thread, which costs no wake-up.  No thread
    waits for the turns (one more stack per pane): :meth:`join` and
    :meth:`is_alive` follow the reading, whichever thread does it.
    """

    def __init__(self, child: PtyChild, on_data: Callable[[bytes], float | None],
                 on_exit: Callable[[ExitStatus], None], name: str = "pty-reader",
                 on_lull: Callable[[], None] | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.child = child
        self.on_data = on_data
        self.on_exit = on_exit
        self.on_lull = on_lull
        self._lull_at: float | None = None  # time.monotonic() on_lull is due at
        self._halt = threading.Event()
        self._wake_lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self.wakeups = 0  # times the loop woke with no output to read (tests count them)
        self.turns = 0  # threads the reading has been done on (tests count them)
        self._exited = False  # the child's exit seen (the PTY is then read until quiet)
        self._burst = 0  # output taken since the last pause of TURN_QUIET
        self._last_read = 0.0  # time.monotonic() of the last output taken
        self._turn_ends_at: float | None = None  # after a flood: when the turn ends, if quiet
        self._exit_fd: int | None = None
        self._done = threading.Event()  # the reading ended and on_exit was called

    def start(self) -> None:
        """Start reading; a thread that cannot start takes its pipe with it
        (only ``run`` closes it otherwise)."""
        try:
            super().start()
        except BaseException:
            self._close_wake()
            raise

    def _close_wake(self) -> None:
        with self._wake_lock:
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1

    def halt(self) -> None:
        self._halt.set()
        with self._wake_lock:  # never a write into a closed (perhaps reused) fd number
            if self._wake_w >= 0:
                with contextlib.suppress(OSError):
                    os.write(self._wake_w, b"!")

    def join(self, timeout: float | None = None) -> None:
        """Wait until the reading ended (on whichever turn's thread) and
        ``on_exit`` was called."""
        if not self._started.is_set():
            raise RuntimeError("cannot join thread before it is started")
        self._done.wait(timeout)

    def is_alive(self) -> bool:
        return self._started.is_set() and not self._done.is_set()

    def run(self) -> None:
        self._exit_fd = _open_pidfd(self.child.pid)
        self._read_turns(None)

    def _read_turns(self, before: threading.Thread | None) -> None:
        """Read on this thread, turn after turn, until the child's end or
        until a quiet turn's end has another thread to read on."""
        name_os_thread(self.name)
        if before is not None:
            threading.Thread.join(before)  # the thread itself (this class's join waits for all)
            give_back()  # the turn's thread ended: its cache of freed blocks too
        try:
            while self._turn():
                if self._hand_on():
                    return  # the next turn reads on a fresh thread
        except BaseException:
            try:
                self._finish()
            finally:
                self._done.set()
            raise
        try:
            self._finish()
            if not self._halt.is_set():
                status = self.child.poll() or self.child.wait(5.0) or ExitStatus(code=None)
                self.on_exit(status)
        finally:
            self._done.set()

    def _turn(self) -> bool:
        """Read until the child's end (False) or a quiet turn's (True)."""
        self.turns += 1
        self._burst, self._turn_ends_at = 0, None
        return self._read_until_exit(self._exit_fd)

    def _hand_on(self) -> bool:
        """Start the next turn's thread (False: none could start, this one
        reads on)."""
        turn = threading.Thread(target=self._read_turns, args=(threading.current_thread(),),
                                name=self.name, daemon=True)
        try:
            turn.start()
        except RuntimeError:
            return False
        return True

    def _finish(self) -> None:
        """The reading ended: its descriptors closed, a lull owed told."""
        try:
            if self._exit_fd is not None:
                os.close(self._exit_fd)
                self._exit_fd = None
        finally:
            self._close_wake()
            self._lull()

    def _read_until_exit(self, exit_fd: int | None) -> bool:
        """Read until the child's end (False) or until the PTY was quiet
        ``TURN_QUIET`` seconds after a flood (True)."""
        fd = self.child.fd
        poller = select.poll()  # not select(): a big session's fds pass 1024
        poller.register(fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        if exit_fd is not None and not self._exited:
            poller.register(exit_fd, select.POLLIN)
        while not self._halt.is_set():
            # A live child with a pidfd: no timeout at all, its exit wakes us.
            waiting_on_exit = exit_fd is not None and not self._exited
            timeout = None if waiting_on_exit else EXIT_CHECK
            for at in (self._lull_at, self._turn_ends_at):
                if at is not None:
                    due = max(at - time.monotonic(), 0.0)
                    timeout = due if timeout is None else min(timeout, due)
            events = dict(poller.poll(None if timeout is None else timeout * 1000))
            if self._halt.is_set():
                return False
            if exit_fd is not None and exit_fd in events:
                poller.unregister(exit_fd)
                self._exited = True
            ready = events.get(fd, 0)
            if ready & select.POLLNVAL:
                return False  # closed under us: the pane is being torn down
            if ready:
                if not self._take(fd):
                    return False
                continue
            if events:
                continue  # the exit just seen: read on until the PTY is quiet
            # poll() counts whole milliseconds: a wake-up a fraction early is the lull's.
            now = time.monotonic() + 0.001
            if self._lull_at is not None and now >= self._lull_at:
                self._lull()
                continue
            if self._turn_ends_at is not None and now >= self._turn_ends_at:
                return not self._exited  # quiet: a fresh thread reads on
            self.wakeups += 1
            if self._exited or self.child.poll() is not None:
                return False  # exited, and the PTY quiet (a grandchild may still hold it)
        return False

    def _take(self, fd: int) -> bool:
        """Read what is there and hand it on; False at the PTY's end."""
        child = self.child
        child.taking = True  # until fed: see PtyChild.output_unseen
        try:
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                return True
            except OSError as exc:
                if exc.errno not in (errno.EIO, errno.EBADF):
                    raise
                return False
            if not data:
                return False
            now = time.monotonic()
            self._burst = (0 if now - self._last_read >= TURN_QUIET else self._burst) + len(data)
            self._last_read = now
            if self._burst >= FLOOD_BYTES:
                self._turn_ends_at = now + TURN_QUIET
            due = self.on_data(data)
        finally:
            child.taking = False
        if due is not None and self.on_lull is not None:
            self._lull_at = time.monotonic() + due
        return True

    def _lull(self) -> None:
        """The output stopped (or the reading did): the consumer's turn."""
        if self._lull_at is not None:
            self._lull_at = None
            self.on_lull()


def _open_pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when ``pid`` exits (Linux 5.3 and
    later); None where there is none, or the child is already reaped."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def unread_bytes(tty: str) -> int:
    """Bytes waiting to be read at the terminal end ``tty`` (0 when unknown).
    The end is opened for the question only, since holding it open would
    keep the terminal alive after its process has gone."""
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return 0
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    except OSError:
        return 0
    finally:
        os.close(fd)


def process_state(pid: int, thread: int | str | None = None) -> bytes:
    """The one-letter state /proc gives a process (or one of its threads),
    b"" when it is gone or unreadable."""
    fields = stat_fields(pid, thread)
    return fields[0] if fields else b""


def session_members(session: int) -> list[int]:
    """The processes of a session: its leader, then every other one whose
    stat names it (read when asked, as processes come and go)."""
    members = [session]
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != session:
            fields = stat_fields(int(entry))
            if len(fields) > 3 and fields[3] == str(session).encode():
                members.append(int(entry))
    return members


def _thread_running(pid: int) -> bool:
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(process_state(pid, thread) == b"R" for thread in threads)


def stat_fields(pid: int, thread: int | str | None = None) -> list[bytes]:
    """The fields of /proc's stat after the command's name (which may hold
    spaces and parentheses itself); [] when it cannot be read."""
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    try:
        with open(path, "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []  # gone meanwhile, or not ours to read
