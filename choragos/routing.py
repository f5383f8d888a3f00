"""How a role's model traffic is routed through the gateway, per agent CLI.

A role that names its ``base_url_env`` variables gets exactly those.  One
that leaves the key out gets its agent profile's way: the variable its CLI
reads (``ANTHROPIC_BASE_URL`` for Claude Code, ``GOOGLE_GEMINI_BASE_URL``
for Gemini CLI) or, for a CLI that reads none (Codex), provider settings on
its command line.  So a mixed team is counted without hand-written URLs.
"""

from __future__ import annotations

from dataclasses import replace

from choragos.agentprofiles import profile_for
from choragos.config import RoleSpec


def routing(spec: RoleSpec, url: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """The variables to set and the arguments to prepend so ``spec`` talks to ``url``."""
    if spec.base_url_env is not None:
        return dict.fromkeys(spec.base_url_env, url), ()
    profile = profile_for(spec.command)
    args = tuple(arg.replace("{url}", url) for arg in profile.gateway_args)
    return dict.fromkeys(profile.base_url_env, url), args


def routed(spec: RoleSpec, url: str) -> RoleSpec:
    """``spec`` with the gateway arguments its CLI needs before its own."""
    _, args = routing(spec, url)
    return replace(spec, args=args + spec.args) if args else spec
