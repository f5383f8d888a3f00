"""Every command, declared once: its wire schema, its core handler, its CLI verb.

A control command is a :class:`Command`: the fields its request carries
(kind, required or optional, default, limit), whether only the operator may
send it, whether it still runs while an enforced gateway is down, and the
CLI verb that sends it.  A verb that never talks to the session (``init``,
``serve``, ``report``, ...) is a :class:`Verb` alone.  Everything else is
derived from this table: ``wire.parse_request`` validates by the schema,
``choragos.cli.main`` builds its verb table and ``--help`` from it, the
session core finds each command's handler by :attr:`Command.handler`, and
``choragos.control.authority`` asks :meth:`Command.operator_only`.

Adding a command is one declaration here, the ``_cmd_<name>`` method on the
core (``actors/core.py``), a verb module under ``choragos/cli/`` when it has
a verb, and its row in docs/protocol.md.

Only the standard library, and only cheap parts of it: every CLI verb,
including the ones agents run many times a session, loads this module.  So
the declarations are plain slotted classes: ``dataclasses`` would pull in
``inspect`` and add some 7 ms to every ``choragos delegate``.
"""

from __future__ import annotations

# Limits of the wire schema (also quoted in the refusals and in docs/protocol.md).
MAX_TARGETS = 64
MAX_ID = 64
MAX_KEYS = 64
MAX_INPUT_TEXT = 4096
# A remote role's report travels in its work-done (its file is on another machine).
MAX_REPORT_TEXT = 256 * 1024
MAX_HANDOFF_WAIT = 3600
MAX_ROLLBACK_TARGET = 200
MAX_AMOUNT = 32
# The mark of the loosenings a reload's refusal named, sent back by a confirmation.
MAX_SEEN_MARK = 64
# A rollback restores files on the checkpointer's thread, after any snapshot
# already queued there; a big tree can take minutes, so its client waits that
# long rather than the socket's usual few seconds.
ROLLBACK_ANSWER_WITHIN = 600.0
OUTCOMES = ("done", "failed", "blocked")
GATE_ACTIONS = ("list", "approve", "reject")
# Keys an operator may press into a role from the CLI (``choragos keys``),
# enough to answer an agent's dialog without the deck.
KEY_NAMES = ("enter", "esc", "tab", "space", "backspace", "up", "down", "left", "right",
             "ctrl+c")

# The kinds of field ``wire`` knows how to check.
TEXT, PATH, FLAG, CHOICE, TASK_ID, ROLE, ROLES, KEYS, SECONDS = (
    "text", "path", "flag", "choice", "task id", "role", "roles", "keys", "seconds")


class When:
    """A condition on an earlier field of the same request: ``action`` is one of ``values``."""

    __slots__ = ("field", "values")

    def __init__(self, field: str, *values: str) -> None:
        self.field = field
        self.values = values

    def holds(self, request: dict) -> bool:
        return request.get(self.field) in self.values


class Field:
    """One field of a request.  ``when``: the field is read only when that
    holds, and is ``default`` otherwise.  ``limit``: the most items,
    characters or seconds, by kind."""

    __slots__ = ("choices", "default", "kind", "limit", "name", "required", "when")

    def __init__(self, name: str, kind: str, *, required: bool = False,
                 default: object = None, choices: tuple = (), limit: int | None = None,
                 when: When | None = None) -> None:
        self.name = name
        self.kind = kind
        self.required = required
        self.default = default
        self.choices = choices
        self.limit = limit
        self.when = when


class Verb:
    """A CLI verb: ``choragos <name>`` runs ``run(argv, verb=name)`` in ``module``.

    ``agent``: a protocol verb the agents in the panes run themselves; each
    seat's CLI is told to trust it (choragos/agents/seatsetup.py), so it never waits
    on a permission dialog.  ``examples``: command lines shown under its
    ``--help`` and in the man page."""

    __slots__ = ("agent", "command", "examples", "help", "module", "name")

    def __init__(self, name: str, module: str, help: str, command: str | None = None, *,
                 agent: bool = False, examples: tuple[str, ...] = ()) -> None:
        self.name = name
        self.module = module
        self.help = help
        self.command = command  # the control command it sends, if it has one of its own
        self.agent = agent
        self.examples = examples


