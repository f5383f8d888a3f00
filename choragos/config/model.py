"""The configuration model and its loader.

``load_config`` reads ``.choragos.toml`` (or the built-in team when there is
none) into frozen dataclasses.  Every key is type-checked and defaulted; every
error in the file is collected into one :class:`ConfigError`; unknown keys and
keys whose feature is not built yet become warnings on ``Config.warnings``.
The checking machinery lives in :mod:`choragos.config.schema`.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from urllib.parse import urlsplit

from choragos import onuse
from choragos.agents.profiles import AGENT_NAMES
from choragos.config import schema as cs
from choragos.config import userconfig
from choragos.config.envpolicy import build_env
from choragos.config.memfloor import DEFAULT_FLOOR, parse_size
from choragos.config.schema import ConfigError
from choragos.inert import inert
from choragos.remote.hosts import HOST_SCHEMA, HostSpec, check_roles, read_hosts

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_THEME",
    "KEY_ACTIONS",
    "MIN_TERMINAL",
    "NOT_BUILT",
    "BudgetSettings",
    "CheckpointSettings",
    "Config",
    "ConfigError",
    "Keys",
    "Price",
    "ProxySettings",
    "RoleSpec",
    "SphragisSettings",
    "UISettings",
    "Upstreams",
    "builtin_config",
    "load_config",
    "role_env",
]

CONFIG_NAME = ".choragos.toml"

_LATER = "not built yet"

# Keys that parse and validate but do nothing yet, as dotted schema names
# ("roles.judge" is that key in any [[roles]] table; "ui" is the whole
# section).  Present keys listed here warn, so nobody believes a setting is in
# force when it is not.  Remove an entry in the change that builds the feature
# (and the matching line in docs/configuration.md).
NOT_BUILT: dict[str, str] = {
}


# ---- the model ------------------------------------------------------------------------

# The smallest terminal a role's program gets unless configured otherwise:
# the classic size every terminal program is laid out for.
MIN_TERMINAL = (80, 24)


@dataclass(frozen=True)
class RoleSpec:
    """One seat of the team: which program runs there and how it is treated."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    model: str = ""
    model_flag: str = "--model"
    prompt_template: str = ""
    start: bool = False
    approve: bool = False
    env_allow: tuple[str, ...] = ()
    env_deny: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] | None = None  # None: the agent profile's default
    input_prompts: tuple[str, ...] = ()
    chrome_markers: tuple[str, ...] = ()
    timeout: float | None = None
    timeout_action: str = "notify"
    restart: str = ""
    restart_retries: int = 3
    budget: float | None = None          # USD
    budget_tokens: int | None = None     # all directions added up
    budget_action: str = "notify"        # notify | pause | block | cut
    # What a provider's limit does to the role's queued work: it waits, or
    # goes to an idle role running the same agent CLI.
    limit_action: str = "wait"
    stall_action: str = "notify"         # notify | nudge | restart
    # Seconds of an unchanged screen while holding a task.  On by default: a
    # worker that went idle without reporting its task is otherwise silent
    # while the rest of the crew is busy (every agent CLI redraws its timer
    # while it works, so a screen this still is not working).
    stall_after: float | None = 1800.0
    worktree: bool = False
    merge: str = "gate"
    judge: str = ""
    judge_pass: int = 7
    judge_rounds: int = 3
    owns_files: tuple[str, ...] = ()
    fresh: bool = False
    verify: str = ""                     # a command run in the role's tree after each work-done
    verify_rounds: int = 3               # fix attempts before the orchestrator hears it failed
    verify_timeout: float = 600.0
    # False: the role only reads (a reviewer, a tester); a done without a
    # change is expected, and a change is what gets flagged.
    writes: bool = True
    resume_args: tuple[str, ...] = ()  # added to the first spawn of a resumed session
    can_delegate: bool | None = None  # None: only the start role may
    agent: str = ""  # the agent profile by name; empty: chosen from the command
    host: str = ""  # a [hosts.<name>] table: the role runs there, over ssh
    # The smallest terminal the program gets, whatever its tile: an agent
    # laid out for 22 columns is unusable, and typing is checked on its
    # screen.  None: [ui] min_terminal (the loader fills it in).
    min_terminal: tuple[int, int] | None = None

    @property
    def terminal_floor(self) -> tuple[int, int]:
        """(cols, rows) the role's PTY never goes below."""
        return self.min_terminal or MIN_TERMINAL

    @property
    def may_delegate(self) -> bool:
        return self.start if self.can_delegate is None else self.can_delegate

    def argv(self) -> list[str]:
        """The command line: command, args, then ``model_flag model`` when both are set."""
        tail = [self.model_flag, self.model] if self.model and self.model_flag else []
        return [self.command, *self.args, *tail]


@dataclass(frozen=True)
class CheckpointSettings:
    """``[checkpoints]``: whether tasks are checkpointed, and how many checkpoints are kept."""

    enabled: bool = True
    keep: int = 20


