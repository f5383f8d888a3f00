"""The record of the config a session last ran with, and the start's check against it."""

from __future__ import annotations

from pathlib import Path

from choragos.config.model import builtin_config, load_config
from choragos.session import confirmed

TEAM = """
[[roles]]
name = "lead"
command = "sh"
start = true

[[roles]]
name = "worker"
command = "sh"
approve = {approve}
"""


def write(workdir: Path, approve: bool) -> object:
    (workdir / ".choragos.toml").write_text(TEAM.format(approve=str(approve).lower()))
    return load_config(None, workdir, env={})


def test_a_first_start_has_nothing_to_compare_and_records(tmp_path: Path) -> None:
    config = write(tmp_path, True)
    checked = confirmed.check(config, tmp_path)
    assert (checked.loosened, checked.tightened, checked.unreadable) == ((), (), None)
    assert confirmed.record(tmp_path, config, checked.text) is None
    assert "approve = true" in confirmed.record_path(tmp_path).read_text()
    assert not confirmed.record_path(tmp_path).with_name("confirmed.toml.new").exists()


def test_a_loosening_and_a_tightening_against_the_record(tmp_path: Path) -> None:
    assert confirmed.record(tmp_path, write(tmp_path, True)) is None
    loose = confirmed.check(write(tmp_path, False), tmp_path)
    assert loose.loosened == ("worker approve true -> false",) and loose.tightened == ()
    said = confirmed.refusal(write(tmp_path, False), loose.loosened, "serve", ["--resume"])
    assert "run `choragos serve --resume --loosen`: worker approve true -> false" in said
    assert confirmed.record(tmp_path, write(tmp_path, False)) is None
    tight = confirmed.check(write(tmp_path, True), tmp_path)
    assert tight.tightened == ("worker approve false -> true",) and tight.loosened == ()
    assert tight.notices(confirmed=False) == [
        "the config now tightens what only you decide: worker approve false -> true"]


def test_an_unreadable_record_starts_as_before_and_says_so(tmp_path: Path) -> None:
    config = write(tmp_path, False)
    confirmed.record_path(tmp_path).parent.mkdir()
    confirmed.record_path(tmp_path).write_text("[[roles]\nbroken")
    checked = confirmed.check(config, tmp_path)
    assert checked.loosened == () and checked.unreadable
    assert "could not be read" in checked.notices(confirmed=False)[0]
    assert confirmed.record(tmp_path, config, checked.text) is None
    assert confirmed.check(config, tmp_path).unreadable is None


def test_a_text_that_is_not_what_the_session_runs_is_not_recorded(tmp_path: Path) -> None:
    gated = write(tmp_path, True)
    assert confirmed.record(tmp_path, gated) is None
    ungated_text = TEAM.format(approve="false")
    # The file changed between its load and the record: the record stays as it was.
    problem = confirmed.record(tmp_path, gated, ungated_text)
    assert problem and "not recorded" in problem
    assert "approve = true" in confirmed.record_path(tmp_path).read_text()


def test_the_built_in_team_has_no_file_to_record(tmp_path: Path) -> None:
    assert confirmed.check(builtin_config(), tmp_path) == confirmed.StartCheck()
    assert confirmed.record(tmp_path, builtin_config()) is None
    assert not confirmed.record_path(tmp_path).exists()
