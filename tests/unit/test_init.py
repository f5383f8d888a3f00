"""``choragos init``: every template loads cleanly; --auto detection; --force."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.cli import init
from choragos.config import templates
from choragos.config.model import CONFIG_NAME, load_config

_ALL_DETECTED = [None, *(templates.Detected(lang, marker) for lang in templates.LANGUAGES
                         for marker in lang.markers)]


def _label(detected: templates.Detected | None) -> str:
    return "generic" if detected is None else detected.marker


@pytest.mark.parametrize("template", list(templates.TEMPLATES))
@pytest.mark.parametrize("detected", _ALL_DETECTED, ids=_label)
def test_every_template_loads_without_errors_or_warnings(
        tmp_path: Path, template: str, detected: templates.Detected | None) -> None:
    (tmp_path / CONFIG_NAME).write_text(templates.render(template, detected))
    config = load_config(cwd=tmp_path)
    assert config.warnings == ()
    assert config.start_role.name == "orchestrator"
    if detected is not None:
        briefs = " ".join(role.prompt_template for role in config.workers)
        assert detected.language.test in briefs and detected.language.lint in briefs


@pytest.mark.parametrize(("template", "roles"), [
    ("starter", ["orchestrator", "coder", "reviewer"]),
    ("review", ["orchestrator", "reviewer", "auditor"]),
    ("claude-team", ["orchestrator", "coder", "reviewer", "release"]),
    ("mixed-team", ["orchestrator", "coder", "reviewer"]),
    ("vendor-mix", ["orchestrator", "coder", "reviewer"]),
])
def test_templates_hold_their_teams(tmp_path: Path, template: str, roles: list[str]) -> None:
    (tmp_path / CONFIG_NAME).write_text(templates.render(template))
    config = load_config(cwd=tmp_path)
    assert [role.name for role in config.roles] == roles


def test_the_commented_host_table_loads_once_uncommented(tmp_path: Path) -> None:
    text = templates.render("starter")
    table = text[text.index("# [hosts.gpu]"):].splitlines()[:4]
    uncommented = "\n".join(line[2:] for line in table)
    role = '[[roles]]\nname = "far"\ncommand = "claude"\nhost = "gpu"\n'
    (tmp_path / CONFIG_NAME).write_text(text + uncommented + "\n" + role)
    config = load_config(cwd=tmp_path)
    assert config.warnings == ()
    assert config.hosts["gpu"].ssh_args == ("-J", "jump")
    assert config.role("far").host == "gpu"


def test_review_crew_takes_no_checkpoints(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text(templates.render("review"))
    assert load_config(cwd=tmp_path).checkpoints.enabled is False


def test_claude_team_gates_release_and_mixed_team_routes_gemini(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text(templates.render("claude-team"))
    config = load_config(cwd=tmp_path)
    assert {role.command for role in config.roles} == {"claude"}
    assert config.role("release").approve is True
    (tmp_path / CONFIG_NAME).write_text(templates.render("mixed-team"))
    reviewer = load_config(cwd=tmp_path).role("reviewer")
    assert reviewer.command == "gemini"
    assert reviewer.env_allow and reviewer.base_url_env == ("GOOGLE_GEMINI_BASE_URL",)


def test_wrapped_brief_reads_as_one_sentence(tmp_path: Path) -> None:
    detected = templates.Detected(templates.LANGUAGES[0], "go.mod")
    (tmp_path / CONFIG_NAME).write_text(templates.render("starter", detected))
    brief = load_config(cwd=tmp_path).role("coder").prompt_template
    assert "  " not in brief and "\n" not in brief and not brief.endswith(" ")
    assert "`go test ./...` and `go vet ./...`" in brief


@pytest.mark.parametrize(("marker", "language"), [
    ("go.mod", "Go"), ("package.json", "Node.js"), ("Cargo.toml", "Rust"),
    ("pyproject.toml", "Python"), ("setup.py", "Python"),
])
def test_detect_names_the_language_and_marker(tmp_path: Path, marker: str,
                                              language: str) -> None:
    (tmp_path / marker).write_text("")
    found = templates.detect(tmp_path)
    assert found is not None
    assert (found.language.name, found.marker) == (language, marker)


def test_detect_finds_nothing_in_an_empty_directory(tmp_path: Path) -> None:
    assert templates.detect(tmp_path) is None


def test_detect_prefers_go_over_a_package_json_for_web_assets(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text("{}")
    (tmp_path / "go.mod").write_text("module x\n")
    assert templates.detect(tmp_path).marker == "go.mod"


def test_an_existing_file_is_kept_without_force(tmp_path: Path, monkeypatch,
                                               capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("# mine\n")
    assert init.run([]) == 1
    assert (tmp_path / CONFIG_NAME).read_text() == "# mine\n"
    err = capsys.readouterr().err
    assert "already exists" in err and "--force" in err


def test_force_replaces_an_existing_file(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("# mine\n")
    assert init.run(["--force", "--template", "review"]) == 0
    assert "--template review" in (tmp_path / CONFIG_NAME).read_text()
    assert not list(tmp_path.glob("*.partial"))
    assert "choragos doctor" in capsys.readouterr().out


def test_auto_without_a_marker_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert init.run(["--auto"]) == 0
    assert "briefs are generic" in capsys.readouterr().out
    assert load_config(cwd=tmp_path).warnings == ()


def _clean_env(home: Path) -> dict[str, str]:
    # Built from scratch: no credential variable can reach the child.
    return {"PATH": os.defpath, "HOME": str(home), "TERM": "xterm-256color", "LANG": "C.UTF-8"}


def test_init_as_a_real_command(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text("[package]\n")
    argv = [sys.executable, "-m", "choragos", "init", "--auto", "--template", "claude-team"]
    done = subprocess.run(argv, cwd=tmp_path, env=_clean_env(tmp_path), capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    # One line for the team file, one for the Claude seat settings written beside it.
    assert done.stdout.count("\n") == 2
    assert "wrote .claude/settings.json" in done.stdout
    assert "detected Rust from Cargo.toml" in done.stdout
    assert "cargo clippy" in (tmp_path / CONFIG_NAME).read_text()
    again = subprocess.run(argv, cwd=tmp_path, env=_clean_env(tmp_path), capture_output=True,
                           text=True, timeout=30, check=False)
    assert again.returncode == 1
    assert "already exists" in again.stderr
