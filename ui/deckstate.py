"""What the deck shows, as plain data kept apart from the widgets.

The UI actor owns one :class:`DeckState`; the urwid loop is a view of it, so
a crash of the loop (which the supervisor answers by starting the UI actor
again) loses nothing.  Nothing here imports urwid: the news part of the
state is changed only by the pure reducer in ``ui/reducer.py``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from choragos.config.model import Config
from choragos.roles.rolestatus import RoleStatus
from choragos.ui.layout import Layout

if TYPE_CHECKING:
    from choragos.ui.pane import PaneView


@dataclass
class RoleInfo:
    """What the deck knows about a role (from the core's published views)."""

    name: str
    status: RoleStatus = RoleStatus.STARTING
    model: str = ""
    command: str = ""
    host: str = ""  # the [hosts.<name>] it runs on; "" on this machine
    profile: str = ""  # the agent profile its screen is read with
    pid: int | None = None
    restarts: int = 0
    detail: str = ""
    preview: tuple[str, ...] = ()
    approve: bool = False
    start: bool = False
    extra: dict = field(default_factory=dict)
    usage: dict | None = None  # {"tokens": {...}, "cost": float | None} from the gateway
    news: int = 0  # views received; a slower full sync must not overwrite a newer one


@dataclass
class DeckState:
    """Everything the deck shows: the team and its work (``roles`` …
    ``gateway``, changed by the reducer) and the tiling (layout, panes)."""

    layout: Layout
    sidebar: bool = True
    roles: dict[str, RoleInfo] = field(default_factory=dict)
    tasks: dict[str, dict] = field(default_factory=dict)
    gates: OrderedDict = field(default_factory=OrderedDict)
    panes: dict[str, PaneView] = field(default_factory=dict)
    broadcast: bool = False
    dismissed: set[str] = field(default_factory=set)  # gates hidden with Esc
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    gateway: str | None = None  # "on" | "down" | "off"; None: never configured

    def pane(self, role: str) -> PaneView:
        view = self.panes.get(role)
        if view is None:
            from choragos.ui.pane import PaneView  # drawing code: not needed by the reducer

            view = self.panes[role] = PaneView(role)
        return view


def first_layout(config: Config) -> Layout:
    """The tiling a new session's deck starts with: the start role and the
    next ones beside it, the rest hidden (``serve`` spawns the hidden roles'
    agents after its first frame: see choragos/cli/serve.py)."""
    names = [role.name for role in config.roles]
    main = config.start_role.name if any(r.start for r in config.roles) else None
    return Layout.main_vertical(names, main)


def initial_state(config: Config, sidebar_on: bool) -> DeckState:
    state = DeckState(layout=first_layout(config), sidebar=sidebar_on)
    for role in config.roles:
        state.roles[role.name] = RoleInfo(role.name, model=role.model, command=role.command,
                                          host=role.host, approve=role.approve, start=role.start)
    return state

