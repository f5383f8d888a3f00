"""The deck's reducer: news from the core -> a new deck state and effects.

``reduce(state, item)`` never changes ``state``; it returns a new one (the
layout and panes, which news never touches, are shared) and a list of
effects: plain data saying what the view should do (ring the bell, open
the gate dialog, focus a pane …).  The urwid view carries them out; the
reducer is tested without urwid.

Besides the core's news it takes what the deck itself learnt about the
same facts (the answers to ``status``, ``board`` and ``gate list``, a gate
decided or put aside in the deck), so every change to the roles, tasks and
gates the deck shows goes through here.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import singledispatch
from typing import Any

from choragos.board.tasks import ARCHIVABLE, KEEP_RESOLVED
from choragos.roles.rolestatus import RoleStatus
from choragos.session import news
from choragos.ui.deckstate import DeckState, RoleInfo

# -- effects ------------------------------------------------------------------------


@dataclass(frozen=True)
class Ring:
    """Ring the attached terminal's bell."""


@dataclass(frozen=True)
class AutoFocus:
    """Focus this role's pane if the user is not busy elsewhere ([ui] auto_focus)."""

    role: str


@dataclass(frozen=True)
class FollowRoster:
    """The team changed: the layout shows these roles."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class ShowGate:
    """Open the gate dialog for the first waiting gate, if nothing else is open."""


@dataclass(frozen=True)
class CloseGate:
    """The gate of this task was decided: close its dialog if it is open."""

    task_id: str


@dataclass(frozen=True)
class RefreshBoard:
    """Show the new tasks in the task board if it is open."""


@dataclass(frozen=True)
class Resync:
    """Ask the core for the whole picture again (after a reload)."""


# -- what the deck itself learnt ------------------------------------------------------


@dataclass(frozen=True)
class StatusRead:
    """The answer to ``status``; ``asked``: each role's count of views when it went out."""

    rows: tuple[dict, ...]
    asked: dict[str, int]


@dataclass(frozen=True)
class BoardRead:
    """The tasks of a ``board`` answer."""

    tasks: tuple[dict, ...]


@dataclass(frozen=True)
class GatesRead:
    """The gates of a ``gate list`` answer."""

    gates: tuple[dict, ...]


@dataclass(frozen=True)
class GateDismissed:
    """The operator put the gate dialog of this task aside (Esc): it still waits."""

    task_id: str


@dataclass(frozen=True)
class GateDecided:
    """The operator decided this gate in its dialog (the core's news follows)."""

    task_id: str


Effect = Ring | AutoFocus | FollowRoster | ShowGate | CloseGate | RefreshBoard | Resync
Result = tuple[DeckState, list[Effect]]
Item = news.News | StatusRead | BoardRead | GatesRead | GateDismissed | GateDecided


def reduce(state: DeckState, item: Item) -> Result:
    """The deck state after ``item``, and what the view must do about it."""
    return _reduce(item, state)


@singledispatch
def _reduce(item: Any, state: DeckState) -> Result:
    raise TypeError(f"the deck has no reducer for {type(item).__name__}")


@_reduce.register(news.Bell)
def _bell(item: news.Bell, state: DeckState) -> Result:
    # The core rings when a human is needed and [ui] bell is on.
    return state, [Ring()]


@_reduce.register(news.RoleChanged)
def _role(item: news.RoleChanged, state: DeckState) -> Result:
    view = item.view
    old = state.roles.get(view.name)
    effects: list[Effect] = []
    roles = dict(state.roles)
    if old is None:
        old = RoleInfo(view.name)
        effects.append(FollowRoster((*state.roles, view.name)))
    info = replace(old, news=old.news + 1, status=RoleStatus(view.status), pid=view.pid,
                   restarts=view.restarts, detail=view.detail, preview=tuple(view.preview),
                   profile=view.profile or old.profile)
    roles[view.name] = info
    if info.status is RoleStatus.WAITING and old.status != RoleStatus.WAITING:
        effects.append(AutoFocus(view.name))
    return replace(state, roles=roles), effects


@_reduce.register(news.TaskChanged)
def _task(item: news.TaskChanged, state: DeckState) -> Result:
    task = item.task.as_dict()  # the deck keeps the rows the board command answers
    tasks = {**state.tasks, task["id"]: task}
    if task.get("state") in _RESOLVED:
        tasks = _live(tasks)
    state = replace(state, tasks=tasks)
    effects: list[Effect] = [RefreshBoard()]
    gate = state.gates.get(task["id"])
    if gate is not None and task.get("state") != "gated" and gate.get("kind") != "merge":
        state, closed = _close_gate(state, task["id"])
        effects += closed
    if task.get("state") == "delivered":
        effects.append(AutoFocus(task["role"]))
    return state, effects


_RESOLVED = frozenset(str(s) for s in ARCHIVABLE)