class Command:
    """A control command: what the session accepts on its socket as ``{"cmd": name}``.

    ``fields`` are checked in order, so the first broken one is the one
    reported.  ``operator``: only the operator may send it (True, or a
    :class:`When` for the requests that are, e.g. a gate decision).
    ``gateway_exempt``: accepted while an enforced gateway is down (True or a
    :class:`When`).  ``one_of``: at least one of these fields must be non-empty.
    ``answer_within``: how long a client waits for the ack, when the command's
    work may take longer than the socket's usual deadline.
    """

    __slots__ = ("answer_within", "fields", "gateway_exempt", "name", "one_of", "operator",
                 "verb")

    def __init__(self, name: str, fields: tuple[Field, ...] = (), *,
                 operator: bool | When = False, gateway_exempt: bool | When = False,
                 one_of: tuple[str, ...] = (), verb: Verb | None = None,
                 answer_within: float | None = None) -> None:
        self.name = name
        self.answer_within = answer_within
        self.fields = fields
        self.operator = operator
        self.gateway_exempt = gateway_exempt
        self.one_of = one_of
        self.verb = verb
        if verb is not None:
            verb.command = name

    @property
    def handler(self) -> str:
        """The name of the session core's method that carries it out."""
        return "_cmd_" + self.name.replace("-", "_")

    def operator_only(self, request: dict) -> bool:
        return _applies(self.operator, request)

    def exempt_while_gateway_down(self, request: dict) -> bool:
        return _applies(self.gateway_exempt, request)

    def spoken_as(self, request: dict) -> str:
        """How a refusal names this request: ``gate approve`` rather than ``gate``."""
        if isinstance(self.operator, When):
            return f"{self.name} {request.get(self.operator.field)}"
        return self.name


def _applies(rule: bool | When, request: dict) -> bool:
    return rule.holds(request) if isinstance(rule, When) else rule


def _verb(name: str, module: str, help: str, *example: str, agent: bool = False) -> Verb:
    return Verb(name, "choragos.cli." + module, help, agent=agent, examples=example)


ROLE_FIELD = Field("role", ROLE, required=True)

