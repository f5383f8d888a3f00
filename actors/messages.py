"""Messages between choragos' actors.

Each is a small frozen dataclass; an actor's ``handle`` dispatches on type.
Messages that come from a role's reader thread or timers carry the spawn
generation, so news from a process that has since been replaced is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from choragos.session.news import RoleView
from choragos.session.reloadplan import ReloadPlan
from choragos.terminal.restartpolicy import ExitStatus

# --- to a role actor -------------------------------------------------------


@dataclass(frozen=True)
class Spawn:
    """Start the role's agent if none runs; the memory gate is asked first unless ``admitted``."""

    manual: bool = False  # a manual restart resets the restart budget
    admitted: bool = False  # let in by the memory gate: no need to ask it again


@dataclass(frozen=True)
class Exited:
    """The role's process of generation ``gen`` exited, and how."""

    gen: int
    status: ExitStatus
    kind: str = ""  # a remote seat's host did not answer, or refused the login (remote/reach.py)


@dataclass(frozen=True)
class BootCheck:
    """The timer's: is the new agent ready for its boot line yet?"""

    gen: int


@dataclass(frozen=True)
class Classify:
    """The timer's: read the role's screen again after new output."""

    gen: int


@dataclass(frozen=True)
class QuietCheck:
    """The timer's: the output has been quiet a while; read the screen again."""

    gen: int


@dataclass(frozen=True)
class StallCheck:
    """Has the screen stayed unchanged for the role's ``stall_after``?"""

    gen: int


@dataclass(frozen=True)
class Injection:
    """One line to type into a pane: a task pointer, a report, a notice."""

    id: int
    role: str
    text: str
    kind: str  # "task" | "report" | "notice"
    task_id: str | None = None


@dataclass(frozen=True)
class Inject:
    """Type ``injection`` into the role's pane, if the role is ready for it."""

    injection: Injection
    behind_since: float | None = None  # put off since then: output not on the screen yet
    sent: bool = False  # a remote seat's task file is sent: the screen is read afresh


@dataclass(frozen=True)
class InjectStep:
    """The timer's: the typist's next step in typing an injection."""

    gen: int
    injection_id: int
    step: str  # a typing step (actors/typist.py): "wait-echo" | "confirm" | "retype"


@dataclass(frozen=True)
class StopProcess:
    """Stop the role's process (SIGTERM, SIGKILL after ``grace``); no restart follows."""

    grace: float = 3.0


@dataclass(frozen=True)
class Restart:
    """Restart the role's agent now, with its restart budget reset."""


@dataclass(frozen=True)
class Kill:
    """SIGTERM the role and let its restart policy decide what follows."""

    reason: str
    grace: float = 3.0


@dataclass(frozen=True)
class KillHard:
    """The timer's: a killed process still running after its grace gets SIGKILL."""

    gen: int


@dataclass(frozen=True)
class Pause:
    """Freeze the role's process (SIGSTOP); keys typed meanwhile wait for the resume."""


@dataclass(frozen=True)
class Resume:
    """Let a paused role's process go on (SIGCONT), then send the keys held for it."""


@dataclass(frozen=True)
class WriteInput:
    """Write ``data`` to the role's PTY (named keys, sent a moment after their text)."""

    data: bytes


@dataclass(frozen=True)
class TypeKeys:
    """An operator's text and named keys (``choragos keys``), made inert first."""

    text: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class UpdateSpec:
    """A reload changed the role's config; a respawn follows if it must."""

    spec: Any
    env: dict[str, str]


@dataclass(frozen=True)
class Resize:
    """The role's tile changed size: its PTY follows, never below the role's floor."""

    cols: int
    rows: int


@dataclass(frozen=True)
class Limited:
    """A provider's limit holds the role until ``until`` (wall clock), or,
    with ``until`` None, no longer does: the screen says its state again."""

    until: float | None
    detail: str = ""


# --- from roles to the session core ----------------------------------------


@dataclass(frozen=True)
class RoleReported:
    """A role actor's new view, to the core (which publishes it to the
    subscribers as ``choragos.session.news.RoleChanged``)."""

    view: RoleView


@dataclass(frozen=True)
class InjectionOutcome:
    """To the core: how an injection went, and whether it may be typed again."""

    role: str
    injection: Injection
    ok: bool
    detail: str = ""
    final: bool = True  # False: a retry follows
    untouched: bool = False  # nothing was typed: the role was not ready after all
    # An Enter went in before the failure: the agent may have taken the text,
    # so it must not be typed again.
    submitted: bool = False
    # The text stayed in the live agent's input through its Enters: typing
    # it again would put it there twice.
    left_in_input: bool = False


@dataclass(frozen=True)
class LimitOnScreen:
    """The agent's own screen says it hit a provider's limit (``line`` says so)."""

    role: str
    line: str


@dataclass(frozen=True)
class LimitReported:
    """The gateway saw a provider answer ``role`` with a limit (a choragos.gateway.limits.Limit)."""

    role: str
    limit: Any


@dataclass(frozen=True)
class LimitLifted:
    """The gateway saw a provider answer ``role`` again after a limit."""

    role: str


