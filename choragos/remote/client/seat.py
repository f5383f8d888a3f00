#!/usr/bin/env python3
"""One remote role's program, started and stopped on its host.

``seat.py run DIR ROLE [ARG ...]`` reads ``DIR/ROLE.json`` (written by the
session over its ssh connection: the command line, the environment the
role's env policy gives it, its checkout), records its own pid and runs the
program, waiting for it: its exit status is the launcher's.  When the
terminal goes first (SIGHUP: the connection dropped, or the server at its
other end was killed outright), the launcher ends the role's processes, so
nothing of it waits on the host for a session that may never come back.
The environment's machine-bound variables (PATH, HOME, the user, the temp
dir, ssh's own) are this host's; the role's own ones come from the file,
never from a command line.

``seat.py stop DIR ROLE`` ends every process of that role's login session
(what the agent started too), TERM first, then KILL; ``ROLE`` ``--all``
stops every role of the session directory.  The agent may be gone by then
and what it started still running, in its session or in one of its own (a
daemon): where the host has ``/proc``, each process the launcher started
is known by a mark in its environment, ``CHORAGOS_SEAT``, which they all
inherit, whoever their session leader was.

Standard library only, and Python 3.6 or newer: this file is all the host
gets of choragos besides the agent verbs.
"""

import contextlib
import json
import os
import shutil
import signal
import sys
import time

# This host's own values win for these: the sending machine's mean nothing here.
MACHINE = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "MAIL", "PWD", "OLDPWD",
           "TERM", "DISPLAY")
MACHINE_PREFIXES = ("SSH_", "XDG_")
GRACE = 3.0
MARK = "CHORAGOS_SEAT"


def main(argv):
    if len(argv) >= 3 and argv[0] == "run":
        return run(argv[1], argv[2], argv[3:])
    if len(argv) == 3 and argv[0] == "stop":
        return stop(argv[1], argv[2])
    sys.stderr.write("usage: seat.py run DIR ROLE [ARG ...] | seat.py stop DIR ROLE|--all\n")
    return 2


def run(folder, role, extra):
    with open(os.path.join(folder, role + ".json"), encoding="utf-8") as handle:
        recipe = json.load(handle)
    env = environment(recipe["env"], os.environ, os.path.join(folder, "bin"))
    env[MARK] = mark(folder, role)
    argv = list(recipe["argv"]) + list(extra)
    with open(os.path.join(folder, role + ".pid"), "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    try:
        os.chdir(recipe["cwd"])
    except OSError as exc:
        sys.stderr.write("choragos: cannot enter {}: {}\n".format(recipe["cwd"], exc.strerror))
        return 126
    program = shutil.which(argv[0], path=env["PATH"])
    if program is None:
        sys.stderr.write(f"choragos: {argv[0]} is not on the PATH of this host\n")
        return 127
    child = os.fork()
    if child == 0:
        try:
            os.execve(program, argv, env)
        except OSError as exc:
            sys.stderr.write(f"choragos: cannot run {program}: {exc.strerror}\n")
        os._exit(126)
    return keep(child, {mark(folder, role)})


class HungUp(Exception):
    """The terminal went: the connection, or the server at its other end."""


def hang_up(signum, frame):
    raise HungUp()


def keep(child, marks):
    """Wait for the agent, its exit status as ours.  Should the terminal go
    first (the server here was killed outright, the connection dropped),
    end every process of the role, what the agent started too: nothing
    waits for a session that may never come back."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP):  # the agent's, typed
        signal.signal(sig, signal.SIG_IGN)
    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, hang_up)
    try:
        _, status = os.waitpid(child, 0)
    except HungUp:
        for sig in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        end({os.getsid(0)}, marks)
        return 129
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return 128 + number
    return os.WEXITSTATUS(status)


def environment(sent, here, bin_dir):
    """The role's variables, with this host's machine-bound ones."""
    env = {key: value for key, value in sent.items() if not bound(key)}
    env.update({key: value for key, value in here.items() if bound(key)})
    env["PATH"] = bin_dir + os.pathsep + here.get("PATH", os.defpath)
    env["CHORAGOS_REMOTE"] = "1"
    return env


def bound(key):
    return key in MACHINE or key.startswith(MACHINE_PREFIXES)


def mark(folder, role):
    """The environment's mark of every process of ``role``'s seat."""
    return f"{os.path.realpath(folder)}/{role}"


def stop(folder, role):
    names = [name[:-4] for name in os.listdir(folder) if name.endswith(".pid")]
    targets = names if role == "--all" else [role]
    # ``--all``: every role's mark, the ones without a pid file too.
    marks = {mark(folder, "") if role == "--all" else mark(folder, role)}
    sessions = set()
    for name in targets:
        path = os.path.join(folder, name + ".pid")
        try:
            with open(path, encoding="ascii") as handle:
                sessions.add(os.getsid(int(handle.read().strip() or 0)))
        except (OSError, ValueError):
            pass
        with contextlib.suppress(OSError):
            os.unlink(path)
    sessions.discard(os.getsid(0))  # never this very login
    end(sessions, marks)
    return 0


def end(sessions, marks):
    """Every process of ``sessions`` or marked (but this one): TERM, then KILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not signal_all(sessions, marks, sig):
            return
        until = time.monotonic() + GRACE
        while time.monotonic() < until and members(sessions, marks):
            time.sleep(0.05)


def signal_all(sessions, marks, sig):
    """Signal every process of ``sessions`` or marked; False when none is left."""
    found = members(sessions, marks)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
    return bool(found)


def members(sessions, marks):
    pids = []
    me = os.getpid()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit() and int(entry) != me:
            try:
                if os.getsid(int(entry)) in sessions or marked(int(entry), marks):
                    pids.append(int(entry))
            except OSError:
                pass
    if not os.path.isdir("/proc"):  # no /proc (macOS): the sessions' process groups
        for sid in sessions:
            try:
                os.killpg(sid, 0)
                pids.append(-sid)
            except OSError:
                pass
    return pids


def marked(pid, marks):
    """Whether ``pid``'s environment carries one of ``marks`` (``--all``'s is a prefix)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            variables = handle.read().split(b"\0")
    except OSError:  # another user's, or gone
        return False
    prefix = (MARK + "=").encode()
    for variable in variables:
        if variable.startswith(prefix):
            value = variable[len(prefix):].decode("utf-8", "surrogateescape")
            return any(value == one or (one.endswith("/") and value.startswith(one))
                       for one in marks)
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
