"""A resumed session gets back its merge gates, held work and pending verdicts.

A policy of the session core, with no state of its own.  Each task records
what its work waits on (``Task.waiting``), and the board is journaled, so
after ``serve --resume`` the gates and the judge loop are rebuilt from the
restored board, each by the policy that owns it, and a merge that was
approved (or begun by ``merge = auto``) but not finished is taken up again.
Worktree branches need nothing: they stay on disk while they hold unmerged
work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from choragos.actors.coreport import CorePort
from choragos.actors.holds import Holds
from choragos.actors.judging import JudgeLoop
from choragos.actors.mergeflow import MergeFlow

if TYPE_CHECKING:
    from choragos.actors.core import CoreState


class IsolationRestore:
    def __init__(self, port: CorePort, s: CoreState, holds: Holds, judge: JudgeLoop,
                 merges: MergeFlow) -> None:
        self.port, self.s = port, s
        self.holds, self.judge, self.merges = holds, judge, merges

    def restore(self) -> None:
        now = self.s.board.clock()
        merging = []
        # The archive too: a done task whose merge gate waits stays done while
        # later tasks settle, so a long session's restore finds it archived.
        board = self.s.board
        for task in [*board.archive.values(), *board.tasks.values()]:
            waiting = task.waiting or {}
            kind = waiting.get("kind")
            if kind == "merge":
                self.merges.restore(task, waiting, now)
            elif kind in ("judge", "owner"):
                self.holds.restore(task, waiting, now)
            elif kind == "merging":
                merging.append(task.id)
                self.merges.resume(task, waiting)
            elif kind == "judging":
                self.judge.restore(task, waiting)
        merges, holds, verdicts = self.s.merging.gates, self.s.holds, self.s.verdicts
        if merges or holds or verdicts or merging:
            self.port.event("isolation restored", merge_gates=list(merges), holds=list(holds),
                            judging=sorted(verdicts), merging=merging)
