"""Seat setup: the project settings `choragos init` writes, and doctor's seat checks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from choragos.agents import seatsetup
from choragos.cli import init
from choragos.config import templates
from choragos.config.model import CONFIG_NAME, RoleSpec
from choragos.roles.seatchecks import FAIL, OK, WARN, seat_findings


def role(command: str, *args: str, agent: str = "") -> RoleSpec:
    return RoleSpec(name=f"r-{command}", command=command, args=args, agent=agent)


def test_write_for_writes_each_clis_settings_once(tmp_path: Path) -> None:
    first = seatsetup.write_for(tmp_path, ["claude", "gemini", "codex", "claude"])
    assert [w.path.relative_to(tmp_path) for w in first] == [seatsetup.CLAUDE_SETTINGS,
                                                             seatsetup.GEMINI_SETTINGS]
    assert all(w.changed for w in first)
    claude = json.loads((tmp_path / seatsetup.CLAUDE_SETTINGS).read_text())
    assert claude["permissions"]["allow"] == list(seatsetup.CLAUDE_RULES)
    gemini = json.loads((tmp_path / seatsetup.GEMINI_SETTINGS).read_text())
    assert gemini["policyPaths"] == [str(seatsetup.GEMINI_POLICY)]
    assert gemini["context"]["fileFiltering"]["respectGitIgnore"] is False
    policy = (tmp_path / seatsetup.GEMINI_POLICY).read_text()
    assert 'commandPrefix = ["choragos delegate", "choragos work-done"]' in policy
    assert not any(w.changed for w in seatsetup.write_for(tmp_path, ["claude", "gemini"]))
    assert seatsetup.claude_rules_missing(tmp_path) == []
    assert seatsetup.gemini_rules_missing(tmp_path) == []


def test_existing_settings_are_kept(tmp_path: Path) -> None:
    path = tmp_path / seatsetup.CLAUDE_SETTINGS
    path.parent.mkdir()
    path.write_text(json.dumps({"model": "x", "permissions": {"allow": ["Read(./**)"],
                                                              "deny": ["Bash(rm:*)"]}}))
    seatsetup.write_claude(tmp_path)
    data = json.loads(path.read_text())
    assert data["model"] == "x" and data["permissions"]["deny"] == ["Bash(rm:*)"]
    assert data["permissions"]["allow"] == ["Read(./**)", *seatsetup.CLAUDE_RULES]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"permissions": []}',
                                  '{"permissions": {"allow": "Bash"}}'])
def test_a_broken_settings_file_is_refused_and_left_alone(tmp_path: Path, text: str) -> None:
    path = tmp_path / seatsetup.CLAUDE_SETTINGS
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ValueError, match="fix it by hand"):
        seatsetup.write_claude(tmp_path)
    assert path.read_text() == text


def test_codex_args_missing_names_each_override() -> None:
    assert seatsetup.codex_args_missing(seatsetup.CODEX_ARGS) == []
    assert seatsetup.codex_args_missing(("-c", "allow_login_shell=false")) == [
        "sandbox_workspace_write.network_access=true", "check_for_update_on_startup=false"]


def test_init_writes_the_seats_of_its_template(tmp_path: Path, monkeypatch,
                                               capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert init.run(["--template", "vendor-mix"]) == 0
    out = capsys.readouterr().out
    assert "wrote .claude/settings.json" in out and "wrote .gemini/settings.json" in out
    assert seatsetup.gemini_rules_missing(tmp_path) == []
    assert not list(Path(os.environ.get("HOME", "/nonexistent")).glob("does-not-matter"))
    # The Codex role of the template already carries its overrides.
    assert init.run(["--seats"]) == 0
    assert "already in place: .claude/settings.json" in capsys.readouterr().out


def test_init_seats_names_the_codex_args_a_role_lacks(tmp_path: Path, monkeypatch,
                                                      capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / CONFIG_NAME).write_text(
        '[[roles]]\nname = "lead"\ncommand = "claude"\nstart = true\n'
        '[[roles]]\nname = "coder"\ncommand = "npx"\nargs = ["@openai/codex"]\n')
    assert init.run(["--seats"]) == 1
    out = capsys.readouterr().out
    assert 'role coder: add the Codex overrides to its args in .choragos.toml: args = ' \
           '["@openai/codex", "-c", "sandbox_workspace_write.network_access=true"' in out
    assert (tmp_path / seatsetup.CLAUDE_SETTINGS).exists()
    assert not (tmp_path / seatsetup.GEMINI_SETTINGS).exists()


def test_init_seats_refuses_a_config_that_does_not_load(tmp_path: Path, monkeypatch,
                                                        capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / CONFIG_NAME).write_text('[[roles]]\nname = 5\n')
    assert init.run(["--seats"]) == 2  # a config that does not load: a usage error
    assert "does not load" in capsys.readouterr().err
    assert not (tmp_path / ".claude").exists()


# -- doctor's seat checks -----------------------------------------------------------------


def levels(findings: list[tuple[str, str]], needle: str) -> list[str]:
    return [level for level, message in findings if needle in message]


def test_seat_checks_fail_a_codex_role_without_its_overrides(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "PATH": "/nonexistent"}
    bare = seat_findings(tmp_path, (role("codex"),), env)
    fail = next(m for level, m in bare if level == FAIL)
    assert 'add to the role\'s args: ["-c", "sandbox_workspace_write.network_access=true"' \
        in fail
    good = seat_findings(tmp_path, (role("codex", *seatsetup.CODEX_ARGS),), env)
    assert levels(good, "Codex overrides") == [OK]
    assert levels(good, "has not trusted") == [WARN] and levels(good, "credentials") == [WARN]


def test_seat_checks_follow_trust_auth_and_rules(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (home / ".gemini").mkdir(parents=True)
    (home / ".codex").mkdir()
    env = {"HOME": str(home), "PATH": "/nonexistent", "OPENAI_API_KEY": "sk-x",
           "ANTHROPIC_API_KEY": "sk-ant-x"}
    roles = (role("claude"), role("gemini"), role("codex", *seatsetup.CODEX_ARGS))
    before = seat_findings(work, roles, env)
    assert levels(before, " lack") == [WARN, WARN]
    assert all("choragos init --seats" in m for _, m in before if " lack" in m)
    seatsetup.write_for(work, ["claude", "gemini"])
    (home / ".claude.json").write_text(json.dumps(
        {"projects": {str(work.resolve()): {"hasTrustDialogAccepted": True}},
         "customApiKeyResponses": {"approved": ["sk-ant-x"], "rejected": []}}))
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(tmp_path): "TRUST_PARENT"}))
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    (home / ".codex" / "config.toml").write_text(
        f'[projects."{work.resolve()}"]\ntrust_level = "trusted"\n')
    after = seat_findings(work, roles, env)
    assert [level for level, _ in after].count(OK) == len(after), after
    assert levels(after, "signs in with gemini-api-key") == [OK]


def test_seat_checks_warn_of_claudes_question_about_an_unapproved_api_key(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    key = "sk-ant-" + "k" * 30
    env = {"HOME": str(home), "PATH": "/nonexistent", "ANTHROPIC_API_KEY": key}

    def said(answers: dict) -> list[str]:
        (home / ".claude.json").write_text(json.dumps({"customApiKeyResponses": answers}))
        return [m for level, m in seat_findings(tmp_path, (role("claude"),), env)
                if "this ANTHROPIC_API_KEY" in m and level == WARN]

    asked = said({"approved": [], "rejected": []})
    assert len(asked) == 1 and "Do you want to use this API key?" in asked[0]
    assert "answer Yes" in asked[0]
    assert said({"approved": [key[-20:]], "rejected": []}) == []
    assert "told not to use" in said({"approved": [], "rejected": [key[-20:]]})[0]
    del env["ANTHROPIC_API_KEY"]  # signed in another way: no question about a key
    assert said({}) == []


def test_seat_checks_report_the_installed_version(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    program = bindir / "gemini"
    program.write_text("#!/bin/sh\necho 0.61.0\n")
    program.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    findings = seat_findings(work, (role("gemini"),), {"PATH": str(bindir),
                                                        "HOME": str(tmp_path)})
    assert (OK, "role r-gemini: gemini seat, 0.61.0") in findings
    # A program inside the workspace, where agents write, is never run.
    findings = seat_findings(tmp_path, (role("gemini"),), {"PATH": str(bindir),
                                                            "HOME": str(tmp_path)})
    assert not [message for _, message in findings if "0.61.0" in message]


def test_unknown_programs_get_no_seat_checks(tmp_path: Path) -> None:
    assert seat_findings(tmp_path, (role("python3"),), {"PATH": "/usr/bin"}) == []
    assert templates.TEMPLATES["vendor-mix"]
