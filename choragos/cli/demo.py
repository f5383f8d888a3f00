"""``choragos demo``: the scripted five-role team, in a scratch repository.

Works from a plain ``pip install``: the agents (``choragos.demo``) and their
team file ship inside the package.  The scratch repository defaults to
``$XDG_CACHE_HOME/choragos/demo`` (``~/.cache/choragos/demo``), never the
current project; a session already running there is attached to.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from argparse import ArgumentParser
from importlib import resources
from pathlib import Path

from choragos.cli import _client
from choragos.cli._argparser import named_path
from choragos.control import paths, wire


def run(argv: list[str], verb: str = "demo") -> int:
    """Entry point for ``choragos demo``."""
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.bare_parser(verb, "Run the scripted demo team (no agent CLI needed) in a "
                                     "scratch git repository.")
    made.add_argument("--dir", type=named_path, default=None,
                      help="the scratch repository: a new or empty directory, or one the "
                           "demo made (default: ~/.cache/choragos/demo)")
    mode = made.add_mutually_exclusive_group()
    mode.add_argument("--detach", action="store_true", help="start it in the background")
    mode.add_argument("--headless", action="store_true", help="run it with no deck")
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    workdir = prepare(args.dir or default_dir(os.environ))
    print(f"choragos demo: the team works in {workdir}", file=sys.stderr)
    os.chdir(workdir)
    if not args.headless and _running(workdir):
        from choragos.cli import attach

        return _left_running(attach.run([]), workdir, args.dir is not None)
    from choragos.cli import serve

    # The demo wrote its team file itself just now (its programs name this
    # Python): nothing in it is an agent's doing to confirm.
    flags = ["--loosen"] + (["--headless"] if args.headless else ["--detach"] if args.detach
                            else [])
    code = serve.run(flags)
    return code if args.headless else _left_running(code, workdir, args.dir is not None)


def _left_running(code: int, workdir: Path, named: bool) -> int:
    """After a detach (or ``--detach``) the demo runs on in a directory the
    operator's shell is not in, where ``choragos attach`` finds nothing: say
    how to come back to it and how to stop it."""
    if code == _client.EXIT_OK and _running(workdir):
        here = shlex.quote(str(workdir))
        again = f"choragos demo --dir {here}" if named else "choragos demo"
        print(f"choragos demo: the demo runs on in {workdir}: `{again}` shows its deck, "
              f"`cd {here} && choragos kill` stops it", file=sys.stderr)
    return code


def default_dir(env: dict[str, str] | os._Environ) -> Path:
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "choragos" / "demo"


def prepare(workdir: Path) -> Path:
    """The scratch repository with its team file, created on first use."""
    from choragos.demo.workspace import create

    workdir = workdir.absolute()
    if not _scratch(workdir):
        raise _client.Failure(_client.EXIT_USAGE,
                              f"{_client.inert(workdir)} is neither new, empty nor a demo's: "
                              "the demo writes its team file and commits its files there; "
                              "name a new or empty directory, or leave --dir out; nothing "
                              "was changed")
    try:
        create(str(workdir))
        (workdir / ".choragos.toml").write_text(team_file(sys.executable), encoding="utf-8")
        _exclude(workdir, ".choragos.toml")
    except (OSError, subprocess.CalledProcessError) as exc:
        raise _client.Failure(_client.EXIT_REFUSED,
                              f"cannot set up the demo in {workdir}: {exc}") from None
    return workdir


# How the demo's team file begins (choragos/demo/demo.toml): a directory
# whose .choragos.toml begins so is a demo's, set up again at each run.
DEMO_MARK = "# The demo team: "


def _scratch(workdir: Path) -> bool:
    """Whether the demo may set up in ``workdir``: not there yet, empty, or a
    demo's already (its team file).  A project's own .choragos.toml and
    files were overwritten and committed to by a --dir naming them."""
    try:
        if not any(workdir.iterdir()):
            return True
        head = (workdir / ".choragos.toml").read_text(encoding="utf-8")[:len(DEMO_MARK)]
    except FileNotFoundError:
        return not workdir.exists()
    except (OSError, UnicodeDecodeError):
        return False
    return head == DEMO_MARK


def team_file(python: str) -> str:
    """The packaged demo team, its agents run by ``python`` (this interpreter)."""
    text = resources.files("choragos.demo").joinpath("demo.toml").read_text(encoding="utf-8")
    return text.replace('command = "python3"', f"command = {json.dumps(python)}")


def _exclude(workdir: Path, name: str) -> None:
    # The team file is ours, not the demo project's: keep it out of its status.
    exclude = workdir / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    lines = exclude.read_text().splitlines() if exclude.exists() else []
    if name not in lines:
        exclude.write_text("\n".join([*lines, name]) + "\n")


def _running(workdir: Path) -> bool:
    try:
        ack = wire.request(paths.socket_path(workdir, os.environ), {"cmd": "ping"}, 2.0)
    except (wire.Unreachable, wire.WireError):
        return False
    return ack.get("status") == "ok"