@dataclass(frozen=True)
class SphragisSettings:
    """``[sphragis]``.  ``enabled`` is None when the key is absent: the soft default."""

    enabled: bool | None = None
    fail_closed: bool = True
    addr: str = "127.0.0.1:8787"
    command: str = "sphragis"

    @property
    def required(self) -> bool:
        """Only an explicit ``enabled = true`` makes a missing gateway fatal."""
        return self.enabled is True

    @property
    def base_url(self) -> str:
        return f"http://{self.addr}"

    def agent_url(self, role: str) -> str:
        """The URL a role's ``base_url_env`` variables get, so usage is attributed to it."""
        return f"{self.base_url}/agent/{role}"


@dataclass(frozen=True)
class Upstreams:
    """``[gateway.upstream]``: where the built-in gateway sends each API's requests."""

    anthropic: str = "https://api.anthropic.com"
    openai: str = "https://api.openai.com"
    gemini: str = "https://generativelanguage.googleapis.com"

    def by_api(self) -> dict[str, str]:
        return {"anthropic": self.anthropic, "openai": self.openai, "gemini": self.gemini}


@dataclass(frozen=True)
class ProxySettings:
    """``[gateway]``: the gateway choragos runs itself (``builtin = true``)."""

    builtin: bool = False
    addr: str = ""  # "": listen on [sphragis] addr, where the session looks for it
    timeout: float | None = 600.0  # seconds an upstream may stay silent; None: no limit
    upstream: Upstreams = field(default_factory=Upstreams)


@dataclass(frozen=True)
class MetricsSettings:
    """``[metrics]``: the session's own Prometheus endpoint; ``listen = ""`` is off."""

    listen: str = ""


@dataclass(frozen=True)
class WebSettings:
    """``[web]``: the crew's web view and API; ``listen = ""`` is off."""

    listen: str = ""


@dataclass(frozen=True)
class NotifySettings:
    """``[notify]``: push a short message when a person is needed; ``url = ""`` is off."""

    url: str = ""
    kind: str = "ntfy"  # "ntfy": a text body and headers; "webhook": a JSON body
    link: str = ""  # the page's address as the phone reaches it ("": the [web] address)
    token_in_link: bool = False  # the web token in the link: only to a service you trust
    every: float = 20.0  # seconds between two messages at most; what comes between is merged


