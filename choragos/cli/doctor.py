"""``choragos doctor``: check this directory's setup, one line per check.

Each check says OK, WARN or FAIL and a sentence.  The exit status is 1 when
anything failed, so scripts can gate on it.  Nothing here changes anything.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from argparse import ArgumentParser
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from choragos import __version__, safeexec
from choragos.cli import _client
from choragos.cli._argparser import named_path
from choragos.config import userconfig
from choragos.config.model import (
    CONFIG_NAME,
    Config,
    ConfigError,
    RoleSpec,
    SphragisSettings,
    load_config,
)
from choragos.control import paths, wire
from choragos.gateway.client import decide, is_listening
from choragos.plural import counted
from choragos.remote.checks import host_findings
from choragos.roles import selfpath
from choragos.roles.seatchecks import seat_findings
from choragos.session import resume

OK, WARN, FAIL = "OK", "WARN", "FAIL"
# sun_path holds 108 bytes on Linux and 104 on macOS; stay clear of both.
MAX_SOCKET_BYTES = 100
_PING_TIMEOUT = 1.0


@dataclass(frozen=True)
class Check:
    """One line of the report: which check, how it went, and a sentence saying why."""

    name: str
    level: str
    message: str


def run(argv: list[str], verb: str = "doctor") -> int:
    """Entry point for ``choragos doctor``."""
    return _client.guard(verb, lambda: _doctor(argv, verb), json=_client.wants_json(argv))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.bare_parser(verb, "Check this directory's choragos setup.")
    made.add_argument("--config", type=named_path, help=f"config file (default ./{CONFIG_NAME})")
    made.add_argument("--json", action="store_true", help="print the checks as JSON")
    return made


def _doctor(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    checks = diagnose(Path.cwd(), os.environ, args.config)
    code = 0 if passed(checks) else 1
    if args.json:
        failed = sum(c.level == FAIL for c in checks)
        return _client.print_json({"checks": [asdict(c) for c in checks]}, code=code,
                                  error=f"{counted(failed, 'check')} failed" if failed else None)
    print("\n".join(f"{c.level:<4} {_client.inert(c.message)}" for c in checks))
    return code


def passed(checks: list[Check]) -> bool:
    """True when no check failed (warnings do not count against a setup)."""
    return all(check.level != FAIL for check in checks)


def diagnose(workdir: Path, env: Mapping[str, str], config_path: Path | None = None) -> list[Check]:
    """Every check for ``workdir`` as seen with environment ``env``."""
    config, checks = _config(workdir, config_path, env)
    if config is not None:
        checks += [_seat(config, role, env, workdir) for role in config.roles]
        checks += [Check("seat", level, message)
                   for level, message in seat_findings(
                       workdir, tuple(r for r in config.roles if not r.host), env)]
        checks += _judges(config)
        checks += [Check("host", level, message) for level, message in host_findings(config)]
    checks += [_reach(workdir, env), *_socket(workdir, env), _git(workdir, config), _term(env),
               _gateway(config), _session(workdir, env), *_kept(workdir)]
    return checks


# ---- the config and its roles ---------------------------------------------------------

def _config(workdir: Path, config_path: Path | None,
            env: Mapping[str, str]) -> tuple[Config | None, list[Check]]:
    try:
        config = load_config(config_path, workdir, env)
    except ConfigError as exc:
        return None, [*(Check("config", FAIL, error) for error in exc.errors),
                      *(Check("config", WARN, warning) for warning in exc.warnings)]
    return config, [_config_ok(config), _files_read(config, env),
                    *(Check("config", WARN, w) for w in config.warnings)]


def _files_read(config: Config, env: Mapping[str, str]) -> Check:
    """Which files made the config: a setting that surprises is traced to its file."""
    read = [str(f) for f in (config.source, config.user_source) if f is not None]
    user = (f"your own settings ([keys], [ui], [notify]) from {config.user_source}, under the "
            "project's" if config.user_source is not None else
            f"no user configuration at {userconfig.path(env)} (optional: [keys], [ui], [notify] "
            "for every project)")
    files = ", ".join(read) if read else "no file (the built-in team)"
    return Check("config", OK, f"read {files}; {user}")


def _config_ok(config: Config) -> Check:
    names = ", ".join(role.name for role in config.roles)
    if config.source is None:
        return Check("config", OK, f"no {CONFIG_NAME} here: the built-in team runs ({names}); "
                                   "`choragos init` writes a file to edit")
    roles = counted(len(config.roles), "role")
    return Check("config", OK, f"{config.source} loads: {roles} ({names})")


def _seat(config: Config, role: RoleSpec, env: Mapping[str, str], workdir: Path) -> Check:
    """A role's program.  With no config file, a missing worker CLI only warns:
    nobody chose the built-in team's mix of CLIs, the rest of the team still
    works, and an empty directory must not look broken.  A file the user wrote
    asked for that program, so there it fails, as does a missing orchestrator."""
    if role.host:
        return Check("command", OK, f"role {role.name} runs on host {role.host} "
                                    "(its program is checked there)")
    check = _binary(role.name, role.command, env, workdir)
    if check.level != FAIL or config.source is not None or role.start:
        return check
    return Check("command", WARN, f"role {role.name} of the built-in team: {role.command} is "
                                  "not on PATH, so that seat will not start (the rest of the "
                                  f"team works); install {role.command}, or run `choragos "
                                  "init` for a team file to edit")


def _judges(config: Config) -> list[Check]:
    """A judge that is the same program and model as the role it judges tends to
    agree with itself: a second opinion should come from somewhere else."""
    found = []
    for role in config.roles:
        judge = config.role(role.judge) if role.judge else None
        if judge is not None and (judge.command, judge.model) == (role.command, role.model):
            model = f" with model {role.model}" if role.model else " with the same model"
            found.append(Check("judge", WARN, f"role {role.name} is judged by {judge.name}, "
                               f"which runs the same command ({role.command}){model}; a judge "
                               "tends to agree with itself, so give it another model or CLI"))
    return found


def _binary(role: str, command: str, env: Mapping[str, str], workdir: Path) -> Check:
    # Where the session will find it: a folder inside the workspace does not count.
    found = safeexec.which(command, env, workdir)
    if found is None:
        return Check("command", FAIL, f"role {role}: {command} is not on PATH outside the "
                                       "workspace (install it, or change the role's command)")
    return Check("command", OK, f"role {role}: {command} is {found}")


def _reach(workdir: Path, env: Mapping[str, str]) -> Check:
    """Whether agents can run the very choragos that serves them (see selfpath)."""
    shim = selfpath.bin_dir(workdir) / "choragos"
    if not os.access(sys.executable, os.X_OK):
        return Check("path", FAIL, f"{sys.executable} cannot be run, so roles could not run "
                                    "choragos; reinstall choragos")
    try:
        stale = shim.read_text(encoding="utf-8") != selfpath.shim_text()
    except OSError:
        stale = False  # not written yet: `serve` writes it
    if stale:
        return Check("path", WARN, f"{shim} runs another choragos than this one "
                                   f"({sys.executable}); restart the session with the "
                                   "choragos you mean to use")
    mine = shutil.which("choragos", path=env.get("PATH", os.defpath))
    note = ("" if mine else "; `choragos` is not on your own PATH, which is fine for "
            "the roles")
    return Check("path", OK, f"roles get choragos {__version__} ({sys.executable}) first "
                             f"on PATH, from {selfpath.bin_dir(workdir)}{note}")


# ---- the control socket ---------------------------------------------------------------

def _socket(workdir: Path, env: Mapping[str, str]) -> list[Check]:
    sock = paths.socket_path(workdir, env)
    size = len(os.fsencode(sock))
    if size > MAX_SOCKET_BYTES:
        length = Check("socket", FAIL, f"the socket path {sock} is {size} bytes, over the "
                                       f"{MAX_SOCKET_BYTES} a unix socket allows; set "
                                       "XDG_RUNTIME_DIR or CHORAGOS_SOCK to a shorter directory")
    else:
        length = Check("socket", OK, f"the socket path {sock} fits ({size} bytes)")
    if env.get(paths.SOCK_ENV):
        return [length]  # a directory the user chose; its mode is theirs to decide
    return [length, _socket_dir(paths.socket_dir(env))]


def _socket_dir(directory: Path) -> Check:
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return Check("socket-dir", OK, f"{directory} will be created, private to you")
    except OSError as exc:
        return Check("socket-dir", WARN, f"cannot inspect {directory}: {exc.strerror}")
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or mode != 0o700:
        return Check("socket-dir", WARN, f"{directory} should be a directory owned by you with "
                                         f"mode 0700 (it is mode {mode:04o}, owner uid "
                                         f"{info.st_uid}); other users may reach your sessions")
    return Check("socket-dir", OK, f"{directory} is private to you (0700)")


# ---- the workspace and the terminal ---------------------------------------------------

def _git(workdir: Path, config: Config | None) -> Check:
    if config is not None and not config.checkpoints.enabled:
        return Check("git", OK, "checkpoints are turned off in the config")
    # Imported here: dulwich is only needed for this one check.
    from choragos.gitstore.checkpoints import CheckpointStore, NotARepository

    try:
        with CheckpointStore(workdir) as store:
            return Check("git", OK, f"git repository at {store.root}: checkpoints active")
    except NotARepository:
        return Check("git", WARN, "not a git repository: delegations run without checkpoints, "
                                  "so nothing can be rolled back; `git init` here turns them on")
    except Exception as exc:  # a damaged repository must not stop the other checks
        return Check("git", WARN, f"cannot open the git repository ({exc}): "
                                  "delegations run without checkpoints")


def _term(env: Mapping[str, str]) -> Check:
    term = env.get("TERM", "")
    if not term:
        return Check("term", WARN, "TERM is unset: the deck needs a terminal that can draw "
                                   "(e.g. TERM=xterm-256color)")
    if term == "dumb":
        return Check("term", WARN, "TERM is dumb: the deck cannot draw its panes there")
    return Check("term", OK, f"TERM is {term}")


def _gateway(config: Config | None) -> Check:
    """What the session would decide, and whether the gateway answers now."""
    settings = config.sphragis if config is not None else SphragisSettings()
    if config is not None and config.gateway.builtin:
        return Check("gateway", OK, f"gateway: built in; the session runs it on {settings.addr}")
    mode = decide(settings)
    if not mode.on:
        return Check("gateway", OK, f"gateway: off ({mode.reason})")
    if is_listening(settings.addr):
        return Check("gateway", OK, f"gateway: on at {settings.addr} ({mode.reason})")
    effect = ("delegations will be refused until it answers" if mode.enforced
              else "model requests will fail until it answers")
    return Check("gateway", WARN, f"gateway: on ({mode.reason}), but nothing answers on "
                                  f"[sphragis] addr {settings.addr}: {effect}")


def _session(workdir: Path, env: Mapping[str, str]) -> Check:
    sock = paths.socket_path(workdir, env)
    try:
        ack = wire.request(sock, {"cmd": "ping"}, _PING_TIMEOUT)
    except (wire.Unreachable, wire.WireError):
        hint = resume.resume_hint(workdir)
        return Check("session", OK, f"no session running; {hint}" if hint else
                     "no session running")
    if ack.get("status") != "ok":
        return Check("session", WARN, f"a session answered but refused a ping: {ack.get('error')}")
    return Check("session", OK, f"a session is running (pid {ack.get('pid')})")


def _kept(workdir: Path) -> list[Check]:
    """Earlier states a plain ``serve`` kept aside: nothing deletes them, and
    the tasks they hold were never finished by this session."""
    kept = resume.kept_states(workdir)
    if not kept:
        return []
    newest, words = kept[0]
    where = os.path.relpath(newest, workdir)
    more = f" ({len(kept)} in all, newest first)" if len(kept) > 1 else ""
    return [Check("kept state", WARN,
                  f"an earlier session's state is kept aside in {where} ({words}){more}: "
                  f"`choragos serve --resume {where}` resumes it; delete it once it is not "
                  f"needed")]
