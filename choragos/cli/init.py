"""``choragos init``: write a commented starter ``.choragos.toml``.

Beside it, the project settings each seat's CLI reads so that the protocol
verbs run without a permission dialog (``choragos.agents.seatsetup``); ``--seats``
writes only those, for the config already here.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from choragos.agents import seatsetup
from choragos.agents.profiles import profile_for
from choragos.cli import _client
from choragos.config import templates
from choragos.config.model import CONFIG_NAME, ConfigError, RoleSpec, load_config

EXIT_EXISTS = 1


def run(argv: list[str], verb: str = "init") -> int:
    """Entry point for ``choragos init``."""
    return _client.guard(verb, lambda: _init(argv, verb))


def arguments(verb: str) -> argparse.ArgumentParser:
    made = _client.bare_parser(verb, f"Write a commented {CONFIG_NAME} in the current "
                                     "directory.")
    made.add_argument("--template", choices=list(templates.TEMPLATES),
                      help="the team to start from (default: starter)")
    made.add_argument("--auto", action="store_true",
                      help="detect the project's language and name its test and lint "
                           "commands in the briefs")
    made.add_argument("--force", action="store_true",
                      help=f"replace an existing {CONFIG_NAME}")
    made.add_argument("--seats", action="store_true",
                      help=f"only write the seat settings for the {CONFIG_NAME} already here "
                           "(.claude/settings.json, .gemini/...); never touches credentials")
    return made


def _init(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    workdir = Path.cwd()
    if args.seats:
        if args.template or args.auto or args.force:
            # Said, not ignored: no file is written, whatever template was named.
            raise _client.Failure(_client.EXIT_USAGE, f"--seats writes the seat settings of "
                                  f"the {CONFIG_NAME} here and nothing else; it takes no "
                                  "--template, --auto or --force")
        return _seats(workdir)
    template = args.template or "starter"
    detected = templates.detect(workdir) if args.auto else None
    write_config(workdir / CONFIG_NAME, templates.render(template, detected), args.force)
    print(f"wrote {CONFIG_NAME} ({template} template{_found(args.auto, detected)}); "
          "next: run `choragos doctor`, then `choragos serve`")
    _write_seats(workdir, _roles(workdir))
    return _client.EXIT_OK


def _roles(workdir: Path) -> tuple[RoleSpec, ...]:
    try:
        return load_config(None, workdir).roles
    except ConfigError as exc:
        # A config that does not load is a usage error, as for every verb that reads it.
        raise _client.Failure(_client.EXIT_USAGE, f"{CONFIG_NAME} does not load, so its seats "
                                                  f"are unknown: {exc.errors[0]}") from None


def _seats(workdir: Path) -> int:
    """``--seats``: the seat settings for the team this directory already runs."""
    todo = _write_seats(workdir, _roles(workdir))
    return EXIT_EXISTS if todo else _client.EXIT_OK


def _write_seats(workdir: Path, roles: tuple[RoleSpec, ...]) -> list[str]:
    """Write each seat's project settings; return what is left for the user to do."""
    agents = [profile_for(role.command, role.args, role.agent).name for role in roles]
    try:
        written = seatsetup.write_for(workdir, agents)
    except (OSError, ValueError) as exc:
        raise _client.Failure(EXIT_EXISTS, f"seat settings not written: {exc}") from None
    for item in written:
        state = "wrote" if item.changed else "already in place:"
        print(f"{state} {item.path.relative_to(workdir)} (lets the protocol verbs run "
              "without a permission dialog)")
    todo = []
    for role, agent in zip(roles, agents, strict=True):
        missing = seatsetup.codex_args_missing(role.args) if agent == "codex" else []
        if missing:
            args = ", ".join(f'"{a}"' for a in (*role.args, *_pairs(missing)))
            todo.append(role.name)
            print(f"role {role.name}: add the Codex overrides to its args in {CONFIG_NAME}: "
                  f"args = [{args}]")
    return todo


def _pairs(values: list[str]) -> list[str]:
    return [part for value in values for part in ("-c", value)]


def _found(auto: bool, detected: templates.Detected | None) -> str:
    if not auto:
        return ""
    if detected is None:
        return ("; no go.mod, package.json, Cargo.toml, pyproject.toml or setup.py found, "
                "so the briefs are generic")
    return f"; detected {detected.language.name} from {detected.marker}"


def write_config(target: Path, text: str, force: bool) -> None:
    """Write ``text`` to ``target``; an existing file is replaced only with ``force``."""
    if force:
        _replace(target, text)
        return
    try:
        with open(target, "x", encoding="utf-8") as handle:  # "x": never clobber
            handle.write(text)
    except FileExistsError:
        raise _client.Failure(EXIT_EXISTS, f"{target.name} already exists here; "
                                           "run with --force to replace it") from None
    except OSError as exc:
        raise _client.Failure(EXIT_EXISTS, f"cannot write {target}: {exc.strerror}") from None


def _replace(target: Path, text: str) -> None:
    # Write beside it and rename, so an interrupted --force never leaves half a file.
    partial = target.with_name(f"{target.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise _client.Failure(EXIT_EXISTS, f"cannot write {target}: {exc.strerror}") from None
