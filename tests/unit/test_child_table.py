"""The session's tree as a table (actors/children.py): checked before anything
starts, built in order under real supervisors from fake factories."""

from __future__ import annotations

from collections.abc import Mapping

import pykka
import pytest

from choragos.actors.children import Child, build, check, nested
from choragos.actors.handle import Handle
from choragos.actors.supervisor import (
    TEMPORARY,
    StopAll,
    Supervisor,
    SupervisorState,
)
from tests.conftest import wait_until
from tests.unit.test_supervision import Add, Boom, Counter, Total
from tests.unit.test_supervisor_tree import Worker


class Recorder:
    """Fake factories: each records the handles it was given, in call order."""

    def __init__(self, top: pykka.ActorRef) -> None:
        self.top = top
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.counters: dict[str, Counter] = {}
        self.started: list[str] = []

    def factory(self, name: str, wanted: bool = True):
        def make(deps: Mapping[str, Handle]):
            self.calls.append((name, tuple(sorted(deps))))
            if not wanted:
                return None
            counter = self.counters[name] = Counter()
            top = self.top
            return lambda h: Worker.start(name, counter, top)
        return make

    def hook(self, name: str):
        return lambda handle: self.started.append(name)


@pytest.fixture
def top():
    ref = Supervisor.start(SupervisorState("session"))
    yield ref
    ref.ask(StopAll(), timeout=30)
    ref.stop()
    wait_until(lambda: not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()],
               timeout=10, message="every actor stopped")


def test_a_table_is_built_in_order_with_each_child_given_what_it_needs(top):
    fake = Recorder(top)
    table = (
        Child("core", fake.factory("core"), started=fake.hook("core")),
        Child("clocks", fake.factory("clocks"), needs=("core",), started=fake.hook("clocks")),
        Child("listener", fake.factory("listener"), needs=("core", "clocks")),
    )
    handles = build(table, top)
    assert fake.calls == [("core", ()), ("clocks", ("core",)), ("listener", ("clocks", "core"))]
    assert fake.started == ["core", "clocks"]
    assert list(handles) == ["core", "clocks", "listener"]
    assert list(top.proxy().children.get()) == ["core", "clocks", "listener"]
    handles["clocks"].tell(Add(3))
    assert handles["clocks"].ask(Total(), timeout=5) == 3


def test_a_child_its_factory_declines_is_left_out_and_its_dependents_get_no_handle(top):
    fake = Recorder(top)
    table = (
        Child("checkpointer", fake.factory("checkpointer", wanted=False),
              started=fake.hook("checkpointer")),
        Child("aftercare", fake.factory("aftercare"), needs=("checkpointer",)),
    )
    handles = build(table, top)
    assert list(handles) == ["aftercare"]
    assert fake.calls == [("checkpointer", ()), ("aftercare", ())]
    assert fake.started == []  # nothing started, nothing to hook


def test_a_nested_supervisor_starts_its_own_table_under_it(top):
    fake = Recorder(top)
    tree = SupervisorState("builtin-gateway", intensity=0, period=60)
    table = (
        Child("core", fake.factory("core")),
        nested("builtin-gateway", tree, top, None, restart=TEMPORARY,
               children=(Child("gateway-server", fake.factory("server"),
                               needs=("core", "builtin-gateway")),),
               started=fake.hook("builtin-gateway")),
    )
    handles = build(table, top)
    assert list(handles) == ["core", "builtin-gateway", "gateway-server"]
    assert fake.calls[-1] == ("server", ("builtin-gateway", "core"))
    assert list(tree.children) == ["gateway-server"]  # under the nested supervisor
    assert fake.started == ["builtin-gateway"]  # once its own children run


def test_a_nested_supervisor_not_wanted_starts_nothing(top):
    fake = Recorder(top)
    tree = SupervisorState("builtin-gateway")
    table = (nested("builtin-gateway", tree, top, None, wanted=False,
                    children=(Child("gateway-server", fake.factory("server")),)),)
    assert build(table, top) == {}
    assert fake.calls == [] and tree.children == {}


def test_a_child_restarted_by_its_supervisor_keeps_the_tables_restart_type(top):
    fake = Recorder(top)
    handles = build((Child("once", fake.factory("once"), restart=TEMPORARY),), top)
    handles["once"].tell(Boom())
    wait_until(lambda: handles["once"].closed, 10, message="the temporary child given up")
    assert fake.counters["once"].starts == 1


@pytest.mark.parametrize(("table", "error"), [
    ((Child("core", lambda deps: None), Child("core", lambda deps: None)),
     "the child 'core' is listed twice"),
    ((Child("listener", lambda deps: None, needs=("core",)), Child("core", lambda deps: None)),
     "the child 'listener' needs core, which is not listed before it"),
    ((nested("roles", SupervisorState("roles"), None, None,
             children=(Child("role:a", lambda deps: None, needs=("reload",)),)),
      Child("reload", lambda deps: None)),
     "the child 'role:a' needs reload"),
])
def test_a_table_that_does_not_hold_together_is_refused_before_anything_starts(
        top, table, error):
    fake = Recorder(top)
    table = (Child("first", fake.factory("first")), *table)
    with pytest.raises(ValueError, match=error):
        build(table, top)
    assert fake.calls == []
    assert top.proxy().children.get() == {}


def test_the_sessions_own_table_holds_together(tmp_path):
    """Every child the session lists needs only children listed before it."""
    from choragos.actors.session import Session, SessionOptions
    from choragos.config.model import load_config

    session = Session(load_config(None, tmp_path),
                      SessionOptions(workdir=tmp_path, socket=tmp_path / "s.sock"))
    try:
        table, rest = session.children(), session.rest()
    finally:
        session.events.close()
    check(table)
    check((*table, *rest))  # the rest needs only children the start made
    assert [child.name for child in table] == [
        "core", "notifier", "checkpointer", "builtin-gateway", "roles", "gateway", "listener",
        "web"]
    # Started after the first frame (serve) or at the end of the start: none
    # of them answers anyone.
    assert [child.name for child in rest] == ["clocks", "aftercare", "reload"]


@pytest.mark.parametrize(("extra", "first"), [
    ("", False),
    ('[[roles]]\nname = "far"\ncommand = "sleep"\nhost = "box"\n\n[hosts.box]\nssh = "me@box"\n',
     True)])
def test_the_briefs_are_written_before_the_spawns_only_with_a_remote_role(tmp_path, extra, first):
    """An agent here reads its brief once booted, so the briefs are written
    after the spawns; a remote role's seat sends its brief as it is
    prepared, before its actor starts, so then they come first."""
    from choragos.actors.session import Session, SessionOptions
    from choragos.config.model import load_config

    (tmp_path / ".choragos.toml").write_text(
        '[[roles]]\nname = "lead"\ncommand = "sleep"\nstart = true\n\n' + extra)
    session = Session(load_config(tmp_path / ".choragos.toml", tmp_path),
                      SessionOptions(workdir=tmp_path, socket=tmp_path / "s.sock"))
    try:
        assert session._briefs_first() is first
    finally:
        session.events.close()
