"""The session's own /metrics, scraped by prometheus-client's parser, against a
real session: the numbers agree with ``choragos board`` and ``status``."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.integration.gatewayfakes import free_port
from tests.integration.harness import role_toml, scrape, value

pytestmark = pytest.mark.timeout(90)


def views(s) -> tuple[list, list]:
    board = json.loads(s.cli("board", "--json").stdout)["tasks"]
    status = json.loads(s.cli("status", "--json").stdout)["roles"]
    return ([(t["id"], t["role"], t["state"]) for t in board],
            [{"name": r["name"], "state": r["state"]} for r in status])


def settled(s, port: int) -> tuple | None:
    """A scrape taken while nothing moved: roles change state on their own
    (a report typed into the lead), so compare only a still moment.  Equal
    views before and after are not enough: the lead can turn working and
    idle again between them (a report typed in and answered), the scrape
    seeing it working -- so the scrape's role states must agree too, and a
    scrape that never does times the wait out."""
    before = views(s)
    samples = scrape(port)
    after = views(s)
    if before != after:
        return None
    if any(value(samples, "choragos_role_state", role=r["name"], state=r["state"]) != 1.0
           for r in after[1]):
        return None
    return (samples, *after)


def test_metrics_match_the_board_and_the_roster(serve) -> None:
    port = free_port()
    team = (role_toml("lead", start=True) + role_toml("coder", "--worker")
            + role_toml("release", "--worker", approve=True)
            + role_toml("flaky", "--exit-on", "tasks/T3.md", restart="on-failure")
            + f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    s = serve(team)
    s.wait_booted(["lead", "coder", "release", "flaky"])
    assert s.cli("delegate", "--to", "coder", "--task", "Fix it").returncode == 0
    assert s.cli("delegate", "--to", "release", "--task", "Tag it").returncode == 0
    assert s.cli("delegate", "--to", "flaky", "--task", "boom now").returncode == 0
    s.wait_event(lambda e: e["event"] == "role exited" and e.get("restarting"),
                 message="flaky to exit and restart")
    assert s.cli("gate", "approve", "T2").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == s.board()["T2"]["state"] == "done",
           20, "coder and release to finish")
    s.wait_booted(["flaky"])

    samples, board, status = s.wait(lambda: settled(s, port), 20, "a scrape between two "
                                    "equal answers of board and status")
    counts: dict[tuple[str, str], int] = {}
    for _, role, state in board:
        counts[(role, state)] = counts.get((role, state), 0) + 1
    shown = {(dict(labels)["role"], dict(labels)["state"]): v
             for (name, labels), v in samples.items() if name == "choragos_tasks"}
    assert shown == counts and counts[("coder", "done")] == 1
    for role in status:
        assert value(samples, "choragos_role_state", role=role["name"],
                     state=role["state"]) == 1.0
        assert sum(v for (name, labels), v in samples.items()
                   if name == "choragos_role_state" and dict(labels)["role"] == role["name"]) == 1
    assert value(samples, "choragos_session_up") == 1.0
    for role in ("coder", "release"):
        assert value(samples, "choragos_delegation_to_delivery_seconds_count", role=role) == 1
        assert value(samples, "choragos_delivery_to_work_done_seconds_count", role=role) == 1
    assert value(samples, "choragos_gate_wait_seconds_count", role="release",
                 decision="approved") == 1
    assert value(samples, "choragos_checkpoint_duration_seconds_count") == 3
    assert value(samples, "choragos_role_restarts_total", role="flaky") == 1
    assert value(samples, "choragos_role_restarts_total", role="coder") is None
    assert value(samples, "choragos_tokens_total", role="coder", direction="input") == 0
    events = [e["event"] for e in s.events()]
    assert "metrics on" in events


def test_metrics_are_off_unless_asked_for(serve) -> None:
    port = free_port()
    s = serve(role_toml("lead", start=True))
    s.wait_booted(["lead"])
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)
    assert "metrics on" not in [e["event"] for e in s.events()]


@pytest.mark.parametrize("listen", ["9464", "127.0.0.1:99999", "no host:1"])
def test_a_bad_listen_address_is_a_located_error(tmp_path, listen: str) -> None:
    from choragos.config.model import ConfigError, load_config

    path = tmp_path / "c.toml"
    path.write_text(role_toml("lead", start=True) + f'\n[metrics]\nlisten = "{listen}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path, tmp_path)
    assert any(error.startswith(f"{path}:metrics.listen: ") for error in caught.value.errors)
