"""How a role's model traffic is routed through the gateway, per agent CLI.

A role that names its ``base_url_env`` variables gets exactly those.  One
that leaves the key out gets its CLI's way, looked up by its agent
profile: the variable the CLI reads (``ANTHROPIC_BASE_URL`` for Claude Code
and anything unknown, ``GOOGLE_GEMINI_BASE_URL`` for Gemini CLI) or, for a
CLI that reads none (Codex), provider settings on its command line.  So a
mixed team is counted without hand-written URLs.

With the session's own gateway each role also carries its key
(:mod:`choragos.gateway.roles`): at the end of its base URL, or, for a CLI
configured on its command line (which any local user can read), in a header
whose value the CLI takes from a variable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from choragos.agents.profiles import profile_for
from choragos.config.model import RoleSpec
from choragos.gateway.roles import KEY_ENV, KEY_HEADER


@dataclass(frozen=True)
class Way:
    """How one CLI takes a base URL: variables, and arguments ("{url}" is the URL)."""

    env: tuple[str, ...] = ("ANTHROPIC_BASE_URL",)
    args: tuple[str, ...] = ()
    by_header: bool = False  # the role key goes in a header ("{headers}" in args)


# By agent profile name; anything else takes the default (Anthropic's variable).
WAYS: dict[str, Way] = {
    "gemini": Way(env=("GOOGLE_GEMINI_BASE_URL",)),
    # Codex's built-in OpenAI provider takes no base URL from the environment,
    # so the role gets a provider of its own that speaks the Responses API.
    "codex": Way(env=(), by_header=True, args=(
        "-c", 'model_providers.choragos={ name = "choragos gateway", base_url = "{url}/v1", '
              'wire_api = "responses", env_key = "OPENAI_API_KEY"{headers} }',
        "-c", 'model_provider="choragos"',
    )),
}


def routing(spec: RoleSpec, url: str, key: str = "") -> tuple[dict[str, str], tuple[str, ...]]:
    """The variables to set and the arguments to add so ``spec`` talks to ``url``
    as the role whose gateway key is ``key`` ('' for a gateway without keys)."""
    keyed = f"{url}/{key}" if key else url
    if spec.base_url_env is not None:
        return dict.fromkeys(spec.base_url_env, keyed), ()
    way = WAYS.get(profile_for(spec.command, spec.args, spec.agent).name, Way())
    if not way.by_header:
        return dict.fromkeys(way.env, keyed), tuple(a.replace("{url}", url) for a in way.args)
    env, headers = dict.fromkeys(way.env, url), ""
    if key:
        env[KEY_ENV] = key
        headers = f', env_http_headers = {{ "{KEY_HEADER}" = "{KEY_ENV}" }}'
    return env, tuple(a.replace("{url}", url).replace("{headers}", headers) for a in way.args)


def routed(spec: RoleSpec, url: str, key: str = "") -> RoleSpec:
    """``spec`` with the gateway arguments its CLI needs after its own.

    After, not before: a role run through a wrapper (``npx codex``) has the
    CLI's own name among its arguments, and the options must follow it.
    """
    _, args = routing(spec, url, key)
    return replace(spec, args=spec.args + args) if args else spec
