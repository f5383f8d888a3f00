"""``choragos demo --dir DIR`` sets up a scratch repository: never in a
directory that holds something else (a project's .choragos.toml was
overwritten with the demo team, its files committed to)."""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.cli import _client, demo


def test_a_project_directory_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / ".choragos.toml").write_text("[[roles]]\nname = \"mine\"\n")
    (tmp_path / "app.py").write_text("mine\n")
    with pytest.raises(_client.Failure) as refused:
        demo.prepare(tmp_path)
    assert refused.value.code == _client.EXIT_USAGE
    assert refused.value.message.startswith(f"{tmp_path} is neither new, empty nor a demo's")
    assert refused.value.message.endswith("; nothing was changed")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".choragos.toml", "app.py"]
    assert (tmp_path / ".choragos.toml").read_text() == "[[roles]]\nname = \"mine\"\n"
    assert (tmp_path / "app.py").read_text() == "mine\n"


def test_a_file_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(_client.Failure):
        demo.prepare(tmp_path / "f")


@pytest.mark.parametrize("there", ["new", "empty"])
def test_a_new_or_empty_directory_or_the_demos_own_is_set_up(tmp_path: Path, there: str) -> None:
    workdir = tmp_path / "demo"
    if there == "empty":
        workdir.mkdir()
    assert demo.prepare(workdir) == workdir
    assert (workdir / ".choragos.toml").read_text().startswith(demo.DEMO_MARK)
    assert (workdir / ".git").is_dir()
    (workdir / ".choragos.toml").write_text(demo.team_file("/old/python"))
    assert demo.prepare(workdir) == workdir  # its own, again: the team file made anew
    assert "/old/python" not in (workdir / ".choragos.toml").read_text()


@pytest.mark.parametrize("runs_on", [True, False])
def test_after_a_detach_from_its_deck_the_demo_says_how_to_stop_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, runs_on: bool) -> None:
    from choragos.cli import attach

    monkeypatch.chdir(tmp_path)
    left = iter([True, runs_on])  # running before the attach; after it, running or ended
    monkeypatch.setattr(demo, "_running", lambda workdir: next(left))
    monkeypatch.setattr(attach, "run", lambda argv: _client.EXIT_OK)  # C-b d, or the end
    workdir = tmp_path / "demo"
    assert demo.run(["--dir", str(workdir)]) == _client.EXIT_OK
    said = capsys.readouterr().err
    assert (f"`cd {workdir} && choragos kill` stops it" in said) == runs_on, said
