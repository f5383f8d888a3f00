"""The project-level settings each agent CLI reads, so protocol verbs run unasked.

A seat's CLI asks a person before it runs a shell command it was not told
to trust; ``choragos delegate`` and ``choragos work-done`` must not wait on
that.  This module writes the workspace's own settings files (never a
user's home, never credentials) and names the arguments a Codex role
needs.  ``choragos init`` and ``choragos init --seats`` use it;
``choragos doctor`` checks what it would write is in place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from choragos.control import commands

# The protocol verbs the agents run (declared ``agent`` in choragos/control/commands.py).
VERBS = tuple(f"choragos {verb.name}" for verb in commands.VERBS.values() if verb.agent)
CLAUDE_SETTINGS = Path(".claude") / "settings.json"
GEMINI_SETTINGS = Path(".gemini") / "settings.json"
# Gemini CLI ignores a workspace's .gemini/policies/ (its "workspace tier" is
# switched off) and calls tools.allowed deprecated; a policy file named in
# the project's policyPaths is loaded.
GEMINI_POLICY = Path(".gemini") / "choragos-policy.toml"
CLAUDE_RULES = tuple(f"Bash({verb}:*)" for verb in VERBS)
GEMINI_POLICY_TEXT = (
    "# Written by choragos: its protocol verbs run without a permission dialog.\n"
    "[[rule]]\n"
    'toolName = "run_shell_command"\n'
    f"commandPrefix = {json.dumps(list(VERBS))}\n"
    'decision = "allow"\n'
    "priority = 100\n")
# Codex runs commands in a sandbox that refuses the unix-socket connect the
# verbs need, snapshots a login shell whose PATH may lack choragos, and checks
# for updates (copying its install and starting helpers that outlive it).
CODEX_ARGS = (
    "-c", "sandbox_workspace_write.network_access=true",
    "-c", "allow_login_shell=false",
    "-c", "check_for_update_on_startup=false",
)


@dataclass(frozen=True)
class Written:
    """One settings file: where, and whether this run changed it."""

    path: Path
    changed: bool


def claude_rules_missing(workdir: Path) -> list[str]:
    """Allow rules for the verbs that ``.claude/settings.json`` lacks."""
    have = _read(workdir / CLAUDE_SETTINGS).get("permissions", {}).get("allow", [])
    return [rule for rule in CLAUDE_RULES if rule not in have]


def gemini_rules_missing(workdir: Path) -> list[str]:
    """What of the Gemini seat settings is not in place (empty: all of it is)."""
    settings = _read(workdir / GEMINI_SETTINGS)
    missing = []
    if str(GEMINI_POLICY) not in settings.get("policyPaths", []):
        missing.append(f"policyPaths entry {GEMINI_POLICY}")
    policy = workdir / GEMINI_POLICY
    if not policy.exists() or not all(v in policy.read_text() for v in VERBS):
        missing.append(f"allow rules for {' and '.join(VERBS)} in {GEMINI_POLICY}")
    if settings.get("context", {}).get("fileFiltering", {}).get("respectGitIgnore") is not False:
        missing.append("context.fileFiltering.respectGitIgnore = false")
    return missing


def codex_args_missing(args: Iterable[str]) -> list[str]:
    """The ``-c key=value`` overrides of CODEX_ARGS a role's args lack."""
    have = set(args)
    return [value for value in CODEX_ARGS[1::2] if value not in have]


def write_claude(workdir: Path) -> Written:
    return _merge(workdir / CLAUDE_SETTINGS, ("permissions", "allow"), CLAUDE_RULES)


def write_gemini(workdir: Path) -> Written:
    policy = workdir / GEMINI_POLICY
    wrote_policy = not policy.exists() or policy.read_text() != GEMINI_POLICY_TEXT
    if wrote_policy:
        policy.parent.mkdir(parents=True, exist_ok=True)
        policy.write_text(GEMINI_POLICY_TEXT)
    listed = _merge(workdir / GEMINI_SETTINGS, ("policyPaths",), (str(GEMINI_POLICY),))
    # Gemini's file tools refuse what .gitignore lists, and .choragos/ (the
    # task, brief and report files) is listed.
    filtering = _set(workdir / GEMINI_SETTINGS, ("context", "fileFiltering"),
                     "respectGitIgnore", False)
    return Written(listed.path, wrote_policy or listed.changed or filtering)


def write_for(workdir: Path, agents: Iterable[str]) -> list[Written]:
    """The settings files for every agent in ``agents`` that reads one."""
    writers = {"claude": write_claude, "gemini": write_gemini}
    return [writers[name](workdir) for name in dict.fromkeys(agents) if name in writers]


def _merge(path: Path, keys: tuple[str, ...], rules: tuple[str, ...]) -> Written:
    """Add ``rules`` to the list at ``keys`` in a JSON file, keeping everything else."""
    data = _read(path)
    section = data
    for key in keys[:-1]:
        section = section.setdefault(key, {})
        if not isinstance(section, dict):
            raise ValueError(f"{path}: {key} is not an object; fix it by hand")
    present = section.setdefault(keys[-1], [])
    if not isinstance(present, list):
        raise ValueError(f"{path}: {'.'.join(keys)} is not a list; fix it by hand")
    missing = [rule for rule in rules if rule not in present]
    if not missing:
        return Written(path, False)
    present.extend(missing)
    _write(path, data)
    return Written(path, True)


def _set(path: Path, keys: tuple[str, ...], name: str, value: object) -> bool:
    """Set one value in a JSON settings file; True when that changed the file."""
    data = _read(path)
    section = data
    for key in keys:
        section = section.setdefault(key, {})
        if not isinstance(section, dict):
            raise ValueError(f"{path}: {key} is not an object; fix it by hand")
    if section.get(name) == value:
        return False
    section[name] = value
    _write(path, data)
    return True


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def _read(path: Path) -> dict:
    """A settings file's JSON object; a missing file is empty, a broken one an error."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); fix it by hand") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object; fix it by hand")
    return data