@dataclass(frozen=True)
class Price:
    """USD per million tokens in each direction."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_creation: float = 0.0
    estimated: bool = False  # a model [pricing] lacks, priced at the highest prices it has


DEFAULT_THEME: Mapping[str, int | str] = MappingProxyType({
    "accent": 45, "working": 42, "waiting": 214, "scroll": 213, "idle": 244, "dim": 240,
})


# The [ui] keys that name a command run on an event (a hook).
HOOK_KEYS = ("on_gate", "on_input", "on_timeout", "on_budget", "on_exit", "on_idle", "on_done",
             "on_limit")


@dataclass(frozen=True)
class UISettings:
    """``[ui]``: the deck's bell, sidebar, mouse and theme, the hooks' commands, waits, floors."""

    bell: bool = True
    sidebar: bool = True
    mouse: bool = True
    auto_focus: bool = True
    on_gate: str = ""
    on_input: str = ""
    on_timeout: str = ""
    on_budget: str = ""
    on_exit: str = ""
    on_idle: str = ""
    on_done: str = ""
    idle_after: float = 600.0
    min_terminal: tuple[int, int] = MIN_TERMINAL
    on_limit: str = ""
    # How long a role waits when a provider's limit does not say until when
    # (and the first step of the back-off when it comes straight back).
    limit_wait: float = 60.0
    limit_give_up: float = 8 * 3600.0  # a limit lasting longer fails the work it holds
    min_free_memory: int = parse_size(DEFAULT_FLOOR)  # bytes; 0 turns admission off
    theme: Mapping[str, int | str] = field(default_factory=lambda: dict(DEFAULT_THEME))


@dataclass(frozen=True)
class BudgetSettings:
    """``[budget]``: limits for the whole crew (each role's own are on its table)."""

    session: float | None = None  # USD across every role
    action: str = "pause"  # pause | block: what spending it does


@dataclass(frozen=True)
class Keys:
    """The deck's prefix chord and the key for each action pressed after it."""

    prefix: str = "ctrl+b"
    split_vertical: str = "v"
    split_horizontal: str = "-"
    close_pane: str = "x"
    focus_pane_left: str = "h"
    focus_pane_down: str = "j"
    focus_pane_up: str = "k"
    focus_pane_right: str = "l"
    cycle_pane_next: str = "tab"
    cycle_pane_previous: str = "shift+tab"
    zoom: str = "z"
    resize_mode: str = "r"
    toggle_sidebar: str = "b"
    restart_role: str = "R"
    pause_role: str = "p"
    reload: str = "C"
    detach: str = "d"
    broadcast: str = "a"
    task_board: str = "t"
    search: str = "/"
    help: str = "?"

    @property
    def bindings(self) -> dict[str, str]:
        """Action name -> key, for every action (the prefix is not an action)."""
        return {name: getattr(self, name) for name in KEY_ACTIONS}


KEY_ACTIONS: tuple[str, ...] = tuple(f.name for f in fields(Keys) if f.name != "prefix")


@dataclass(frozen=True)
class Config:
    """A whole configuration as loaded: the team, every section, the files it came from."""

    roles: tuple[RoleSpec, ...]
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    sphragis: SphragisSettings = field(default_factory=SphragisSettings)
    gateway: ProxySettings = field(default_factory=ProxySettings)
    pricing: Mapping[str, Price] = field(default_factory=dict)
    ui: UISettings = field(default_factory=UISettings)
    keys: Keys = field(default_factory=Keys)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    web: WebSettings = field(default_factory=WebSettings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    hosts: Mapping[str, HostSpec] = field(default_factory=dict)
    source: Path | None = None  # None: the built-in team
    user_source: Path | None = None  # the user's own file, when one was read
    warnings: tuple[str, ...] = ()

    @property
    def start_role(self) -> RoleSpec:
        """The orchestrator (the loader guarantees exactly one)."""
        for role in self.roles:
            if role.start:
                return role
        raise LookupError("no role has start = true")

    @property
    def workers(self) -> tuple[RoleSpec, ...]:
        return tuple(role for role in self.roles if not role.start)

    def role(self, name: str) -> RoleSpec | None:
        return next((role for role in self.roles if role.name == name), None)

    def price_for(self, model: str) -> Price | None:
        """The price of the longest ``[pricing]`` prefix of ``model``.

        A model the table lacks is priced at the table's highest price in each
        direction, marked ``estimated``: never cheaper than it may be, so it
        stays inside every USD budget.  None only without a table.
        """
        hits = [prefix for prefix in self.pricing if model.startswith(prefix)]
        if hits:
            return self.pricing[max(hits, key=len)]
        if not self.pricing:
            return None
        return Price(**{d: max(getattr(p, d) for p in self.pricing.values())
                        for d in PRICED_DIRECTIONS}, estimated=True)


def role_env(spec: RoleSpec, base: Mapping[str, str], inject: Mapping[str, str]) -> dict[str, str]:
    """The environment ``spec``'s process starts with."""
    return build_env(base, spec.env_allow, spec.env_deny, inject)


# ---- loading --------------------------------------------------------------------------

def load_config(path: Path | None = None, cwd: Path | None = None,
                env: Mapping[str, str] = os.environ) -> Config:
    """Load ``path``, or ``<cwd>/.choragos.toml``, or the built-in team when neither
    exists, over the user's own file (:mod:`choragos.config.userconfig`) when there is one.

    Raises :class:`ConfigError` listing every problem found.
    """
    base = Path.cwd() if cwd is None else Path(cwd)
    target = _locate(path, base)
    user = _read_user(userconfig.path(env))
    if target is None:
        config = builtin_config()
        if user is None:
            return config
        return replace(config, **user.values, user_source=user.path, warnings=user.warnings)
    # As the user would write it, escapes made visible: it starts every error line.
    shown = CONFIG_NAME if path is None else inert(str(path))
    data = _parse(target, shown)
    if user is None:
        return _build(data, target, shown)
    config = _build(userconfig.merge_under(user.raw, data), target, shown)
    return replace(config, user_source=user.path,
                   warnings=(*user.warnings, *config.warnings))


@dataclass(frozen=True)
class _UserLayer:
    """The user's own configuration file, read and checked on its own."""

    path: Path
    raw: dict       # its sections, keys the schema knows only: merged under the project's
    values: dict    # the same, checked and built
    warnings: tuple[str, ...]


def _read_user(target: Path) -> _UserLayer | None:
    """The user's file, checked on its own so each problem names that file."""
    shown = inert(str(target))
    if not _user_file(target, shown):
        return None
    data = _parse(target, shown)
    report = cs.Report(shown)
    for key in data:
        if key not in userconfig.SECTIONS:
            report.error(key, f"only [keys], [ui] and [notify] belong in the user configuration"
                              f"{_nearest_section(key)}; the team and the rest go in a "
                              f"project's {CONFIG_NAME}")
    schema = {key: _TOP[key] for key in userconfig.SECTIONS}
    raw = {k: v for k, v in data.items() if k in userconfig.SECTIONS}
    values = cs.read_table(raw, schema, "", report)
    report.raise_if_errors()
    known = {"keys": _KEY_SCHEMA, "ui": _UI_SCHEMA, "notify": _NOTIFY_SCHEMA}
    # Unknown keys were warned about here, with this file's name; they stay out
    # of the merge so the project's check does not warn again under its name.
    raw = {section: {k: v for k, v in table.items() if k in known[section]}
           for section, table in raw.items() if isinstance(table, dict)}
    return _UserLayer(target, raw, values, tuple(report.warnings))


def _nearest_section(key: str) -> str:
    """`` (did you mean [keys]?)`` for a mistyped section of the user's file."""
    import difflib  # only for a file in error

    close = difflib.get_close_matches(key, userconfig.SECTIONS, n=1, cutoff=0.6)
    return f" (did you mean [{close[0]}]?)" if close else ""


def _user_file(target: Path, shown: str) -> bool:
    """Whether the user's file is there; a folder in its place is an error."""
    if not _there(target, shown):
        return False
    if not target.is_file():
        raise ConfigError([f"{shown}: not a file; the user configuration is a TOML file "
                           "(or nothing)"])
    return True


def _locate(path: Path | None, base: Path) -> Path | None:
    if path is None:
        found = base / CONFIG_NAME
        return found if _there(found, CONFIG_NAME) else None
    path = Path(path)
    target = path if path.is_absolute() else base / path
    if not _there(target, inert(str(path))):
        raise ConfigError([f"{inert(str(path))}: no such file"])
    return target


def _there(target: Path, shown: str) -> bool:
    """Whether ``target`` exists; one that cannot be looked at (a name too
    long, a folder not searchable) is an error, never taken for no file."""
    try:
        target.stat()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise ConfigError([f"{shown}: cannot read: {exc.strerror or exc}"]) from None
    return True


def _parse(target: Path, shown: str) -> dict:
    try:
        text = target.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError([f"{shown}: cannot read: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{shown}: not UTF-8 text (bad byte at offset {exc.start})"]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([_syntax_error(shown, str(exc), text)]) from None


def _syntax_error(shown: str, message: str, text: str) -> str:
    # tomllib puts the position in the message text (no attributes before 3.14).
    at = re.search(r" \(at line (\d+), column (\d+)\)$", message)
    if at:
        return f"{shown}:{at[1]}: invalid TOML: {message[:at.start()]} (column {at[2]})"
    end = re.search(r" \(at end of document\)$", message)
    if end is None:
        return f"{shown}: invalid TOML: {message}"
    last_line = max(text.count("\n") + (0 if text.endswith("\n") else 1), 1)
    return f"{shown}:{last_line}: invalid TOML: {message[:end.start()]} (at end of file)"


def _build(data: dict, target: Path, shown: str) -> Config:
    report = cs.Report(shown)
    values = cs.read_table(data, _TOP, "", report)
    if "roles" not in data:
        report.error("roles", "no [[roles]] table; a config file must define the team")
    _warn_not_built(data, "", "", report)
    _join_gateways(values, data, report)
    _warn_web(values, report)
    _warn_metrics(values, report)
    check_roles([(f"roles[{n}]", role.host, role.worktree)
                 for n, role in enumerate(values.get("roles", ()), 1)],
                values.get("hosts", {}), report)
    report.raise_if_errors()
    _floor_terminals(values)
    _warn_unenforceable(values, report)
    return Config(**values, source=target.resolve(), warnings=tuple(report.warnings))


def _warn_web(values: dict, report: cs.Report) -> None:
    """The web view beyond loopback, or notifications that lead nowhere."""
    listen = getattr(values.get("web"), "listen", "")
    if listen and beyond_loopback(listen):
        report.warn("web.listen", f"the web view listens on {cs.show(listen)}, beyond this "
                    "machine: anyone who reaches it and holds the token acts as you; prefer "
                    "127.0.0.1 with an ssh tunnel or a tailnet (see docs/web.md)")
    notify = values.get("notify")
    if notify is not None and notify.token_in_link and not notify.url:
        report.warn("notify.token_in_link", "has no effect without [notify] url")


def _floor_terminals(values: dict) -> None:
    floor = getattr(values.get("ui"), "min_terminal", MIN_TERMINAL)
    values["roles"] = floored(values.get("roles", ()), floor)


def floored(roles: tuple[RoleSpec, ...], floor: tuple[int, int]) -> tuple[RoleSpec, ...]:
    """Each role without its own ``min_terminal`` given ``floor`` (the ``[ui]`` one)."""
    return tuple(role if role.min_terminal else replace(role, min_terminal=floor)
                 for role in roles)


def _warn_unenforceable(values: dict, report: cs.Report) -> None:
    """A budget needs token counts (the gateway) and, in USD, prices to mean anything."""
    gateway_off = getattr(values.get("sphragis"), "enabled", None) is False
    priced = bool(values.get("pricing"))
    where = [(f"roles[{n}].budget", role.budget, role.budget_tokens)
             for n, role in enumerate(values.get("roles", ()), 1)]
    where.append(("budget.session", getattr(values.get("budget"), "session", None), None))
    for at, usd, tokens in where:
        if gateway_off and (usd is not None or tokens is not None):
            report.warn(at, "cannot be enforced: [sphragis] enabled = false, so no tokens "
                            "are counted")
        elif usd is not None and not priced:
            report.warn(at, "cannot be enforced in USD: there is no [pricing] table to "
                            "price the tokens with")
    _warn_unblockable(values, report)


def _warn_unblockable(values: dict, report: cs.Report) -> None:
    """Only the built-in gateway can refuse a call: elsewhere "block" and "cut" only notify."""
    if getattr(values.get("gateway"), "builtin", False):
        return
    where = [(f"roles[{n}].budget_action", role.budget_action)
             for n, role in enumerate(values.get("roles", ()), 1)]
    where.append(("budget.action", getattr(values.get("budget"), "action", "")))
    for at, action in where:
        if action in ("block", "cut"):
            report.warn(at, f'"{action}" needs [gateway] builtin = true (only the built-in '
                            "gateway can refuse a model call); without it the budget only "
                            "notifies")


def _warn_not_built(table: dict, name: str, where: str, report: cs.Report) -> None:
    for key, value in table.items():
        dotted, at = f"{name}.{key}" if name else key, cs.join(where, key)
        if dotted in NOT_BUILT:
            report.warn(at, f"accepted but {NOT_BUILT[dotted]}; it has no effect in this version")
        elif isinstance(value, dict):
            _warn_not_built(value, dotted, at, report)
        elif isinstance(value, list):
            for index, item in enumerate(value, 1):
                if isinstance(item, dict):
                    _warn_not_built(item, dotted, f"{at}[{index}]", report)


# ---- [[roles]] ------------------------------------------------------------------------

# The first character may not be "-" so a name never reads as a CLI option
# (`choragos delegate --to -x`); no "." or "/" so it never leaves .choragos/.
_ROLE_NAME = onuse.pattern(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


def _role_name(value: object) -> str:
    text = cs.string(value)
    if not _ROLE_NAME().fullmatch(text):
        raise ValueError(f"{cs.show(text)} is not a role name (1-32 letters, digits, "
                         "- or _, starting with a letter or digit)")
    return text


def _verify_command(value: object) -> str:
    """A command line split like a shell would (never run through one)."""
    text = cs.argv_string(value)
    try:
        shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"{cs.show(text)} cannot be split into words: {exc}") from None
    return text


def _judge(value: object) -> str:
    return "" if value == "" else _role_name(value)


def _owned_path(value: object) -> str:
    """A workspace-relative literal path (no globs), normalised, never under .choragos/."""
    text = cs.word(value)
    if text.startswith(("/", "~")) or ".." in PurePosixPath(text).parts:
        raise ValueError(f"{cs.show(text)} must stay inside the workspace (relative, no ..)")
    if any(char in text for char in "*?["):
        raise ValueError(f"{cs.show(text)} is a pattern; name each owned file literally")
    path = PurePosixPath(text).as_posix()
    if path == "." or PurePosixPath(path).parts[0] == ".choragos":
        raise ValueError(f"{cs.show(text)} is choragos's own state; no role can own it")
    return path


_ROLE_SCHEMA: cs.Schema = {
    "name": _role_name,
    "command": cs.word,
    "args": cs.list_of(cs.argv_string),
    "model": cs.argv_string,
    "model_flag": cs.argv_string,
    "prompt_template": cs.argv_string,  # typed into the agent: no NUL
    "start": cs.boolean,
    "approve": cs.boolean,
    "env_allow": cs.list_of(cs.env_pattern),
    "env_deny": cs.list_of(cs.env_pattern),
    "base_url_env": cs.list_of(cs.env_name),
    "input_prompts": cs.list_of(cs.marker),
    "chrome_markers": cs.list_of(cs.marker),
    "timeout": cs.optional_duration,
    "timeout_action": cs.choice("notify", "restart"),
    "restart": cs.choice("", "on-failure", "always"),
    "restart_retries": cs.integer(0),
    "budget": cs.money,
    "budget_tokens": cs.integer(1),
    "budget_action": cs.choice("notify", "pause", "block", "cut"),
    "limit_action": cs.choice("wait", "reroute"),
    "stall_after": cs.optional_duration,
    "stall_action": cs.choice("notify", "nudge", "restart"),
    "worktree": cs.boolean,
    "merge": cs.choice("gate", "auto", "manual", "never"),
    "judge": _judge,
    "judge_pass": cs.integer(1, 10),
    "judge_rounds": cs.integer(1),
    "owns_files": cs.list_of(_owned_path),
    "fresh": cs.boolean,
    "verify": _verify_command,
    "verify_rounds": cs.integer(1),
    "verify_timeout": cs.positive_duration,
    "writes": cs.boolean,
    "resume_args": cs.list_of(cs.argv_string),
    "can_delegate": cs.boolean,
    "agent": cs.choice("", *AGENT_NAMES),
    "host": cs.word,
    "min_terminal": cs.terminal_size,
}


@dataclass
class _Seat:
    """One [[roles]] table while the team is checked as a whole."""

    where: str
    raw: dict
    values: dict


def _read_roles(raw: list, where: str, report: cs.Report) -> tuple[RoleSpec, ...]:
    seats = []
    for index, table in enumerate(raw, 1):
        at = f"{where}[{index}]"
        if isinstance(table, dict):
            seats.append(_Seat(at, table, cs.read_table(table, _ROLE_SCHEMA, at, report)))
        else:
            report.error(at, str(cs.expected("a table", table)))
    if not raw:
        report.error(where, "the team is empty; define at least one [[roles]] table")
    for check in (_check_required, _check_names, _check_start, _check_judges, _check_owners,
                  _advise):
        check(seats, where, report)
    return tuple(RoleSpec(**seat.values) for seat in seats if _complete(seat))


def _complete(seat: _Seat) -> bool:
    return "name" in seat.values and "command" in seat.values


def _check_required(seats: list[_Seat], where: str, report: cs.Report) -> None:
    for seat in seats:
        for key in ("name", "command"):
            if key not in seat.raw:
                report.error(cs.join(seat.where, key), "required")


def _check_names(seats: list[_Seat], where: str, report: cs.Report) -> None:
    # Case-insensitive: names become file names, and macOS folds case.
    taken: dict[str, _Seat] = {}
    for seat in seats:
        name = seat.values.get("name")
        if name is None:
            continue
        first = taken.setdefault(name.lower(), seat)
        if first is not seat:
            report.error(cs.join(seat.where, "name"),
                         f"{cs.show(name)} is already the name of {first.where}")


def _check_start(seats: list[_Seat], where: str, report: cs.Report) -> None:
    starts = [seat for seat in seats if seat.values.get("start")]
    # A mistyped `start = "yes"` already has its error; do not add a second
    # one claiming that no role is the orchestrator.
    mistyped = any("start" in seat.raw and "start" not in seat.values for seat in seats)
    if seats and not starts and not mistyped:
        report.error(where, "no role has start = true; exactly one role must (the orchestrator)")
    for seat in starts[1:]:
        report.error(cs.join(seat.where, "start"),
                     f"{starts[0].where} already has start = true; exactly one role may")


def _check_judges(seats: list[_Seat], where: str, report: cs.Report) -> None:
    names = {seat.values["name"] for seat in seats if "name" in seat.values}
    for seat in seats:
        judge = seat.values.get("judge")
        at = cs.join(seat.where, "judge")
        if judge and judge == seat.values.get("name"):
            report.error(at, "a role cannot judge its own work")
        elif judge and judge not in names:
            report.error(at, f"no role is named {cs.show(judge)}")


def _check_owners(seats: list[_Seat], where: str, report: cs.Report) -> None:
    """Each owned path has exactly one owner."""
    owners: dict[str, _Seat] = {}
    for seat in seats:
        for path in seat.values.get("owns_files", ()):
            first = owners.setdefault(path, seat)
            if first is not seat:
                report.error(cs.join(seat.where, "owns_files"),
                             f"{cs.show(path)} is already owned by {first.where}; a file has "
                             "exactly one owner")


def _advise(seats: list[_Seat], where: str, report: cs.Report) -> None:
    """Warnings for settings that are valid but almost certainly not what was meant."""
    for seat in seats:
        got = seat.values
        if got.get("model") and got.get("model_flag") == "":
            report.warn(cs.join(seat.where, "model_flag"),
                        f"empty, so model {cs.show(got['model'])} is not passed to the command")
        if got.get("timeout_action") == "restart" and got.get("restart", "") == "":
            report.warn(cs.join(seat.where, "timeout_action"),
                        '"restart" stops the role, but restart = "" never starts it again; '
                        'set restart = "on-failure"')
        if "merge" in got and not got.get("worktree", False):
            report.warn(cs.join(seat.where, "merge"), "has no effect without worktree = true")


# ---- the other sections ---------------------------------------------------------------

_HOST = onuse.pattern(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")


def _addr(value: object) -> str:
    text = cs.string(value)
    host, colon, port = text.rpartition(":")
    if not colon or not host:
        raise ValueError(f"{cs.show(text)} is not host:port (e.g. 127.0.0.1:8787)")
    if not _is_host(host):
        raise ValueError(f"{cs.show(text)}: {cs.show(host)} is not a host name or address "
                         "(IPv6 goes in brackets, e.g. [::1]:8787)")
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f"{cs.show(text)}: the port must be a number from 1 to 65535")
    return text


def split_host_port(addr: str) -> tuple[str, int]:
    """``host:port`` (as ``[gateway] addr`` and the like hold it) as ``(host,
    port)``, an IPv6 host without its brackets.  A ValueError in one plain
    sentence for a missing or bad port (a number from 0 to 65535), an empty
    host, or an IPv6 address out of its brackets.  The gateway's listener,
    its port check and the session's probe of it all split with this."""
    host, colon, port = addr.rpartition(":")
    if not colon or not host.strip("[]"):
        raise ValueError(f"{addr!r} is not host:port (e.g. 127.0.0.1:8787)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif any(c in host for c in ":[]"):
        raise ValueError(f"{addr!r}: {host!r} is not a host name or address "
                         "(IPv6 goes in brackets, e.g. [::1]:8787)")
    if not (port.isascii() and port.isdigit() and int(port) <= 65535):
        raise ValueError(f"{addr!r}: the port must be a number from 0 to 65535")
    return host, int(port)


def web_listen(value: object) -> str:
    """``[web] listen``: "host:port", or a bare port on loopback; port 0 takes a free one."""
    text = cs.string(value).strip()
    if text.isascii() and text.isdigit():
        text = f"127.0.0.1:{text}"
    host, _, port = text.rpartition(":")
    if port == "0" and host:
        return _addr(f"{host}:1")[:-1] + "0"
    return _addr(text)


def _is_host(host: str) -> bool:
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return True
    return bool(_HOST().fullmatch(host))


def _settings(cls: type, schema: cs.Schema) -> cs.Nested:
    """A section read straight into ``cls``; absent keys keep the class defaults."""
    return cs.Nested(lambda raw, at, report: cls(**cs.read_table(raw, schema, at, report)),
                     keys=schema)


_CHECKPOINTS = _settings(CheckpointSettings, {
    "enabled": cs.boolean, "keep": cs.integer(1),
})
_SPHRAGIS = _settings(SphragisSettings, {
    "enabled": cs.boolean, "fail_closed": cs.boolean, "addr": _addr, "command": cs.word,
})


def upstream_url(value: object) -> str:
    """An http(s) base URL without credentials, query or fragment."""
    text = cs.word(value)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ValueError(f"{cs.show(text)} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{cs.show(text)} is not an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise ValueError(f"{cs.show(text)}: no credentials in the URL; agents send their own")
    if parts.query or parts.fragment:
        raise ValueError(f"{cs.show(text)}: a base URL has no query or fragment")
    return text.rstrip("/")


parse_addr = _addr  # for `choragos gateway --addr`

_UPSTREAMS = _settings(Upstreams, {api: upstream_url for api in ("anthropic", "openai",
                                                                   "gemini")})
_GATEWAY = _settings(ProxySettings, {
    "builtin": cs.boolean, "addr": _addr, "timeout": cs.optional_duration,
    "upstream": _UPSTREAMS,
})


def beyond_loopback(addr: str) -> bool:
    """Whether a listener on ``addr`` (host:port) is reachable from other machines."""
    host = addr.rpartition(":")[0]
    return host not in ("localhost", "[::1]") and not host.startswith("127.")


def _warn_metrics(values: dict, report: cs.Report) -> None:
    listen = getattr(values.get("metrics"), "listen", "")
    if listen and beyond_loopback(listen):
        report.warn("metrics.listen", f"the session's metrics listen on {cs.show(listen)}, "
                    "beyond this machine: anyone who reaches it can read the crew's roles, "
                    "tasks, tokens and costs")


def _join_gateways(values: dict, data: dict, report: cs.Report) -> None:
    """A built-in gateway is the session's gateway: on, at its address, fail-closed as set."""
    builtin = values.get("gateway")
    if not isinstance(builtin, ProxySettings) or not builtin.builtin:
        return
    sphragis = values.get("sphragis", SphragisSettings())
    written = data.get("sphragis") if isinstance(data.get("sphragis"), dict) else {}
    if sphragis.enabled is False:
        report.error("gateway.builtin", "conflicts with [sphragis] enabled = false; "
                     "remove one of the two")
    if builtin.addr and "addr" in written and written["addr"] != builtin.addr:
        report.error("gateway.addr", f"{cs.show(builtin.addr)} differs from [sphragis] addr "
                     f"{cs.show(sphragis.addr)}; the session scrapes the gateway where it "
                     "listens, so set the address in one place")
    addr = builtin.addr or sphragis.addr
    if beyond_loopback(addr):
        report.warn("gateway.addr" if builtin.addr else "sphragis.addr",
                    f"the built-in gateway listens on {cs.show(addr)}, beyond this machine: "
                    "anyone who reaches it can use it as a proxy and read its /metrics")
    values["sphragis"] = replace(sphragis, addr=addr)
    values["gateway"] = replace(builtin, addr=addr)


PRICED_DIRECTIONS = ("input", "output", "cache_read", "cache_creation")
_PRICE_SCHEMA: cs.Schema = {key: cs.number() for key in PRICED_DIRECTIONS}
_PRICE = _settings(Price, _PRICE_SCHEMA)


def _read_pricing(raw: dict, where: str, report: cs.Report) -> dict[str, Price]:
    # Every key is a model-name prefix, so there is nothing to call unknown.
    prices = cs.read_table(raw, dict.fromkeys(raw, _PRICE), where, report)
    return {prefix: price for prefix, price in prices.items() if isinstance(price, Price)}


def _read_theme(raw: dict, where: str, report: cs.Report) -> dict[str, int | str]:
    schema = dict.fromkeys(DEFAULT_THEME, cs.colour)
    return {**DEFAULT_THEME, **cs.read_table(raw, schema, where, report)}


# A hook's command goes into sh's argv, where a NUL cannot go: taken, it made
# every run of the hook die in its thread, unsaid.
_UI_SCHEMA: cs.Schema = {
    "bell": cs.boolean, "sidebar": cs.boolean, "mouse": cs.boolean, "auto_focus": cs.boolean,
    "on_gate": cs.argv_string, "on_input": cs.argv_string, "on_timeout": cs.argv_string,
    "on_budget": cs.argv_string, "on_exit": cs.argv_string, "on_idle": cs.argv_string,
    "on_done": cs.argv_string, "idle_after": cs.positive_duration,
    "min_terminal": cs.terminal_size, "on_limit": cs.argv_string,
    "limit_wait": cs.positive_duration, "limit_give_up": cs.positive_duration,
    "min_free_memory": cs.byte_size,
    "theme": cs.Nested(_read_theme, keys=dict.fromkeys(DEFAULT_THEME, cs.colour)),
}
_UI = _settings(UISettings, _UI_SCHEMA)
_BUDGET = _settings(BudgetSettings, {"session": cs.money,
                                     "action": cs.choice("pause", "block")})
_KEY_SCHEMA: cs.Schema = {"prefix": cs.prefix_key, **{a: cs.key_name for a in KEY_ACTIONS}}


def _read_keys(raw: dict, where: str, report: cs.Report) -> Keys:
    values = cs.read_table(raw, _KEY_SCHEMA, where, report)
    _check_bindings(values, where, report)
    return Keys(**values)


def _check_bindings(values: dict, where: str, report: cs.Report) -> None:
    # Defaults claim their keys first, so a clash is reported on the key the
    # user wrote, never on a default they did not touch.
    chosen = [a for a in values if a != "prefix"]
    owner: dict[str, str] = {}
    for action in [a for a in KEY_ACTIONS if a not in values] + chosen:
        key = values.get(action, getattr(Keys, action))
        at = cs.join(where, action)
        if len(key) == 1 and key in "123456789":
            report.error(at, f"{cs.show(key)}: the digits 1-9 focus panes by number")
        elif key in owner:
            default = "" if owner[key] in values else " (its default)"
            report.error(at, f"{cs.show(key)} is already bound to {owner[key]}{default}")
        owner.setdefault(key, action)


_NOTIFY_SCHEMA: cs.Schema = {
    "url": lambda v: upstream_url(v) if v != "" else "",
    "kind": cs.choice("ntfy", "webhook"), "link": lambda v: upstream_url(v) if v != "" else "",
    "token_in_link": cs.boolean, "every": cs.positive_duration}
_TOP: cs.Schema = {
    "roles": cs.Nested(_read_roles, list, "an array of tables ([[roles]])", _ROLE_SCHEMA),
    "checkpoints": _CHECKPOINTS,
    "sphragis": _SPHRAGIS,
    "gateway": _GATEWAY,
    "pricing": cs.Nested(_read_pricing, keys=_PRICE_SCHEMA),
    "ui": _UI,
    "keys": cs.Nested(_read_keys, keys=_KEY_SCHEMA),
    "budget": _BUDGET,
    "hosts": cs.Nested(read_hosts, keys=HOST_SCHEMA),
    "metrics": _settings(MetricsSettings, {"listen": lambda v: _addr(v) if v != "" else ""}),
    "web": _settings(WebSettings, {"listen": lambda v: web_listen(v) if v != "" else ""}),
    "notify": _settings(NotifySettings, _NOTIFY_SCHEMA),
}


# ---- the built-in team -----------------------------------------------------------

# Variables that reach cloud accounts and code hosts.  The auditor reads
# untrusted code for a living; it has no use for any of them.
_CLOUD_CREDENTIALS = (
    "AWS_*", "AZURE_*", "GCP_*", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_*",
    "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN",
)
# Claude workers start without the user's personal MCP servers, which keeps
# their context window for the task they were given.
_WORKER_ARGS = ("--strict-mcp-config",)


def builtin_config() -> Config:
    """The five-role team used when there is no config file."""
    return Config(roles=floored(_BUILTIN_ROLES, MIN_TERMINAL))


_BUILTIN_ROLES = (
    RoleSpec(
        name="orchestrator", command="claude", model="opus", start=True,
        prompt_template=(
            "You lead this team and do not write, review or audit code yourself. "
            "Break the request into tasks, give each one to the teammate best suited "
            "to it, wait for their reports, check them against the request, and keep "
            "the user told where things stand."),
    ),
    RoleSpec(
        name="coder", command="claude", model="opus", args=_WORKER_ARGS,
        prompt_template=(
            "You implement the change you are handed, and only that change. Keep the "
            "diff focused, and run the project's tests and linters before you report back."),
    ),
    RoleSpec(
        name="reviewer", command="gemini", base_url_env=("GOOGLE_GEMINI_BASE_URL",),
        writes=False,
        prompt_template=(
            "You review changes and never edit files. Read the diff and the code around "
            "it; look for bugs, unhandled cases, missing tests and unclear code; report "
            "your findings ranked by how much they matter."),
    ),
    RoleSpec(
        name="auditor", command="claude", model="sonnet", args=_WORKER_ARGS,
        env_deny=_CLOUD_CREDENTIALS, writes=False,
        prompt_template=(
            "You audit changes for security problems: injection, leaked or logged "
            "secrets, unsafe defaults, risky dependencies, unchecked input. Report each "
            "finding with its file and line. Do not change code."),
    ),
    RoleSpec(
        name="release", command="claude", model="haiku", args=_WORKER_ARGS, approve=True,
        prompt_template=(
            "You prepare releases: version numbers, changelog, tags. A person approved "
            "each task before it reached you; even so, push or publish nothing the task "
            "does not name explicitly."),
    ),
)