# In the order ``choragos --help`` lists the verbs.
DECLARED: tuple[Command | Verb, ...] = (
    _verb("init", "init", "write a starter .choragos.toml",
          "choragos init --auto"),
    _verb("doctor", "doctor", "check this directory's setup", "choragos doctor"),
    _verb("demo", "demo", "run the scripted demo team in a scratch repository "
          "(no agent CLI needed)", "choragos demo"),
    _verb("serve", "serve", "start the session and attach to its deck "
          "(--detach: background, --headless: no deck)",
          "choragos serve", "choragos serve --detach"),
    _verb("attach", "attach", "bring the running session's deck to this terminal",
          "choragos attach", "choragos attach -t myproject"),
    _verb("ls", "ls", "list the running sessions, across projects",
          "choragos ls"),
    _verb("kill", "kill", "stop this directory's session (--all: every session)",
          "choragos kill"),
    Command("delegate", (
        Field("to", ROLES, required=True, limit=MAX_TARGETS),
        Field("task", TEXT, required=True),
        Field("brief", PATH),
        Field("require_live", FLAG, default=False),
    ), verb=_verb("delegate", "delegate", "hand a task to one or more roles",
                                "choragos delegate --to coder --task 'Add a --version flag'",
                                agent=True)),
    Command("work-done", (
        Field("done", FLAG, default=False),
        Field("outcome", CHOICE, default="done", choices=OUTCOMES),
        Field("id", TASK_ID, required=True, limit=MAX_ID),
        Field("task", TEXT, required=True),
        Field("report", PATH),
        Field("report_text", TEXT, limit=MAX_REPORT_TEXT),
    ), verb=_verb("work-done", "workdone", "report a task back to the orchestrator",
                  "choragos work-done --id T3 --done --task 'added --version; tests pass'",
                  agent=True)),
    Command("gate", (
        Field("action", CHOICE, default="list", choices=GATE_ACTIONS),
        Field("id", TASK_ID, required=True, limit=MAX_ID,
              when=When("action", "approve", "reject")),
        Field("reason", TEXT, default="", when=When("action", "reject")),
    ), operator=When("action", "approve", "reject"), gateway_exempt=When("action", "list"),
        verb=_verb("gate", "gate", "list, approve or reject gated delegations",
                      "choragos gate", "choragos gate approve T4")),
    Command("cancel", (
        Field("id", TASK_ID, required=True, limit=MAX_ID),
        Field("reason", TEXT, default=""),
    ), operator=True, gateway_exempt=True,
        verb=_verb("cancel", "cancel", "take back a task not yet typed into its role",
                   "choragos cancel T5", "choragos cancel T5 --reason 'done by hand'")),
    Command("board", (Field("archived", FLAG, default=False),), gateway_exempt=True,
            verb=_verb("board", "board", "show the task board of the running session",
                          "choragos board", "choragos board -t myproject")),
    Command("status", gateway_exempt=True,
            verb=_verb("status", "status", "show every role's state in the running session",
                          "choragos status")),
    Command("restart", (
        Field("gateway", FLAG, default=False),
        Field("role", ROLE, required=True, when=When("gateway", False)),
    ), operator=True, gateway_exempt=When("gateway", True),
        verb=_verb("restart", "rolectl", "restart a role (resets its restart budget), "
                   "or a given-up built-in gateway", "choragos restart coder",
                   "choragos restart --gateway")),
    Command("pause", (ROLE_FIELD,), operator=True,
            verb=_verb("pause", "rolectl", "pause a role (SIGSTOP its process group)",
                          "choragos pause coder")),
    Command("resume", (ROLE_FIELD,), operator=True,
            verb=_verb("resume", "rolectl", "resume a paused role, or lift a provider's limit hold",
                          "choragos resume coder")),
    Command("input", (
        ROLE_FIELD,
        Field("keys", KEYS, default=(), choices=KEY_NAMES, limit=MAX_KEYS),
        Field("text", TEXT, default="", limit=MAX_INPUT_TEXT),
    ), one_of=("text", "keys"), operator=True,
        verb=_verb("keys", "keys", "type text and press keys in a role's pane (headless)",
                      "choragos keys coder --text 'yes' enter")),
    Command("reload", (Field("loosen", FLAG, default=False),
                       Field("seen", TEXT, default="", limit=MAX_SEEN_MARK)), operator=True,
            gateway_exempt=True,
            verb=_verb("reload", "simple", "re-read the config and converge the roles "
                       "(--loosen: apply what it loosens of roles, gates, budgets, env, hooks)",
                       "choragos reload", "choragos reload --loosen")),
    Command("ping", gateway_exempt=True,
            verb=_verb("ping", "simple", "check that a session answers",
                          "choragos ping")),
    Command("shutdown", operator=True, gateway_exempt=True,
            verb=_verb("shutdown", "simple", "stop the running session and its roles",
                          "choragos shutdown")),
    Command("budget", (
        Field("session", FLAG, default=False),
        Field("role", ROLE, when=When("session", False)),
        Field("amount", TEXT, required=True, limit=MAX_AMOUNT),
    ), one_of=("role", "session"), operator=True, gateway_exempt=True,
        verb=_verb("budget", "budget", "set a role's budget (or the session's) in USD "
                   "without editing the config; a higher one unblocks it",
                   "choragos budget coder 5.00", "choragos budget --session 20")),
    _verb("checkpoints", "checkpoints", "list or prune workspace checkpoints",
          "choragos checkpoints", "choragos checkpoints prune --keep 10"),
    _verb("rollback", "rollback", "restore the workspace to before a task",
          "choragos rollback T3"),
    _verb("report", "report", "per-role summary of a session from its event log",
          "choragos report", "choragos report --html report.html"),
    _verb("web", "web", "print the web view's address with its access token (and a QR code)",
          "choragos web", "choragos web --rotate"),
    _verb("diff", "diff", "show exactly what one task changed", "choragos diff T3"),
    _verb("logs", "logs", "print a role's transcript (-f: follow it)",
          "choragos logs coder -f"),
    Command("handoff", (
        Field("wait", SECONDS, default=300, limit=MAX_HANDOFF_WAIT),
        Field("config", PATH),
    ), operator=True, verb=_verb("handoff", "handoff", "have the orchestrator write a "
                                 "handoff, then end the session (serve --resume continues it)",
                                 "choragos handoff", "choragos handoff --config next.toml")),
    _verb("completion", "completion", "print the shell completion script for bash, zsh or fish",
          'eval "$(choragos completion bash)"',
          "choragos completion fish > ~/.config/fish/completions/choragos.fish"),
    _verb("man", "man", "print the manual page (roff)",
          "choragos man | man -l -"),
    _verb("gateway", "gateway", "run the built-in gateway (token counts per role)",
          "choragos gateway"),
    # Asked by verbs (``rollback``) and tools, never typed: it has no verb of its own.
    Command("whoami", gateway_exempt=True),
    # The deck's and ``choragos rollback``'s (when a session runs; without one
    # the verb works on the checkpoint store itself): restores files, hands no
    # agent any work, so it still runs while an enforced gateway is down.
    Command("rollback", (
        Field("target", TEXT, required=True, limit=MAX_ROLLBACK_TARGET),
        Field("dry_run", FLAG, default=False),
    ), operator=True, gateway_exempt=True, answer_within=ROLLBACK_ANSWER_WITHIN),
)

COMMANDS: dict[str, Command] = {d.name: d for d in DECLARED if isinstance(d, Command)}
VERBS: dict[str, Verb] = {v.name: v for v in (
    d.verb if isinstance(d, Command) else d for d in DECLARED) if v is not None}
