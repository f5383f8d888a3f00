"""A resumed session gets back its merge gates, held work and pending verdicts.

A mixin of the session core.  Each task records what its work waits on
(``Task.waiting``), and the board is journaled, so after ``serve --resume``
the gates and the judge loop are rebuilt from the restored board.  Worktree
branches need nothing: they stay on disk while they hold unmerged work.
"""

from __future__ import annotations

from typing import Any

from choragos import news
from choragos.actors.holds import Hold
from choragos.actors.judging import Judging
from choragos.actors.mergeflow import MergeGate, merge_gate_view


class IsolationRestore:
    s: Any  # CoreState

    def _restore_isolation(self) -> None:
        now = self.s.board.clock()
        for task in list(self.s.board.tasks.values()):
            waiting = task.waiting or {}
            kind = waiting.get("kind")
            if kind == "merge":
                gate = MergeGate(task.id, task.role, waiting["branch"], waiting["diff"], now,
                                 waiting.get("commit", ""))
                self.s.merges[task.id] = gate
                self.publish(news.GateOpened(merge_gate_view(task, gate)))
            elif kind in ("judge", "owner"):
                self.s.holds[task.id] = Hold(task.id, task.role, kind, waiting["why"],
                                             waiting["line"], waiting["unmerged"], now,
                                             waiting.get("file", ""))
                self.publish(news.GateOpened({**task.as_dict(), "kind": kind,
                                        "diff": waiting.get("file", ""),
                                        "label": f"{kind} gate: {waiting['why']}"[:120],
                                        "created": now}))
            elif kind == "judging":
                self.s.verdicts[waiting["judge_task"]] = Judging(task.id, waiting["line"],
                                                                 waiting["unmerged"])
        if self.s.merges or self.s.holds or self.s.verdicts:
            self.event("isolation restored", merge_gates=list(self.s.merges),
                        holds=list(self.s.holds), judging=sorted(self.s.verdicts))
