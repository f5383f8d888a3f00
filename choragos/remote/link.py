"""One host's connection: the master ssh process, its forwards, its private folder.

The session keeps one :class:`HostLink` per host in use.  :meth:`up` starts
(or finds alive) the master connection; every other ssh command, the seats
included, rides on it, so a restarted role pays no new handshake.  When the
master dies (the network dropped, the host rebooted) the seats on it die
too, each a role failure; the next :meth:`up`, from a restart, connects
again and sets up the forwards afresh.

On the host, each session has a folder of its own,
``~/.choragos-remote/<session>`` (0700): the launcher and the agent verbs,
one recipe file per role (its command line and environment, 0600: secrets
travel in files, never on a command line), the roles' control sockets
(forwarded from this machine, 0600) and their pid files.  :meth:`close`
stops every process the session started there and removes the folder.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from choragos.remote import reach, tether
from choragos.remote.hosts import HostSpec
from choragos.remote.ssh import Ssh, SshError
from choragos.roles import selfpath

if TYPE_CHECKING:
    import tarfile

__all__ = ["CLIENT_MODULES", "HostLink", "RemoteSeat"]

log = logging.getLogger("choragos.remote")

# The agent verbs' modules, and the two read verbs an agent may use (status,
# gate list): all the host gets of choragos besides the launcher
# (tests/remote/test_client.py checks the verbs run with these alone).
CLIENT_VERBS = ("delegate", "workdone", "status", "gate")
CLIENT_MODULES = (
    "__init__.py", "control/commands.py", "deferred.py", "durations.py", "inert.py",
    "control/paths.py", "control/wire.py", "cli/__init__.py", "cli/main.py", "cli/_client.py",
    "cli/_target.py", "cli/_quickargs.py", "cli/_argparser.py", "control/__init__.py",
    *(f"cli/{verb}.py" for verb in CLIENT_VERBS),
)
CONNECT_TIMEOUT = 30.0
PROBE_TIMEOUT = 20.0  # a probe's connection is tried for 5 s; a login that hangs, no longer
PROBE = ("import json, os, shutil; print(json.dumps({'home': os.path.expanduser('~'), "
         "'git': shutil.which('git') or ''}))")


class RemoteSeat:
    """Where one role lives on its host."""

    def __init__(self, folder: str, role: str, checkout: str) -> None:
        self.folder = folder
        self.role = role
        self.checkout = checkout

    @property
    def socket(self) -> str:
        return f"{self.folder}/{self.role}.sock"

    def command(self) -> list[str]:
        """The remote command line of the seat: the launcher, by role name."""
        return ["python3", f"{self.folder}/seat.py", "run", self.folder, self.role]


class HostLink:
    """The connection to one host, shared by the roles that run there."""

    def __init__(self, host: HostSpec, control: Path, session: str, project: str) -> None:
        self.host = host
        self.ssh = Ssh(host, control)
        self.session = session
        self.project = project
        self._lock = threading.RLock()
        self._master: subprocess.Popen | None = None
        self.generation = 0  # counts masters: forwards belong to one
        self.home = ""
        self._forwards: dict[str, int] = {}  # what -> the generation it was set up in
        self.gateway_port = 0
        self.reach = reach.Reach()  # its outages, shared by its roles
        self._probing = threading.Lock()  # one probe of the host at a time
        self._probe_process: subprocess.Popen | None = None
        self._closed = False

    @property
    def folder(self) -> str:
        return f"{self.home}/.choragos-remote/{self.session}"

    # -- the master --------------------------------------------------------------

    def up(self) -> None:
        """The master connection alive, the host checked and its folder ready."""
        with self._lock:
            if self._alive():
                return
            self._connect()
            self.generation += 1
            self._forwards.clear()
            self.gateway_port = 0
            self._probe()
            self._install()

    def _alive(self) -> bool:
        if self._master is None or self._master.poll() is not None:
            return False
        check = subprocess.run(self.ssh.control_command("check"), capture_output=True,
                               timeout=10)
        return check.returncode == 0

    def _connect(self) -> None:
        self._stop_master()
        self.ssh.control.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.ssh.control.exists():
            # A master a killed server left (its socket is this session's own):
            # ended, with its forwards, before a new one takes the name.
            subprocess.run(self.ssh.control_command("exit"), capture_output=True, timeout=10)
        self.ssh.control.unlink(missing_ok=True)
        # A session of its own (a Ctrl-C for the server is not for it), on a
        # tether: it ends with the server even when nothing cleans up.
        self._master = tether.spawn(self.ssh.master(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, start_new_session=True)
        end = time.monotonic() + CONNECT_TIMEOUT
        while time.monotonic() < end:
            if self._master.poll() is not None:
                raise self._refused()
            if self.ssh.control.exists() and self._alive():
                return
            time.sleep(0.05)
        self._stop_master()
        raise SshError(f"cannot reach {self.host.name} ({self.host.ssh}): no connection "
                       f"within {CONNECT_TIMEOUT:g}s", reach.UNREACHABLE)

    def _refused(self) -> SshError:
        assert self._master is not None and self._master.stderr is not None
        said = self._master.stderr.read().decode("utf-8", "replace")
        why = reach.last_line(said) or f"ssh exited with {self._master.returncode}"
        hint = ""
        if "Permission denied" in why or "password" in why.lower():
            hint = " (choragos never types a password: use a key or an agent, see docs/remote.md)"
        return SshError(f"cannot reach {self.host.name} ({self.host.ssh}): {why}{hint}",
                        reach.classify(self._master.returncode, said))

    # -- is it there? ----------------------------------------------------------------

    def answers(self) -> bool:
        """The master connection is alive and carries a command there and back.

        Asked when a seat ended with ssh's own status: alive, the agent's own
        exit it was; gone, the connection's."""
        with self._lock:
            if not self._alive():
                return False
            try:
                self.ssh.run(["true"], what="a round trip", timeout=PROBE_TIMEOUT)
            except SshError:
                return False
            return True

    def probe(self, due: float) -> reach.Probe:
        """Does the host answer?  One connection of its own (no agent started),
        shared by the roles whose round is due at ``due`` (monotonic)."""
        with self._probing:
            found = self.reach.fresh(due)
            if found is not None:
                return found
            if self._closed:
                return reach.Probe(reach.UNREACHABLE, "the session is stopping",
                                   time.monotonic())
            try:
                self._probe_process = process = self.ssh.probe()
            except OSError as exc:  # no ssh here: said on the card, probed again later
                found = reach.Probe(reach.UNREACHABLE, f"cannot run ssh: {exc.strerror or exc}",
                                    time.monotonic())
                self.reach.probed(found)
                return found
            try:
                _, said = process.communicate(timeout=PROBE_TIMEOUT)
                said = said.decode("utf-8", "replace")
                kind = reach.classify(process.returncode, said)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                said, kind = f"no answer within {PROBE_TIMEOUT:g}s", reach.UNREACHABLE
            finally:
                self._probe_process = None
            found = reach.Probe(kind, reach.last_line(said), time.monotonic())
            self.reach.probed(found)
            return found

    def _probe(self) -> None:
        try:
            found = json.loads(self.ssh.run(["python3", "-c", PROBE], what="python3",
                                            timeout=20))
        except SshError as exc:
            if exc.kind != reach.ANSWERED:
                raise
            raise SshError(f"{exc}; the host needs python3 on its PATH") from None
        if not found.get("git"):
            raise SshError(f"git is not installed on {self.host.name}; install it there")
        self.home = found["home"]

    def _install(self) -> None:
        """The session's folder with the launcher and the agent verbs in it."""
        self.ssh.run(["sh", "-c", 'umask 077 && mkdir -p "$1" && tar -x -m -C "$1"', "sh",
                      self.folder], stdin=client_archive(self.folder), what="installing "
                     "the agent verbs")

    def _stop_master(self) -> None:
        master, self._master = self._master, None
        if master is None:
            return
        if master.poll() is None:
            subprocess.run(self.ssh.control_command("exit"), capture_output=True, timeout=10)
            try:
                master.wait(timeout=5)
            except subprocess.TimeoutExpired:
                master.kill()
                master.wait(timeout=5)
        for pipe in (master.stdin, master.stderr):  # the tether let go, too
            if pipe is not None:
                pipe.close()

    # -- a role ------------------------------------------------------------------------

    def seat(self, role: str) -> RemoteSeat:
        return RemoteSeat(self.folder, role, self._absolute(
            self.host.checkout(self.project, role)))

    def _absolute(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.home}/{path}"

    def prepare(self, role: str, argv: Sequence[str], env: Mapping[str, str],
                control_socket: Path, gateway: str = "") -> RemoteSeat:
        """Everything ``role`` needs before its program starts there; ``gateway``
        is the base URL of the gateway here, when there is one."""
        with self._lock:
            self.up()
            seat = self.seat(role)
            self._forward(f"control:{role}", "-R", f"{seat.socket}:{control_socket}",
                          clear=seat.socket)
            there = self._gateway_there(gateway) if gateway else ""
            recipe = {"argv": [_moved(word, gateway, there) for word in argv],
                      "env": {key: _moved(value, gateway, there) for key, value in env.items()},
                      "cwd": seat.checkout}
            recipe["env"].update(CHORAGOS_SOCK=seat.socket, CHORAGOS_DIR=seat.checkout)
            self.write(f"{seat.folder}/{role}.json", json.dumps(recipe).encode())
            return seat

    def _gateway_there(self, gateway: str) -> str:
        """The gateway's base URL on the host: a port of its loopback that ssh picked."""
        if not self.gateway_port:
            port = urlsplit(gateway).port or 80
            self.gateway_port = self._forward_port(port)
        return f"http://127.0.0.1:{self.gateway_port}"

    def _forward(self, name: str, *spec: str, clear: str = "") -> None:
        if self._forwards.get(name) == self.generation:
            return
        if clear:  # a socket left by a forward that died with its master
            self.ssh.run(["rm", "-f", clear], what="clearing an old socket")
        self._control("forward", *spec)
        self._forwards[name] = self.generation

    def _forward_port(self, port: int) -> int:
        """The gateway on a port of the host's loopback that ssh picks."""
        out = self._control("forward", "-R", f"127.0.0.1:0:127.0.0.1:{port}")
        try:
            return int(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise SshError(f"{self.host.name} gave no port for the gateway") from None

    def _control(self, operation: str, *spec: str) -> str:
        done = subprocess.run(self.ssh.control_command(operation, *spec),
                              capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise SshError(f"cannot {operation} {' '.join(spec)} on {self.host.name}: "
                           f"{done.stderr.strip() or done.returncode}")
        return done.stdout

    def write(self, path: str, data: bytes) -> None:
        """A private file on the host (0600), from ``data``; never via argv."""
        self.ssh.run(["sh", "-c", 'umask 077 && cat > "$1"', "sh", path], stdin=data,
                     what=f"writing {path}")

    def stop_role(self, role: str) -> None:
        """End what ``role`` left running there (its agent's whole login session)."""
        with self._lock:
            if self._alive():
                self.ssh.run(["python3", f"{self.folder}/seat.py", "stop", self.folder, role],
                             what=f"stopping {role}", timeout=30)

    def close(self) -> None:
        """Stop every process of the session there, remove its folder, disconnect.

        With the master gone (a connection that dropped silently: the host's
        sshd may keep its agents running for hours), a connection of its own,
        briefly tried, does it."""
        self._closed = True
        probing = self._probe_process
        if probing is not None and probing.poll() is None:
            probing.kill()  # its waiter reaps it
        with self._lock:
            try:
                if self.home:  # it connected once: there may be something there
                    alive = self._alive()
                    self.ssh.run(["sh", "-c", 'python3 "$1/seat.py" stop "$1" --all; '
                                  'rm -rf "$1"', "sh", self.folder], what="cleaning up",
                                 timeout=30 if alive else 15, direct=not alive)
            except (SshError, subprocess.SubprocessError) as exc:
                log.warning("cleaning up on %s: %s", self.host.name, exc)
            finally:
                self._stop_master()


def _moved(text: str, here: str, there: str) -> str:
    """``text`` with the gateway's URL here replaced by its URL there."""
    return text.replace(here, there) if here and there else text


def client_archive(folder: str) -> bytes:
    """A tar of the launcher, the agent verbs' modules and their ``choragos`` shim."""
    import tarfile  # here: with lzma and bz2 it is a megabyte the server holds otherwise

    package = Path(__file__).resolve().parents[1]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        _add(archive, "seat.py", (package / "remote" / "client" / "seat.py").read_bytes(), 0o600)
        for name in CLIENT_MODULES:
            _add(archive, f"lib/choragos/{name}", (package / name).read_bytes(), 0o600)
        shim = selfpath.shim_text("python3", Path(f"{folder}/lib"))
        _add(archive, "bin/choragos", shim.encode(), 0o700)
    return buffer.getvalue()


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    import tarfile

    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, int(time.time())
    archive.addfile(info, io.BytesIO(data))
