"""``[hosts.<name>]``: the machines remote roles run on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from choragos import onuse
from choragos.config import schema as cs
from choragos.config.memfloor import parse_size

__all__ = ["HOST_SCHEMA", "HostSpec", "check_roles", "read_hosts"]

DEFAULT_WORK_LIMIT = "1GiB"
_NAME = onuse.pattern(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


@dataclass(frozen=True)
class HostSpec:
    """One machine: how ``ssh`` reaches it and where the checkouts live there."""

    name: str
    ssh: str
    ssh_args: tuple[str, ...] = ()
    # Relative to the remote home unless absolute; each role has a checkout below it.
    workdir: str = ""
    # Bytes of new git objects a report may bring back from there (0: no limit).
    work_limit: int = parse_size(DEFAULT_WORK_LIMIT)

    def checkout(self, project: str, role: str) -> str:
        """Where ``role``'s checkout of ``project`` lives on this host."""
        base = self.workdir or f"choragos-work/{project}"
        return f"{base.rstrip('/')}/{role}"


def _destination(value: object) -> str:
    text = cs.word(value)
    if text.startswith("-"):
        raise ValueError(f"{cs.show(text)} starts with '-': ssh would read it as an option")
    if any(char.isspace() or ord(char) < 32 for char in text):
        raise ValueError(f"{cs.show(text)} holds blanks or control characters; "
                         "write user@host or a ~/.ssh/config alias")
    return text


def _workdir(value: object) -> str:
    text = cs.word(value)
    if any(ord(char) < 32 for char in text) or ".." in text.split("/"):
        raise ValueError(f"{cs.show(text)} must be a plain path without '..'")
    return text


HOST_SCHEMA: cs.Schema = {
    "ssh": _destination,
    "ssh_args": cs.list_of(cs.argv_string),
    "workdir": _workdir,
    "work_limit": cs.byte_size,
}


def read_hosts(raw: dict, where: str, report: cs.Report) -> dict[str, HostSpec]:
    """Every ``[hosts.<name>]`` table; errors go to ``report``."""
    hosts = {}
    for name, table in raw.items():
        at = cs.join(where, name)
        if not _NAME().fullmatch(name):
            report.error(at, "a host name is letters, digits, '-' and '_' (at most 32)")
            continue
        if not isinstance(table, dict):
            report.error(at, str(cs.expected("a table", table)))
            continue
        values = cs.read_table(table, HOST_SCHEMA, at, report)
        if "ssh" not in table:
            report.error(at, 'needs ssh = "user@host" (or an alias from ~/.ssh/config)')
            continue
        hosts[name] = HostSpec(name=name, **values)
    return hosts


def check_roles(roles: list[tuple[str, str, bool]], hosts: Mapping[str, HostSpec],
                report: cs.Report) -> None:
    """Each (where, host, worktree) of a role: its host is a table, and a
    remote role is not also a local worktree."""
    for at, host, worktree in roles:
        if not host:
            continue
        if host not in hosts:
            known = ", ".join(sorted(hosts)) or "none is defined"
            report.error(cs.join(at, "host"),
                         f"{cs.show(host)} is not a [hosts.<name>] table (known: {known})")
        if worktree:
            report.error(cs.join(at, "worktree"),
                         "a remote role already works in a checkout of its own on its host; "
                         "remove worktree or host")
