"""Which agent program a role's command line really runs, through its wrappers.

``env FOO=1 claude``, ``npx -y @google/gemini-cli``, ``uvx --from aider-chat
aider``, ``ssh build-box claude``, ``bash -lc 'codex --full-auto'``,
``node /opt/gemini-cli/dist/cli.js``: each runs a known agent behind another
program.  :func:`program_names` names the programs such a line runs, the
outermost first, so a profile can be chosen by the first one it knows.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator

# Package names as npm, pip and uv know them, and the agent each installs.
PACKAGES = {
    "@anthropic-ai/claude-code": "claude",
    "@google/gemini-cli": "gemini",
    "@openai/codex": "codex",
    "aider-chat": "aider",
    "aider-install": "aider",
}
_STEMS = ("claude-code", "gemini-cli", "claude", "gemini", "codex", "aider")
_SCRIPT_SUFFIXES = (".exe", ".js", ".mjs", ".cjs", ".py")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_RUNTIMES = frozenset({"node", "nodejs", "bun", "deno"})
_PYTHONS = frozenset({"python", "python3"})
_PACKAGE_RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx", "pipx", "pnpm", "yarn", "uv"})
# Programs that run the rest of their arguments as a command.
_PREFIXES = frozenset({"env", "nice", "nohup", "sudo", "doas", "exec", "command", "time",
                       "stdbuf", "timeout", "caffeinate", "script"})
# ssh options that take a value (everything else is a flag).
_SSH_VALUED = frozenset("bcDEeFIiJLlmOopQRSWw")
_MAX_DEPTH = 6


def program_names(command: str, args: tuple[str, ...] = ()) -> list[str]:
    """The programs a role's command line runs, outermost first (normalised names)."""
    return list(dict.fromkeys(_walk(_split(command, args), 0)))


# Shell options whose value is the next word (not a script to run).
_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def interactive_shell(command: str, args: tuple[str, ...] = ()) -> str | None:
    """The shell a command line starts for someone to type at (``bash``,
    ``zsh -l``, ``env TERM=dumb bash --norc``); None when it runs a script or
    a command string (``bash run.sh``, ``sh -c …``) or is no shell."""
    argv = _split(command, args)
    while argv and normalise(argv[0]) in _PREFIXES:
        argv = _after_prefix(normalise(argv[0]), argv[1:])
    if not argv or normalise(argv[0]) not in _SHELLS:
        return None
    words = iter(argv[1:])
    for word in words:
        if word in _SHELL_VALUED:
            next(words, None)
        elif not word.startswith(("-", "+")) or (not word.startswith("--") and "c" in word[1:]):
            return None
    return normalise(argv[0])


def _split(command: str, args: tuple[str, ...]) -> list[str]:
    try:
        return [*shlex.split(command), *args]
    except ValueError:
        return [*command.split(), *args]


def normalise(word: str) -> str:
    """A program or package as an agent name: basename, no version or suffix."""
    if word in PACKAGES or _package(word) in PACKAGES:
        return PACKAGES.get(word) or PACKAGES[_package(word)]
    name = os.path.basename(word.rstrip("/")).lower()
    if name.endswith(_SCRIPT_SUFFIXES):
        name = name.rsplit(".", 1)[0]
    return {"claude-code": "claude", "gemini-cli": "gemini"}.get(name, name)


def _package(spec: str) -> str:
    """``@scope/name@1.2`` → ``@scope/name``; ``aider-chat==0.8`` → ``aider-chat``."""
    spec = re.split(r"[=<>~!]", spec, maxsplit=1)[0]
    head, at, _version = spec.rpartition("@")
    return head if at and head else spec


def _walk(argv: list[str], depth: int) -> Iterator[str]:
    if not argv or depth > _MAX_DEPTH:
        return
    program, rest = argv[0], argv[1:]
    name = normalise(program)
    yield name
    if name in _PREFIXES:
        yield from _walk(_after_prefix(name, rest), depth + 1)
    elif name in _PACKAGE_RUNNERS:
        yield from _walk(_after_runner(rest), depth + 1)
    elif name == "ssh":
        yield from _scan_words(_after_ssh(rest), depth)
    elif name in _SHELLS:
        yield from _scan_words(_shell_script(rest), depth)
    elif name in _RUNTIMES:
        yield from _script_agent(rest)
    elif name in _PYTHONS and rest[:1] == ["-m"]:
        yield from _walk(rest[1:], depth + 1)  # python -m aider


def _after_prefix(name: str, rest: list[str]) -> list[str]:
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            return rest[i + 1:]
        if name == "env" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
            i += 1
        elif word.startswith("-"):
            # env -u NAME / -C DIR, nice -n N, sudo -u USER take a value.
            i += 2 if word in ("-u", "-C", "-n", "-g", "-s", "-k") else 1
        elif name == "timeout" and re.fullmatch(r"[\d.]+[smhd]?", word):
            i += 1
        else:
            return rest[i:]
    return []


def _after_runner(rest: list[str]) -> list[str]:
    """The package (or program) after ``npx``/``uvx`` options; ``--from PKG`` counts."""
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("--from", "-p", "--package", "--with") and i + 1 < len(rest):
            if normalise(rest[i + 1]) in _STEMS:
                return [rest[i + 1], *rest[i + 2:]]
            i += 2
        elif word.startswith("-") or word in ("run", "exec", "dlx", "tool"):
            i += 1
        else:
            return rest[i:]
    return []


def _after_ssh(rest: list[str]) -> list[str]:
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        flag = rest[i]
        i += 2 if len(flag) == 2 and flag[1] in _SSH_VALUED else 1
    return rest[i + 1:]  # past the host: the remote command, however it is split


def _shell_script(rest: list[str]) -> list[str]:
    """The words of ``sh -c SCRIPT`` (any flag cluster holding ``c``)."""
    for i, word in enumerate(rest):
        if word.startswith("-") and "c" in word[1:] and not word.startswith("--"):
            return rest[i + 1:i + 2]
    return []


def _scan_words(words: list[str], depth: int) -> Iterator[str]:
    """A command given as shell text: each simple command in it, in order."""
    text = " ".join(words)
    for part in re.split(r"&&|\|\||[;|&\n]", text):
        try:
            argv = shlex.split(part)
        except ValueError:
            argv = part.split()
        yield from _walk(argv, depth + 1)


def _script_agent(rest: list[str]) -> Iterator[str]:
    """``node …/gemini-cli/dist/cli.js``: the agent whose package holds the script."""
    script = next((w for w in rest if not w.startswith("-")), "")
    parts = [normalise(p) for p in re.split(r"[/\\]", script) if p]
    yield from (p for p in reversed(parts) if p in _STEMS)
