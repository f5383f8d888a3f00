"""How a role is launched: one pure function from its spec to its process.

Everything that decides a role's command line, environment and working
directory is here, in one place, so a seat that runs somewhere else (another
machine, a container) starts from the same recipe:

- the command is the role's ``command``, ``args`` and ``model``, plus the
  arguments its CLI needs to send its model traffic through the gateway;
- the environment is the role's env policy applied to the session's, plus
  what the verbs need (the socket, the role's name, the project directory)
  and the gateway's base URL (with the role's key, for the session's own
  gateway), with the session's own ``choragos`` first on
  PATH;
- the working directory is the role's worktree, or the project directory.

Nothing here touches the disk or the process table; the session creates the
worktree and writes the ``choragos`` shim, the role actor spawns the process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from choragos.agents.profiles import AgentProfile, profile_for
from choragos.config.envpolicy import matches
from choragos.config.model import RoleSpec, role_env
from choragos.gateway.routing import routed, routing
from choragos.roles import selfpath

__all__ = ["Launch", "LaunchContext", "launch"]


@dataclass(frozen=True)
class LaunchContext:
    """What the session contributes to every role's launch."""

    workdir: Path
    socket: Path
    base_env: Mapping[str, str]
    # The base URL a role's model traffic goes to, when the gateway is on.
    gateway_url: Callable[[str], str] | None = None
    # A role's key to the session's own gateway (see choragos.gateway.roles).
    role_key: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Launch:
    """A role's process, as the session starts it."""

    spec: RoleSpec  # with the gateway's arguments after the role's own
    env: dict[str, str]
    cwd: Path
    profile: AgentProfile

    @property
    def argv(self) -> list[str]:
        return self.spec.argv()


def launch(spec: RoleSpec, ctx: LaunchContext, worktree: Path | None = None) -> Launch:
    """The recipe for ``spec``'s process; ``worktree`` is its tree, when it has one."""
    url = ctx.gateway_url(spec.name) if ctx.gateway_url is not None else None
    key = ctx.role_key(spec.name) if url and ctx.role_key is not None else ""
    return Launch(spec=routed(spec, url, key) if url else spec,
                  env=_environment(spec, ctx, url, key),
                  cwd=worktree or ctx.workdir,
                  profile=profile_for(spec.command, spec.args, spec.agent))


def _environment(spec: RoleSpec, ctx: LaunchContext, url: str | None,
                 key: str) -> dict[str, str]:
    inject = {"CHORAGOS_SOCK": str(ctx.socket), "CHORAGOS_ROLE": spec.name}
    if not matches("CHORAGOS_DIR", spec.env_deny):
        # A convenience (the project directory), so env_deny may drop it;
        # the socket and the role name are how the verbs work, so never.
        inject["CHORAGOS_DIR"] = str(ctx.workdir)
    if url:
        # Route the role's model traffic through the gateway, attributed to it.
        inject.update(routing(spec, url, key)[0])
    # Last, so no env_allow or env_deny can cut a role off from choragos.
    return selfpath.prepend(role_env(spec, ctx.base_env, inject),
                            selfpath.bin_dir(ctx.workdir))
