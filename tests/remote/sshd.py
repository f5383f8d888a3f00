"""A private OpenSSH server on a loopback port, logging in to an account of
its own: the remote host of the remote-seat tests.

Run as root, it creates the account (``choragos-remote`` unless told
otherwise) with its own home; elsewhere the tests that need it skip, saying
why.  The server takes only the key generated here, listens only on
127.0.0.1, and is stopped (with everything the account still runs) when the
test ends.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ACCOUNT = "choragos-remote"
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


class Unavailable(Exception):
    """This machine cannot host the test server (not root, no sshd)."""


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    account: str
    home: Path
    key: Path
    config: Path  # an ssh_config for the client: port, key, known hosts

    @property
    def ssh_args(self) -> list[str]:
        return ["-F", str(self.config)]

    @property
    def destination(self) -> str:
        return f"{self.account}@127.0.0.1"

    def run(self, *remote: str, timeout: float = 20, stdin: str | None = None
            ) -> subprocess.CompletedProcess:
        """A command on the remote account (each word quoted for its shell)."""
        return subprocess.run(["ssh", *self.ssh_args, self.destination, "--",
                               shlex.join(remote)], capture_output=True, text=True,
                              timeout=timeout, input=stdin,
                              stdin=None if stdin is not None else subprocess.DEVNULL)

    def processes(self) -> list[str]:
        """What the account runs now, besides sshd's own."""
        out = subprocess.run(["ps", "-u", self.account, "-o", "pid=,comm=,args="],
                             capture_output=True, text=True).stdout
        return [line.strip() for line in out.splitlines()
                if line.strip() and "sshd" not in line.split()[1]]

    def stop(self) -> None:
        """The server down, and every process of the account with it: a host
        that reboots (its port refuses connections until :meth:`again`)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=10)
        subprocess.run(["pkill", "-KILL", "-u", self.account], capture_output=True)

    def again(self) -> None:
        """The server up again after :meth:`stop`, on the same port and keys."""
        self.process = _sshd(self.config.parent)
        _wait_listening(self)


def ensure_account(name: str = ACCOUNT) -> Path:
    """The account's home, creating the account (root only)."""
    try:
        return Path(pwd.getpwnam(name).pw_dir)
    except KeyError:
        pass
    if os.geteuid() != 0:
        raise Unavailable(f"the remote-seat tests log in to an account {name!r}, and only "
                          "root can create it here")
    made = subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name],
                          capture_output=True, text=True)
    if made.returncode != 0:
        raise Unavailable(f"cannot create the account {name!r}: {made.stderr.strip()}")
    # useradd leaves the account locked ("!"), and sshd turns a locked account
    # away even for a key; "*" has no password that could ever match, unlocked.
    subprocess.run(["usermod", "-p", "*", name], capture_output=True, check=True)
    return Path(pwd.getpwnam(name).pw_dir)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(workdir: Path, account: str = ACCOUNT) -> Server:
    """An sshd for ``account`` on a free loopback port, its files under ``workdir``."""
    if not os.path.exists(SSHD):
        raise Unavailable("no sshd on this machine (install openssh-server)")
    if os.geteuid() != 0:
        raise Unavailable("sshd must run as root to log in to another account")
    home = ensure_account(account)
    workdir.mkdir(parents=True, exist_ok=True)
    host_key, key = workdir / "host_key", workdir / "client_key"
    for path in (host_key, key):
        if not path.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                           check=True)
    _authorize(home, account, key.with_suffix(".pub").read_text())
    port = free_port()
    sshd_config = workdir / "sshd_config"
    sshd_config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
        f"PidFile {workdir / 'sshd.pid'}", f"AllowUsers {account}",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes", "UsePAM no", "StrictModes no",
        "AllowTcpForwarding yes", "AllowStreamLocalForwarding yes",
        "StreamLocalBindUnlink yes", "PermitTTY yes", "MaxSessions 64",
        "MaxStartups 64", "LogLevel ERROR", "",
    ]))
    process = _sshd(workdir)
    client = workdir / "ssh_config"
    known = workdir / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {(host_key.with_suffix('.pub')).read_text()}")
    client.write_text("\n".join([
        "Host 127.0.0.1", f"  Port {port}", f"  IdentityFile {key}", "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {known}", "  StrictHostKeyChecking yes", "  BatchMode yes",
        "  LogLevel ERROR", "",
    ]))
    server = Server(process, port, account, home, key, client)
    _wait_listening(server)
    return server


def _sshd(workdir: Path) -> subprocess.Popen:
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation
    with open(workdir / "sshd.log", "ab") as log:
        return subprocess.Popen([SSHD, "-D", "-e", "-f", str(workdir / "sshd_config")],
                                stdout=subprocess.DEVNULL, stderr=log)


def _authorize(home: Path, account: str, public_key: str) -> None:
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    keys = ssh_dir / "authorized_keys"
    text = keys.read_text() if keys.exists() else ""
    if public_key not in text:
        keys.write_text(text + public_key)
    entry = pwd.getpwnam(account)
    for path in (ssh_dir, keys):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    keys.chmod(0o600)


def _wait_listening(server: Server, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if server.process.poll() is not None:
            raise Unavailable(f"sshd exited with {server.process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    server.stop()
    raise Unavailable("sshd did not listen within 20 s")
