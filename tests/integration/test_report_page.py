"""``choragos report --html``: the page, drawn by a real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.board import reportpage, timeline
from tests.integration.harness import base_env
from tests.pngread import read_png

T0 = 1_780_000_000.0
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def ev(t: float, event: str, **fields: object) -> dict:
    return {"t": T0 + t, "ts": "-", "event": event, **fields}


RECORDS = sorted([
    ev(0, "deck starting", dir="/proj", pid=1, mode="headless"),
    ev(1, "role state", role="lead", state="idle", was="booting"),
    ev(2, "role state", role="coder", state="idle", was="booting"),
    ev(2, "role state", role="reviewer", state="idle", was="booting"),
    ev(3, "role state", role="tester", state="idle", was="booting"),
    ev(10, "delegate", task="T1", role="coder", label="parser"),
    ev(12, "delivered", task="T1", role="coder"),
    ev(100, "work-done", task="T1", role="coder", summary="ok", done=True, note=None),
    ev(20, "delegate", task="T2", role="reviewer", label="review"),
    ev(20, "delegate gated", task="T2", role="reviewer", label="review"),
    ev(80, "gate approved", task="T2", role="reviewer"),
    ev(82, "delivered", task="T2", role="reviewer"),
    ev(150, "task failed", task="T2", role="reviewer", reason="exited"),
    ev(150, "role exited", role="reviewer", status="exit 1", restarting=True),
    ev(160, "delegate", task="T3", role="coder", label="more"),
    ev(161, "delivered", task="T3", role="coder"),
    ev(200, "timeout", task="T3", role="coder", seconds=39),
    ev(30, "delegate", task="T4", role="tester", label="run the suite"),
    ev(31, "delivered", task="T4", role="tester"),
    ev(100, "delegate", task="T5", role="lead", label="ask the user"),
    ev(101, "delivered", task="T5", role="lead"),
    ev(180, "work-done", task="T5", role="lead", summary="needs a key", done=False,
       outcome="blocked", note=None),
    ev(210, "role state", role="lead", state="paused", was="idle"),
    ev(250, "role state", role="lead", state="idle", was="paused"),
    ev(60, "tokens", role="coder", model="opus", input=100_000, output=5_000,
       cache_read=0, cache_creation=0),
    ev(180, "tokens", role="coder", model="opus", input=300_000, output=20_000,
       cache_read=0, cache_creation=0),
    ev(300, "deck stopped", pid=1),
], key=lambda r: r["t"])

PRICING = ('[[roles]]\nname = "lead"\ncommand = "sh"\nstart = true\n\n'
           '[pricing."opus"]\ninput = 15.0\noutput = 75.0\n')


def write_page(tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    (tmp / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    (tmp / "c.toml").write_text(PRICING)
    return subprocess.run([sys.executable, "-m", "choragos", "report", "events.jsonl",
                           "--config", "c.toml", "--html", "page.html", *extra], cwd=tmp,
                          env=base_env(), capture_output=True, text=True, timeout=30)


def test_the_page_is_self_contained_and_escapes_the_log(short_tmp: Path) -> None:
    done = write_page(short_tmp)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "wrote page.html"
    page = (short_tmp / "page.html").read_text()
    # nothing to fetch: no scripts, links, images or imports
    assert not re.search(r"<script|<link|<img|src=|href=|url\(|@import", page)
    assert [u for u in re.findall(r"https?://[^\"' ]+", page)
            if u != "http://www.w3.org/2000/svg"] == []
    for text in ("$6.00", "320.0k", "gate 1m", "T3 timed out after 39s",
                 "restarted: exit 1", "paused 40s"):
        assert text in page, text
    lines = [*RECORDS[:-1], ev(290, "delegate", task="T9", role="<b>evil</b>", label="x")]
    (short_tmp / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    done = subprocess.run([sys.executable, "-m", "choragos", "report", "events.jsonl",
                           "--html", "evil.html"], cwd=short_tmp, env=base_env(),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "<b>evil" not in (short_tmp / "evil.html").read_text()


def test_html_and_json_together_print_the_envelope(short_tmp: Path) -> None:
    done = write_page(short_tmp, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verb"] == "report"
    assert (short_tmp / "page.html").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed here "
                    "(.ci/run installs it, so CI always runs this)")
def test_chromium_draws_a_lane_per_role_and_a_bar_per_task(short_tmp: Path) -> None:
    assert write_page(short_tmp).returncode == 0
    shot = short_tmp / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={short_tmp / 'profile'}", "--hide-scrollbars",
                    "--force-device-scale-factor=1", f"--screenshot={shot}",
                    "--window-size=1000,420", (short_tmp / "page.html").as_uri()],
                   env={**base_env(), "HOME": str(short_tmp)}, capture_output=True,
                   timeout=90, check=True)
    image = read_png(shot)
    assert (image.width, image.height) == (1000, 420)
    line = timeline.build(RECORDS, ["lead", "coder", "reviewer", "tester"], lambda m: None)
    assert line.roles == ["lead", "coder", "reviewer", "tester"]

    def at(t: float, lane: int, dy: float = reportpage.BAR_TOP + reportpage.BAR_HEIGHT / 2):
        x = round(reportpage.x_of(line, T0 + t))
        return image.pixel(x, round(reportpage.HEADER + reportpage.lane_top(lane) + dy))

    colours = reportpage.COLOURS
    expected = [(50, 1, colours["done"]),        # T1: coder, 12 -> 100
                (250, 1, colours["timed out"]),  # T3: coder, 161 -> end, timed out at 200
                (120, 2, colours["failed"]),     # T2: reviewer, 82 -> 150, failed
                (100, 3, colours["open"]),       # T4: tester, never reported
                (50, 2, reportpage.GATE),        # T2 waited at the gate 20 -> 80
                (140, 0, colours["blocked"])]    # T5: lead, 101 -> 180, reported --blocked
    for t, lane, colour in expected:
        assert close(at(t, lane), colour), (t, lane, at(t, lane), colour)
    # where nothing happens, the lane's own background shows
    assert close(at(5, 1), "#f6f8fa") and close(at(195, 0), "#ffffff")
    assert close(at(230, 0), "#ffffff") is False  # the lead's pause is shaded


def close(rgb: tuple[int, int, int], colour: str, slack: int = 8) -> bool:
    want = bytes.fromhex(colour.lstrip("#"))
    return all(abs(a - b) <= slack for a, b in zip(rgb, want, strict=True))
