"""The user's own configuration, merged under each project's."""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.cli import doctor
from choragos.config import userconfig
from choragos.config.model import CONFIG_NAME, ConfigError, load_config

LEAD = '[[roles]]\nname = "lead"\ncommand = "claude"\nstart = true\n'


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "xdg" / "choragos").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}


def user_file(env: dict[str, str], text: str) -> Path:
    path = Path(env["XDG_CONFIG_HOME"]) / "choragos" / "config.toml"
    path.write_text(text)
    return path


def test_the_file_lives_under_xdg_config_home_else_under_home() -> None:
    assert userconfig.path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/choragos/config.toml")
    assert userconfig.path({"HOME": "/h"}) == Path("/h/.config/choragos/config.toml")
    # a relative XDG value is ignored, as the XDG rules say
    assert userconfig.path({"XDG_CONFIG_HOME": "rel", "HOME": "/h"}) == Path(
        "/h/.config/choragos/config.toml")


def test_the_project_wins_key_by_key(home: dict[str, str], tmp_path: Path) -> None:
    path = user_file(home, '[keys]\nprefix = "ctrl+a"\nzoom = "Z"\n'
                           '[ui]\nbell = false\non_gate = "notify-send gate"\n')
    work = tmp_path / "work"
    (work / CONFIG_NAME).write_text(LEAD + '[keys]\nzoom = "z"\n[ui]\non_gate = "echo here"\n')
    config = load_config(cwd=work, env=home)
    assert config.keys.prefix == "ctrl+a"            # only the user set it
    assert config.keys.zoom == "z"                   # both did: the project's
    assert config.ui.bell is False
    assert config.ui.on_gate == "echo here"
    assert config.user_source == path and config.source == work / CONFIG_NAME


def test_notify_is_the_users_too(home: dict[str, str], tmp_path: Path) -> None:
    user_file(home, '[notify]\nurl = "https://ntfy.example/me"\nevery = "1m"\n')
    (tmp_path / "work" / CONFIG_NAME).write_text(LEAD + '[notify]\nevery = "30s"\n')
    config = load_config(cwd=tmp_path / "work", env=home)
    assert (config.notify.url, config.notify.every) == ("https://ntfy.example/me", 30.0)


def test_the_built_in_team_takes_the_users_settings_too(home: dict[str, str],
                                                        tmp_path: Path) -> None:
    user_file(home, '[keys]\nprefix = "ctrl+t"\n')
    config = load_config(cwd=tmp_path / "work", env=home)
    assert config.source is None and config.keys.prefix == "ctrl+t"
    assert [r.name for r in config.roles][:2] == ["orchestrator", "coder"]


def test_a_team_in_the_user_file_is_an_error_naming_that_file(home: dict[str, str],
                                                              tmp_path: Path) -> None:
    path = user_file(home, LEAD + '[keys]\nprefix = "x"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=tmp_path / "work", env=home)
    assert caught.value.errors == [
        f"{path}:roles: only [keys], [ui] and [notify] belong in the user configuration; the "
        f"team and the rest go in a project's {CONFIG_NAME}",
        f'{path}:keys.prefix: "x": the prefix must be ctrl+<letter> or f1..f12, so ordinary '
        "typing still reaches the agents"]


def test_an_unknown_user_key_warns_once_under_the_users_file(home: dict[str, str],
                                                             tmp_path: Path) -> None:
    path = user_file(home, "[ui]\nbel = false\n")
    (tmp_path / "work" / CONFIG_NAME).write_text(LEAD)
    config = load_config(cwd=tmp_path / "work", env=home)
    assert config.warnings == (f'{path}:ui.bel: unknown key, ignored (did you mean "bell"?)',)


def test_doctor_names_the_files_it_read(home: dict[str, str], tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / CONFIG_NAME).write_text(LEAD)
    env = {**home, "PATH": "/nonexistent", "XDG_RUNTIME_DIR": str(tmp_path)}
    without = [c.message for c in doctor.diagnose(work, env) if c.message.startswith("read ")]
    assert without == [f"read {work / CONFIG_NAME}; no user configuration at "
                       f"{userconfig.path(home)} (optional: [keys], [ui], [notify] for every "
                       "project)"]
    path = user_file(home, "[ui]\nbell = false\n")
    found = [c.message for c in doctor.diagnose(work, env) if c.message.startswith("read ")]
    assert found == [f"read {work / CONFIG_NAME}, {path}; your own settings ([keys], [ui], "
                     f"[notify]) from {path}, under the project's"]


def test_a_user_file_that_cannot_be_looked_at_is_an_error_not_a_traceback(
        tmp_path: Path) -> None:
    # A name too long to stat (as a folder on the way that cannot be searched):
    # the loader raised OSError before, out of every verb that loads the config.
    env = {"XDG_CONFIG_HOME": str(tmp_path / ("x" * 300)), "HOME": str(tmp_path)}
    with pytest.raises(ConfigError) as refused:
        load_config(cwd=tmp_path, env=env)
    assert refused.value.errors == [f"{userconfig.path(env)}: cannot read: File name too long"]


def test_a_folder_where_the_user_file_goes_is_not_taken_for_no_file(
        home: dict[str, str], tmp_path: Path) -> None:
    (Path(home["XDG_CONFIG_HOME"]) / "choragos" / "config.toml").mkdir()
    with pytest.raises(ConfigError, match=r"config\.toml: not a file; the user configuration "
                                          r"is a TOML file"):
        load_config(cwd=tmp_path / "work", env=home)


def test_escapes_in_the_user_file_s_path_are_shown_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "a\x1b]0;x\x07"
    (folder / "choragos").mkdir(parents=True)
    (folder / "choragos" / "config.toml").write_text("[ui\n")
    with pytest.raises(ConfigError) as refused:
        load_config(cwd=tmp_path, env={"XDG_CONFIG_HOME": str(folder)})
    assert "\x1b" not in str(refused.value) and "\x07" not in str(refused.value)
    assert "a\\x1b]0;x\\x07/choragos/config.toml:1: invalid TOML" in str(refused.value)


def test_a_mistyped_section_names_the_nearest_one(home: dict[str, str], tmp_path: Path) -> None:
    user_file(home, '[kyes]\nzoom = "Z"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(cwd=tmp_path / "work", env=home)
    assert "kyes: only [keys], [ui] and [notify] belong in the user configuration (did you " \
           "mean [keys]?); the team" in refused.value.errors[0]
