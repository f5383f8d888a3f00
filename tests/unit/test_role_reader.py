"""A role's PTY reader outlives a given-up role actor quietly: the session
stops the process itself, and the reader must keep draining the PTY rather
than die on the refusal of every chunk it reads."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from choragos.actors import messages as m
from choragos.actors import roleio
from choragos.actors.handle import Handle
from choragos.actors.role import RoleActor


def test_output_and_exit_for_a_given_up_role_are_dropped_without_raising(caplog):
    me = Handle("role:coder")
    me.close("the roles supervisor gave up")
    role = SimpleNamespace(me=me)
    with caplog.at_level(logging.WARNING):
        for _ in range(100):
            RoleActor._from_reader(role, roleio.OutputSeen(1))
        RoleActor._from_reader(role, m.Exited(1, None))
    # Dropped before the handle: no refusal logged per chunk of a flood.
    assert [r for r in caplog.records if "not delivered" in r.getMessage()] == []


def test_a_handle_closed_during_the_tell_is_not_a_crash_of_the_reader():
    class ClosesOnTell(Handle):
        def tell(self, message):  # given up between the check and the tell
            self.close("given up")
            super().tell(message)

    RoleActor._from_reader(SimpleNamespace(me=ClosesOnTell("role:coder")),
                           roleio.OutputSeen(1))
