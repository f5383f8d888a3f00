"""``choragos doctor``'s checks of each seat's agent CLI, each failure with its fix.

For every role whose profile is a known CLI: the version installed, whether
the CLI trusts this folder, whether it has credentials to start with (only
their presence is looked at, never their content), and whether the project
settings that let the protocol verbs run unasked are in place
(``choragos.agents.seatsetup``).  Nothing here changes anything.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path

from choragos import safeexec
from choragos.agents import seatsetup
from choragos.agents.profiles import profile_for
from choragos.config.model import RoleSpec

OK, WARN, FAIL = "OK", "WARN", "FAIL"
_VERSION_TIMEOUT = 10.0
# (level, message) pairs; doctor turns them into its Check lines.
Finding = tuple[str, str]
FIX_SEATS = "run `choragos init --seats`"


def seat_findings(workdir: Path, roles: tuple[RoleSpec, ...],
                  env: Mapping[str, str]) -> list[Finding]:
    """Every seat check for ``roles``; one CLI's shared checks are reported once."""
    findings: list[Finding] = []
    seen: set[str] = set()
    for role in roles:
        agent = profile_for(role.command, role.args, role.agent).name
        check = _CHECKS.get(agent)
        if check is None:
            continue
        findings += _version(role, agent, env, workdir)
        if agent == "codex":
            findings += _codex_args(role)
        if agent not in seen:
            seen.add(agent)
            findings += check(workdir, env)
    return findings


def _version(role: RoleSpec, agent: str, env: Mapping[str, str],
             workdir: Path) -> list[Finding]:
    found = safeexec.which(role.command, env, workdir)
    if found is None:
        return []  # doctor's command check already says so, with its fix
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True,
                              timeout=_VERSION_TIMEOUT, stdin=subprocess.DEVNULL,
                              env=dict(env), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [(WARN, f"role {role.name}: `{role.command} --version` did not answer ({exc})")]
    version = (done.stdout or done.stderr).strip().splitlines()[:1]
    if done.returncode != 0 or not version:
        return [(WARN, f"role {role.name}: `{role.command} --version` failed "
                       f"(exit {done.returncode})")]
    return [(OK, f"role {role.name}: {agent} seat, {version[0]}")]


def _codex_args(role: RoleSpec) -> list[Finding]:
    missing = seatsetup.codex_args_missing(role.args)
    if not missing:
        return [(OK, f"role {role.name}: the Codex overrides for choragos are in its args")]
    pairs = ", ".join(f'"-c", "{value}"' for value in missing)
    return [(FAIL, f"role {role.name}: Codex cannot run `choragos work-done` without "
                   f"{', '.join(missing)}; add to the role's args: [{pairs}]")]


# -- one check set per CLI -----------------------------------------------------------


def _claude(workdir: Path, env: Mapping[str, str]) -> list[Finding]:
    home = Path(env.get("HOME", "~")).expanduser()
    state = _json(home / ".claude.json")
    project = state.get("projects", {}).get(str(workdir.resolve()), {})
    trusted = (OK, f"Claude Code trusts {workdir}") if project.get("hasTrustDialogAccepted") \
        else (WARN, f"Claude Code has not trusted {workdir}: it will ask at start and ignore "
                    "the project's allow rules until then; start `claude` here once and "
                    "answer its trust question")
    keyed = env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN") or \
        (home / ".claude" / ".credentials.json").exists() or state.get("oauthAccount")
    auth = (OK, "Claude Code has credentials") if keyed else \
        (WARN, "Claude Code has no credentials here: run `claude` once and sign in, or set "
               "ANTHROPIC_API_KEY")
    return [trusted, auth, *_claude_key(env, state),
            _rules(seatsetup.claude_rules_missing, workdir,
                   f"{seatsetup.CLAUDE_SETTINGS} allows the protocol verbs",
                   f"{seatsetup.CLAUDE_SETTINGS} lacks")]


