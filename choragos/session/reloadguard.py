"""What a reload changes that only the operator may decide.

An agent can edit ``.choragos.toml`` (docs/security.md): the operator's next
``choragos reload`` would apply what it wrote.  So a reload names every
change to what only the operator decides (a role added, what a role runs,
its gates, budgets, env, authority and host, the session's budget and
hooks) in its answer and in the event log, and one that loosens any of it
is refused unless the operator confirms it (``choragos reload --loosen``).
A tightening (a gate added, a budget lowered) is named but needs no
confirmation.

A start compares the file with the config the last session here ran with
through the same list (choragos/session/confirmed.py).

Pure: two configs in, sentences out.
"""

from __future__ import annotations

from dataclasses import dataclass

from choragos.config.model import HOOK_KEYS, Config, RoleSpec

# The stronger the later: moving left loosens.
BUDGET_ACTIONS = ("notify", "pause", "block", "cut")
SESSION_ACTIONS = ("pause", "block")
# Any change of these is the operator's: what a role runs (its flags hold
# an agent's permission mode), with what of the environment, where.
AUTHORITY_KEYS = ("command", "args", "env_allow", "env_deny", "base_url_env", "host",
                  "owns_files", "verify")
LATER = " (applies after a restart)"


@dataclass(frozen=True)
class OperatorChange:
    """One change only the operator may decide; ``loosens`` when it gives more room."""

    text: str
    loosens: bool


def operator_changes(old: Config, new: Config, later: str = LATER) -> list[OperatorChange]:
    """Every change from ``old`` (running) to ``new`` (the file) that is the operator's;
    ``later`` marks those a reload leaves to the restart (a start: "", all apply now)."""
    out: list[OperatorChange] = []
    for spec in new.roles:
        before = old.role(spec.name)
        changes = _added(spec) if before is None else _role(before, spec)
        # A reload never changes the start role: its changes wait for a restart.
        mark = later if spec.start or spec.name == old.start_role.name else ""
        out += [OperatorChange(change.text + mark, change.loosens) for change in changes]
    out += _session(old, new, later)
    return out


def _show(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(str(item) for item in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _change(where: str, key: str, old: object, new: object, loosens: bool) -> OperatorChange:
    return OperatorChange(f"{where} {key} {_show(old)} -> {_show(new)}", loosens)


def _raised(old: float | None, new: float | None) -> bool:
    """A cap raised or removed (None: no cap)."""
    return old is not None and (new is None or new > old)


def _weaker(order: tuple[str, ...], old: str, new: str) -> bool:
    return order.index(new) < order.index(old) if new in order and old in order else True


def _role(before: RoleSpec, spec: RoleSpec) -> list[OperatorChange]:
    name, out = spec.name, []
    checks = (
        ("approve", not spec.approve),
        ("merge", spec.merge == "auto"),
        ("judge", True),
        ("judge_pass", spec.judge_pass < before.judge_pass),
        ("budget", _raised(before.budget, spec.budget)),
        ("budget_tokens", _raised(before.budget_tokens, spec.budget_tokens)),
        ("budget_action", _weaker(BUDGET_ACTIONS, before.budget_action, spec.budget_action)),
        ("can_delegate", spec.may_delegate and not before.may_delegate),
        ("writes", spec.writes),
        *((key, True) for key in AUTHORITY_KEYS),
    )
    for key, loosens in checks:
        old, new = getattr(before, key), getattr(spec, key)
        if old != new:
            out.append(_change(name, key, old, new, loosens))
    return out


def _added(spec: RoleSpec) -> list[OperatorChange]:
    """A role added is a program the session starts with the environment its
    policy lets through: what it runs, and any room beyond a worker's usual."""
    out = [OperatorChange(f"{spec.name} (added) runs {_show(' '.join(spec.argv()))}", True)]
    if spec.can_delegate:
        out.append(OperatorChange(f"{spec.name} (added) can_delegate true", True))
    for key in ("env_allow", "base_url_env", "host"):
        value = getattr(spec, key)
        if value:
            out.append(OperatorChange(f"{spec.name} (added) {key} {_show(value)}", True))
    return out


def _session(old: Config, new: Config, later: str) -> list[OperatorChange]:
    out = []
    if old.budget.session != new.budget.session:
        out.append(_change("[budget]", "session", old.budget.session, new.budget.session,
                           _raised(old.budget.session, new.budget.session)))
    if old.budget.action != new.budget.action:
        out.append(_change("[budget]", "action", old.budget.action, new.budget.action,
                           _weaker(SESSION_ACTIONS, old.budget.action, new.budget.action)))
    # Read at the start only: named now, so the restart that applies them is no surprise.
    for section, key in _LATER_KEYS:
        before, after = getattr(getattr(old, section), key), getattr(getattr(new, section), key)
        if before != after:
            change = _change(f"[{section}]", key, before, after, _loosens(key, after))
            out.append(OperatorChange(change.text + later, change.loosens))
    # Where model traffic and the roles go: too long to quote, named.
    for where, before, after in (("[gateway] upstream", old.gateway.upstream,
                                  new.gateway.upstream), ("[hosts]", old.hosts, new.hosts)):
        if before != after:
            out.append(OperatorChange(f"{where} changed{later}", True))
    return out


def _loosens(key: str, after: object) -> bool:
    """A switch loosens when it goes off (a link token when it goes on); any
    other value of these keys is the operator's to set."""
    if key in ("enabled", "fail_closed", "builtin"):
        return after in (False, None)
    return bool(after) if key == "token_in_link" else True


# The hooks are commands run on this machine, the gateway enforces budgets,
# checkpoints are what a rollback restores, the web view and notifications
# reach beyond the machine: any change is the operator's.
_LATER_KEYS = (*(("ui", key) for key in HOOK_KEYS),
               *(("sphragis", key) for key in ("enabled", "fail_closed", "addr", "command")),
               ("gateway", "builtin"), ("checkpoints", "enabled"),
               ("notify", "url"), ("notify", "token_in_link"), ("web", "listen"))