@dataclass(frozen=True)
class BudgetRefused:
    """The gateway refused a model call of ``role``: a blocking budget is spent
    (``why``); with ``why`` empty, it let one through again after refusals."""

    role: str
    why: str


@dataclass(frozen=True)
class LimitWake:
    """A limited role's wait is over (``token`` names the wait that is current)."""

    role: str
    token: int


@dataclass(frozen=True)
class RoleExited:
    """To the core: the role's agent exited (or could not start), and whether it comes back."""

    role: str
    status: ExitStatus
    restarting: bool
    reason: str = ""
    # The agent may be well but out of reach (a remote seat's connection
    # dropped): its delivered task is typed again after the restart.
    redeliver: bool = False


# --- a remote role held while its host does not answer (actors/hostwait.py) -----

HOST_MARK = "held: host"  # its host does not answer: probed, started again when it does
# The host turned the login away (a key refused, a host key changed): held,
# not probed, until the operator fixes it and runs `restart`.  The crew that
# waits only on this is stuck; one that waits on a probed host is not.
LOGIN_MARK = "held: login"
HOST_NOTE = "waits for its host"
HOST_UNREACHABLE = "host unreachable"
HOST_REFUSED = "host refused the login"
HOST_WAITING = f"held: {HOST_UNREACHABLE}:"  # a held role's detail while its host is probed


@dataclass(frozen=True)
class HostHeld:
    """A role actor's word: ``role``'s host did not answer (or refused the login)."""

    role: str
    host: str      # "gpu (me@gpu-box)"
    refused: bool  # the login was turned away: the operator must fix it
    why: str       # what ssh said
    next_try: str  # when the host is probed next ("" when it is not: refused)
    new: bool      # a new outage (or a new kind of one): the noise is made


@dataclass(frozen=True)
class HostBack:
    """``role``'s host answered again and the role started, ``lasted`` seconds on."""

    role: str
    host: str
    lasted: float


@dataclass(frozen=True)
class ProbeDue:
    """The timer's: probe the held role's host (``token`` names the round)."""

    token: int
    due: float  # (monotonic) when the round was due: a probe since answers it


@dataclass(frozen=True)
class Probed:
    """The probe thread's: what the round ``token`` found."""

    token: int
    probe: Any  # choragos.remote.reach.Probe


# --- to the session core ----------------------------------------------------


@dataclass(frozen=True)
class Dispatch:
    """A validated control-socket request; the answer is the ack dict.

    ``expires`` (``time.monotonic()``): past it the core refuses the request
    unread, because whoever asked has stopped waiting and was told it failed
    -- so a request answered with an error never changes anything later."""

    request: dict
    expires: float | None = None


@dataclass(frozen=True)
class Deferred:
    """The core's answer to a ``Dispatch`` whose work another actor does: the
    dispatcher (on the socket's or the deck's worker thread, never the core's)
    asks ``actor`` for the ack, waiting up to ``timeout`` seconds, so a long
    job does not hold every other request behind it."""

    actor: Any  # a Handle
    message: Any
    timeout: float


@dataclass(frozen=True)
class Announce:
    """An event another actor wrote to the event log, for the core to publish."""

    record: dict


@dataclass(frozen=True)
class CheckpointDone:
    """To the core: a task's checkpoint was taken (``ref``) or failed (``error``)."""

    task_id: str
    ref: str | None = None
    error: str | None = None
    seconds: float | None = None  # how long the snapshot took
    skipped: tuple[str, ...] = ()  # paths it could not read, so left out


@dataclass(frozen=True)
class Subscribe:
    """Give ``callback`` every event the core publishes from now on."""

    callback: Any  # called with every published event, from the core's thread


@dataclass(frozen=True)
class TeamChanged:
    """From the reload actor, once the briefs name the new team: the start
    role is told who joined and who left."""

    added: tuple[str, ...]
    removed: tuple[str, ...]


# --- to the reload actor -----------------------------------------------------


@dataclass(frozen=True)
class ApplyReload:
    """The core's plan for the roles (it already converged its own state);
    ``handles``: the addresses it handed out for the roles the plan adds."""

    plan: ReloadPlan
    handles: dict[str, Any] = field(default_factory=dict, compare=False)


# --- to the checkpointer ---------------------------------------------------


@dataclass(frozen=True)
class Rollback:
    """Restore a checkpoint (or plan it, ``dry_run``); the answer is the ack."""

    target: str
    dry_run: bool
    by: str


@dataclass(frozen=True)
class Snapshot:
    """To the checkpointer: checkpoint the task's tree before the task goes out."""

    task_id: str
    role: str
    label: str
    reply_to: Any = field(default=None, compare=False)
    tree: Any = None  # the role's worktree (a Path); None: the main tree
    at_work: frozenset[str] = frozenset()  # ids of tasks whose checkpoints no prune may take


@dataclass(frozen=True)
class Prune:
    """To the checkpointer: keep the newest ``keep`` checkpoints and those of tasks at work."""

    keep: int
    at_work: frozenset[str] = frozenset()  # ids of tasks whose checkpoints no prune may take
