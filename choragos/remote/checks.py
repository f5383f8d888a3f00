"""``choragos doctor`` for the hosts in use: reachable without a password,
Python 3 and git there, each remote role's program on the host's PATH."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterable

from choragos.config.model import Config, RoleSpec
from choragos.remote.hosts import HostSpec

__all__ = ["host_findings"]

OK, WARN, FAIL = "OK", "WARN", "FAIL"
PROBE = ("import json, shutil, sys; print(json.dumps({'git': shutil.which('git') or '', "
         "'found': {name: shutil.which(name) or '' for name in sys.argv[1:]}}))")


def host_findings(config: Config, timeout: float = 20.0) -> list[tuple[str, str]]:
    """(level, sentence) for every host a role runs on."""
    found = []
    for name, host in config.hosts.items():
        roles = [role for role in config.roles if role.host == name]
        if roles:
            found += _check(host, roles, timeout)
    return found


def _check(host: HostSpec, roles: Iterable[RoleSpec], timeout: float) -> list[tuple[str, str]]:
    where = f"host {host.name} ({host.ssh})"
    programs = sorted({role.command for role in roles})
    argv = ["ssh", *host.ssh_args, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-T",
            host.ssh, "--", shlex.join(["python3", "-c", PROBE, *programs])]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [(FAIL, f"{where}: cannot run ssh: {exc}")]
    if done.returncode == 255:
        why = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        return [(FAIL, f"{where}: not reachable without a password prompt: {why} (set up a "
                       "key or an agent; see docs/remote.md)")]
    if done.returncode != 0:
        return [(FAIL, f"{where}: python3 is not on its PATH (install Python 3 there)")]
    try:
        probe = json.loads(done.stdout)
    except ValueError:
        return [(FAIL, f"{where}: its login prints something before the probe's answer "
                       "(a noisy shell profile); quiet it for non-interactive logins")]
    found = [(OK, f"{where}: reachable, with python3 and git")] if probe["git"] else [
        (FAIL, f"{where}: git is not installed there")]
    for program, path in probe["found"].items():
        users = ", ".join(role.name for role in roles if role.command == program)
        found.append((OK, f"{where}: {program} is {path} (roles {users})") if path else
                     (FAIL, f"{where}: {program} is not on its PATH (roles {users}); install "
                            "it there or name it by its full path"))
    return found
