"""The session's client of its gateway, whichever listens at ``[sphragis] addr``:
the external one (Sphragis) or the built-in proxy (:mod:`choragos.gateway.proxy`).

Three pure pieces: whether the gateway is on (decided once, at start),
what its ``/metrics`` body says about tokens, and what those tokens cost.
The prober actor (actors/gatewayprober.py) does the fetching.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from choragos import onuse
from choragos.config.model import Config, SphragisSettings, split_host_port
from choragos.gateway.costs import estimated, priced

TOKENS_METRIC = "sphragis_tokens_total"
DIRECTIONS = ("input", "output", "cache_read", "cache_creation")
# A metrics body larger than this is refused, not parsed.  Far above what the built-in
# gateway can serve (its labels are bounded): the limit guards the session's memory, and
# a gateway that also serves many other series must not be taken for down.
MAX_BODY = 16 << 20
_TOKEN_LINES = ("sphragis_tokens", "# HELP sphragis_tokens", "# TYPE sphragis_tokens")
# How a line of the format starts.
_ANY_LINE = onuse.pattern(r"[a-zA-Z_:][a-zA-Z0-9_:]*[{ \t]|#|\s*$")

# role -> model -> direction -> cumulative count, as the gateway last reported it.
Totals = dict[str, dict[str, dict[str, int]]]


class MetricsError(ValueError):
    """The gateway answered, but not with metrics we can read."""


@dataclass(frozen=True)
class GatewayMode:
    """What the session does about the gateway for its whole life."""

    on: bool
    enforced: bool  # on and fail_closed: dispatch is refused while it is down
    reason: str


def decide(settings: SphragisSettings, on_path: Callable[[str], bool] | None = None,
           listening: Callable[[str], bool] | None = None) -> GatewayMode:
    """The soft default: an absent ``enabled`` means "on if it looks installed"."""
    if settings.enabled is not None:
        how = "true" if settings.enabled else "false"
        return _mode(settings, settings.enabled, f"[sphragis] enabled = {how}")
    on_path = on_path or (lambda name: shutil.which(name) is not None)
    listening = listening or is_listening
    if on_path(settings.command):
        return _mode(settings, True, f"{settings.command} is on PATH")
    if listening(settings.addr):
        return _mode(settings, True, f"something listens on {settings.addr}")
    return _mode(settings, False, f"{settings.command} is not on PATH and nothing "
                                  f"listens on {settings.addr}")


def decide_session(config: Config) -> GatewayMode:
    """The session's decision: a built-in gateway is on, fail-closed as [sphragis] says."""
    if config.gateway.builtin:
        return _mode(config.sphragis, True, "[gateway] builtin = true")
    return decide(config.sphragis)


def _mode(settings: SphragisSettings, on: bool, reason: str) -> GatewayMode:
    return GatewayMode(on, on and settings.fail_closed, reason)


def is_listening(addr: str, timeout: float = 0.3) -> bool:
    """Whether a TCP connect to ``host:port`` succeeds (short: it runs at start-up)."""
    try:
        host, port = split_host_port(addr)
    except ValueError:  # the config checks the address: nothing listens at a wrong one
        return False
    # An ASCII host goes to the resolver as bytes: as text, the socket module
    # first loads the IDNA codec (with stringprep: about 1 ms of every
    # session's start, before its agents spawn) only to encode it.
    name: str | bytes = host.encode() if host.isascii() else host
    try:
        with socket.create_connection((name, port), timeout=timeout):
            return True
    except OSError:
        return False


def parse_metrics(body: bytes) -> Totals:
    """The token counters in a Prometheus text body; other metrics are ignored.

    Only the token family's lines are handed to the parser: the rest of a
    large page (requests, errors, another exporter's series) costs a scan.
    """
    # Imported here: the client library brings http.server, ssl and email
    # (12 MB of a session's memory), and a session reads metrics only when
    # a gateway runs.
    from prometheus_client.parser import text_string_to_metric_families

    if len(body) > MAX_BODY:
        raise MetricsError(f"metrics body over {MAX_BODY} bytes")
    try:
        text = "".join(_token_lines(body.decode("utf-8")))
        samples = [s for family in text_string_to_metric_families(text)
                   for s in family.samples]
    except Exception as exc:  # the parser raises several types on garbage
        raise MetricsError(f"unreadable metrics: {type(exc).__name__}: {exc}") from None
    totals: Totals = {}
    for sample in samples:
        _add_sample(totals, sample.name, sample.labels, sample.value)
    return totals


def _token_lines(text: str) -> Iterator[str]:
    for line in text.splitlines(keepends=True):
        if line.startswith(_TOKEN_LINES):
            yield line
        elif not _ANY_LINE().match(line):
            raise MetricsError(f"not Prometheus text: {line[:60]!r}")


def _add_sample(totals: Totals, name: str, labels: dict[str, str], value: float) -> None:
    direction = labels.get("direction")
    role, model = labels.get("agent"), labels.get("model", "")
    if name != TOKENS_METRIC or direction not in DIRECTIONS or not role or value < 0:
        return
    counts = totals.setdefault(role, {}).setdefault(model, dict.fromkeys(DIRECTIONS, 0))
    counts[direction] += int(value)


def role_tokens(models: dict[str, dict[str, int]]) -> dict[str, int]:
    """One role's counts summed over its models."""
    return {d: sum(counts.get(d, 0) for counts in models.values()) for d in DIRECTIONS}


def role_cost(config: Config, models: dict[str, dict[str, int]]) -> float | None:
    """USD for one role's tokens (a model ``[pricing]`` lacks at its highest prices);
    None without telemetry or without a ``[pricing]`` table."""
    return priced(models, config.price_for)


def role_estimated(config: Config, models: dict[str, dict[str, int]]) -> list[str]:
    """The role's models whose cost is an estimate: ``[pricing]`` has no entry for them."""
    return estimated(models, config.price_for)