def _claude_key(env: Mapping[str, str], state: dict) -> list[Finding]:
    """An ANTHROPIC_API_KEY Claude Code has not been told to use stops it at
    "Do you want to use this API key?" (its default answer is No).  It
    remembers its answers by the key's last 20 characters."""
    key = env.get("ANTHROPIC_API_KEY")
    if not key:
        return []
    answers = state.get("customApiKeyResponses") or {}
    tail = key[-20:]
    if tail in (answers.get("approved") or []):
        return []
    if tail in (answers.get("rejected") or []):
        return [(WARN, "Claude Code was told not to use this ANTHROPIC_API_KEY: it signs in "
                       "its own way, or shows its login; to use the key, remove its entry "
                       "from customApiKeyResponses.rejected in ~/.claude.json")]
    return [(WARN, "Claude Code has not been told to use this ANTHROPIC_API_KEY: it asks "
                   "\"Do you want to use this API key?\" at start; start `claude` here once "
                   "and answer Yes")]


def _gemini(workdir: Path, env: Mapping[str, str]) -> list[Finding]:
    base = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME", "~")).expanduser() / ".gemini"
    folders = _json(Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
                         or base / "trustedFolders.json"))
    settings = _json(base / "settings.json")
    trusted = _gemini_trusts(workdir.resolve(), folders) or \
        settings.get("security", {}).get("folderTrust", {}).get("enabled") is False or \
        env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true"
    trust = (OK, f"Gemini CLI trusts {workdir}") if trusted else \
        (WARN, f"Gemini CLI has not trusted {workdir}: it shows a trust dialog and ignores "
               "the project settings until then; start `gemini` here once and choose "
               "\"Trust folder\"")
    chosen = settings.get("security", {}).get("auth", {}).get("selectedType")
    auth = (OK, f"Gemini CLI signs in with {chosen}") if chosen else \
        (WARN, "Gemini CLI has no sign-in method chosen: it stops at \"How would you like to "
               "authenticate\"; start `gemini` once and pick one (with GEMINI_API_KEY set, "
               "\"Use Gemini API Key\")")
    return [trust, auth, _rules(seatsetup.gemini_rules_missing, workdir,
                                f"{seatsetup.GEMINI_SETTINGS} lets the protocol verbs run",
                                "the Gemini project settings lack")]


def _rules(missing_in: Callable[[Path], list[str]], workdir: Path, good: str,
           lacking: str) -> Finding:
    try:
        missing = missing_in(workdir)
    except ValueError as exc:  # a settings file that is not JSON: theirs to fix
        return (FAIL, str(exc))
    if not missing:
        return (OK, good)
    return (WARN, f"{lacking} {'; '.join(missing)}: the protocol verbs will stop at a "
                  f"permission dialog; {FIX_SEATS}")


def _gemini_trusts(workdir: Path, folders: dict) -> bool:
    for folder, level in folders.items():
        path = Path(folder).expanduser()
        if level == "TRUST_FOLDER" and path == workdir:
            return True
        if level == "TRUST_PARENT" and (path == workdir.parent or path in workdir.parents):
            return True
    return False


def _codex(workdir: Path, env: Mapping[str, str]) -> list[Finding]:
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME", "~")).expanduser() / ".codex")
    config = _toml(home / "config.toml")
    projects = config.get("projects", {})
    level = next((projects[p].get("trust_level") for p in projects
                  if Path(p).expanduser() in (workdir.resolve(), *workdir.resolve().parents)
                  and isinstance(projects[p], dict)), None)
    trust = (OK, f"Codex trusts {workdir}") if level == "trusted" else \
        (WARN, f"Codex has not trusted {workdir}: it shows \"Trust this folder?\" at start; "
               f"add to {home / 'config.toml'}: [projects.\"{workdir.resolve()}\"] "
               'trust_level = "trusted"')
    provider = config.get("model_providers", {}).get(config.get("model_provider", ""), {})
    key_env = provider.get("env_key") or "OPENAI_API_KEY"
    keyed = env.get(key_env) or (home / "auth.json").exists()
    auth = (OK, "Codex has credentials") if keyed else \
        (WARN, f"Codex has no credentials here: it stops at its sign-in screen; run `codex "
               f"login`, or set {key_env}")
    return [trust, auth]


_CHECKS: dict[str, Callable[[Path, Mapping[str, str]], list[Finding]]] = {
    "claude": _claude, "gemini": _gemini, "codex": _codex}


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
