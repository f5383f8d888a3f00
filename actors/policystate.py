"""The state some of the core's policies keep on :class:`~choragos.actors.core.CoreState`.

Kept there so a restarted core takes it over; defined here, apart from the
policies, so the core's state is made without loading them: each policy's
module is loaded when the core first uses it (``actors/core.py``), which
for most is after the roles' agents have started, or never.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from choragos.actors.mergeflow import MergeGate
    from choragos.actors.workcheck import HeldReport
    from choragos.config.model import Config
    from choragos.gateway.limits import LimitWatch


@dataclass
class CheckState:
    """The work checks' (``actors/workcheck.py``)."""

    held: dict[str, HeldReport] = field(default_factory=dict)  # reports waiting for checks


@dataclass
class MergeState:
    """The merge gates' (``actors/mergeflow.py``)."""

    gates: OrderedDict[str, MergeGate] = field(default_factory=OrderedDict)  # by task id
    checked: dict[str, str] = field(default_factory=dict)  # task id -> commit its checks saw
    uncommitted: set[str] = field(default_factory=set)  # ids whose last commit failed (said)


@dataclass
class LimitState:
    """The provider limits' (``actors/limitflow.py``)."""

    watch: LimitWatch | None = None  # the provider limits roles wait out
    going: set[str] = field(default_factory=set)  # roles set going after a limit

    def rerouting(self, config: Config) -> bool:
        """Some role waits out a limit with ``limit_action = "reroute"``: a
        role coming to rest may take its queued work."""
        return self.watch is not None and any(
            self.watch.limited(role) and (spec := config.role(role)) is not None
            and spec.limit_action == "reroute" for role in self.watch.episodes)


@dataclass
class BudgetState:
    """The blocking budgets' (``actors/budgetflow.py``)."""

    refused: dict[str, str] = field(default_factory=dict)  # role -> why the gateway last refused it