def _live(tasks: dict[str, dict]) -> dict[str, dict]:
    """The deck's copy of the board, bounded as the core's live board is:
    past KEEP_RESOLVED done or rejected tasks the oldest leave it, so a long
    session's every change does not copy (and the board not list) them all."""
    resolved = [tid for tid, t in tasks.items() if t.get("state") in _RESOLVED]
    if len(resolved) <= KEEP_RESOLVED:
        return tasks
    old = set(sorted(resolved, key=task_number)[:len(resolved) - KEEP_RESOLVED])
    return {tid: t for tid, t in tasks.items() if tid not in old}


def task_number(task_id: str) -> int:
    """3 for ``T3``: the order tasks were created in (0 for an id of another shape)."""
    return int(task_id[1:]) if task_id[1:].isdigit() else 0


@_reduce.register(news.GateOpened)
def _gate_opened(item: news.GateOpened, state: DeckState) -> Result:
    gate = item.gate.as_dict()
    tasks = state.tasks if gate.get("kind") == "merge" else {**state.tasks, gate["id"]: gate}
    gates = OrderedDict(state.gates)
    gates[gate["id"]] = gate
    return replace(state, tasks=tasks, gates=gates), [RefreshBoard(), ShowGate()]


@_reduce.register(news.GateClosed)
def _gate_closed(item: news.GateClosed, state: DeckState) -> Result:
    return _close_gate(state, item.task_id)


def _close_gate(state: DeckState, task_id: str) -> Result:
    """Decided (here, from the CLI or the board): the dialog goes."""
    gates = OrderedDict(state.gates)
    gates.pop(task_id, None)
    return (replace(state, gates=gates, dismissed=state.dismissed - {task_id}),
            [CloseGate(task_id)])


@_reduce.register(news.EventLogged)
def _event(item: news.EventLogged, state: DeckState) -> Result:
    event = item.event
    if event == "reload":
        return state, [Resync()]
    if event == "work-done":
        start = next((i.name for i in state.roles.values() if i.start), None)
        if start:
            return state, [AutoFocus(start)]
    return state, []


@_reduce.register(news.GatewayChanged)
def _gateway(item: news.GatewayChanged, state: DeckState) -> Result:
    return replace(state, gateway=item.state), []


@_reduce.register(news.TokensChanged)
def _tokens(item: news.TokensChanged, state: DeckState) -> Result:
    roles = dict(state.roles)
    for role, usage in item.usages.items():
        info = roles.get(role)
        if info is not None and any(usage.tokens.values()):
            roles[role] = replace(info, usage=usage.as_dict())
    return replace(state, roles=roles), []


@_reduce.register(news.MarksChanged)
def _marks(item: news.MarksChanged, state: DeckState) -> Result:
    roles = {name: replace(info, extra={**info.extra, "marks": tuple(item.marks.get(name, ()))})
             for name, info in state.roles.items()}
    return replace(state, roles=roles), []


@_reduce.register(StatusRead)
def _status_read(item: StatusRead, state: DeckState) -> Result:
    return merge_status(state, list(item.rows), item.asked)


@_reduce.register(BoardRead)
def _board_read(item: BoardRead, state: DeckState) -> Result:
    return replace(state, tasks={**state.tasks, **{task["id"]: task for task in item.tasks}}), []


@_reduce.register(GatesRead)
def _gates_read(item: GatesRead, state: DeckState) -> Result:
    gates = OrderedDict(state.gates)
    for gate in item.gates:
        gates[gate["id"]] = {**state.tasks.get(gate["id"], {}), **gate}
    return replace(state, gates=gates), [ShowGate()]


@_reduce.register(GateDismissed)
def _gate_dismissed(item: GateDismissed, state: DeckState) -> Result:
    return replace(state, dismissed=state.dismissed | {item.task_id}), []


@_reduce.register(GateDecided)
def _gate_decided(item: GateDecided, state: DeckState) -> Result:
    # Its dialog is being closed by whoever decided: no CloseGate here.
    gates = OrderedDict(state.gates)
    gates.pop(item.task_id, None)
    return replace(state, gates=gates), []


def merge_status(state: DeckState, rows: list[dict], asked: dict[str, int]) -> Result:
    """A full ``status`` answer merged in.  ``asked`` is each role's count of
    views when the question went out: a view published since is fresher than
    the answer's row, which then only fills in the model and command."""
    roles: dict[str, RoleInfo] = {}
    for row in rows:
        name = row["name"]
        info = replace(state.roles.get(name) or RoleInfo(name), model=row.get("model", ""),
                       command=row.get("command", ""), host=row.get("host") or "")
        if info.news == asked.get(name, 0):
            info = replace(info, status=RoleStatus(row.get("state", info.status)),
                           pid=row.get("pid"), restarts=row.get("restarts", 0),
                           preview=tuple(row.get("preview", ())),
                           profile=row.get("profile", info.profile), detail=row.get("detail", ""))
        roles[name] = info
    if not roles:
        return state, []
    return replace(state, roles=roles), [FollowRoster(tuple(roles))]
