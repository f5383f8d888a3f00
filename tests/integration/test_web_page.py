"""The web view's page in real headless Chromium (Debian's, driven by Selenium
through Debian's chromedriver), against a real session: the crew and a
waiting gate drawn, the approve button on screen at a phone's and a
desktop's size, a click that delivers the task, a board that follows the
session without a reload."""

from __future__ import annotations

import pytest

from tests.integration import browser
from tests.integration.harness import role_toml
from tests.integration.webclient import WEB, Web
from tests.pngread import read_png

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not browser.available(), reason="chromium, chromedriver or selenium "
                       "is not installed here (.ci/run installs them, so CI always runs this)"),
]

TEAM = (role_toml("orchestrator", start=True) + role_toml("coder", approve=True)
        + role_toml("writer") + WEB)
APPROVE_LIGHT, APPROVE_DARK = "#1a7f37", "#3fb950"  # app.css: --ok


def text_of(driver, css: str) -> str:
    # Read in the page in one step: the live board redraws its rows, and an
    # element looked up first may be gone by the time its text is asked for.
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';",
        css) or ""


def approve_in_view(driver) -> dict:
    """The approve button's box and whether all of it lies inside the viewport."""
    return driver.execute_script("""
        const b = document.querySelector('#gate-T1 button.approve');
        if (!b) return null;
        const r = b.getBoundingClientRect();
        return {x: r.x, y: r.y, w: r.width, h: r.height, vw: innerWidth, vh: innerHeight,
                inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth
                        && r.bottom <= innerHeight && r.width > 0 && r.height > 0};
    """)


def close(rgb: tuple[int, int, int], colour: str, slack: int = 10) -> bool:
    want = bytes.fromhex(colour.lstrip("#"))
    return all(abs(a - b) <= slack for a, b in zip(rgb, want, strict=True))


def check_shot(driver, path, width: int, height: int, colour: str) -> None:
    """The screenshot is the viewport, and the approve button shows in it, in its colour."""
    box = approve_in_view(driver)
    assert box is not None and box["inside"], box
    assert (box["vw"], box["vh"]) == (width, height), box
    assert driver.save_screenshot(str(path))
    image = read_png(path)
    assert (image.width, image.height) == (width, height)
    # A point inside the button, clear of its label's glyphs: its fill.
    pixel = image.pixel(round(box["x"] + 4), round(box["y"] + box["h"] / 2))
    assert close(pixel, colour), (pixel, colour, box)


def test_the_page_approves_a_gate_and_follows_the_board_live(serve, short_tmp):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder", "writer"])
    web = Web(s)
    driver = browser.start(short_tmp / "profile")
    try:
        driver.get(web.url)
        assert "token=" not in driver.current_url  # signed in, the token dropped from the URL
        s.wait(lambda: text_of(driver, "#conn") == "live", 15, "the page's event stream")
        s.wait(lambda: "coder" in text_of(driver, "#role-coder"), 10, "the crew drawn")
        assert "writer" in text_of(driver, "#crew")
        driver.execute_script("window.stillThisPage = true")

        assert s.cli("delegate", "--to", "coder", "--task", "release the kraken").returncode == 0
        s.wait(lambda: "release the kraken" in text_of(driver, "#gate-T1"), 10,
               "the gate drawn, live")
        assert "T1" in text_of(driver, "#task-T1") and "gated" in text_of(driver, "#task-T1")

        browser.viewport(driver, 375, 812, mobile=True)
        browser.dark(driver, False)
        check_shot(driver, short_tmp / "phone.png", 375, 812, APPROVE_LIGHT)
        browser.viewport(driver, 1400, 900)
        browser.dark(driver, True)
        s.wait(lambda: driver.execute_script(
            "return getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)",
            5, "the dark scheme")
        check_shot(driver, short_tmp / "desktop.png", 1400, 900, APPROVE_DARK)

        driver.find_element("css selector", "#gate-T1 button.approve").click()
        s.wait(lambda: any(".choragos/tasks/T1.md" in line for line in s.submitted("coder")),
               15, "T1 typed into the coder")
        s.wait(lambda: "delivered" in text_of(driver, "#task-T1"), 10, "the board says delivered")
        s.wait(lambda: not driver.find_elements("css selector", "#gate-T1"), 5, "the gate gone")

        assert s.cli("delegate", "--to", "writer", "--task", "write it down").returncode == 0
        s.wait(lambda: "delivered" in text_of(driver, "#task-T2"), 15, "T2 on the board, live")
        # A task still queued (its role paused) is taken back from the board.
        assert s.cli("pause", "writer").returncode == 0
        assert s.cli("delegate", "--to", "writer", "--task", "never mind").returncode == 0
        s.wait(lambda: "queued" in text_of(driver, "#task-T3"), 10, "T3 queued, live")
        driver.find_element("css selector", "#task-T3").click()
        driver.execute_script("window.confirm = () => true")
        driver.find_element("css selector", "#task-T3 button[data-cancel]").click()
        s.wait(lambda: "rejected" in text_of(driver, "#task-T3"), 10, "T3 cancelled, live")
        assert s.board()["T3"]["note"] == ("cancelled by the operator: the operator cancelled "
                                           "it in the web view.")
        assert driver.execute_script("return window.stillThisPage === true")  # no reload
        logs = driver.get_log("browser") if hasattr(driver, "get_log") else []
        assert not [entry for entry in logs if entry.get("level") == "SEVERE"], logs
    finally:
        driver.quit()


def test_a_question_is_answered_by_a_click_on_its_option(serve, short_tmp):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--menu", "New task")
              + WEB)
    s.wait_booted(["coder"])
    web = Web(s)
    driver = browser.start(short_tmp / "profile")
    try:
        driver.get(web.url)
        s.wait(lambda: text_of(driver, "#conn") == "live", 15, "the page's event stream")
        s.cli("delegate", "--to", "coder", "--task", "needs a yes")
        s.wait(lambda: "Do you want to proceed?" in text_of(driver, "#question-coder"), 15,
               "the question drawn with its screen")
        # The whole pane is there before answering: its top a tap away, with a sign.
        assert "starting" not in text_of(driver, "#question-coder pre")
        more = driver.find_element("css selector", "#question-coder button.more")
        assert "earlier line" in more.text
        more.click()
        s.wait(lambda: "fixture agent coder starting" in text_of(driver, "#question-coder pre"),
               5, "the earlier lines shown")
        options = driver.find_elements("css selector", "#question-coder button.approve")
        assert [b.text for b in options] == ["1. Yes", "2. No"]
        assert not s.agents("answer", "coder")  # nothing typed until a person chooses
        options[0].click()
        s.wait(lambda: [a["text"] for a in s.agents("answer", "coder")] == ["1"], 10,
               "the option's key typed")
        s.wait(lambda: not driver.find_elements("css selector", "#question-coder"), 10,
               "the question gone once the agent goes on")
    finally:
        driver.quit()


def test_a_tired_operator_on_a_phone_loses_nothing_typed_and_is_told_when_signed_out(
        serve, short_tmp):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    web = Web(s)
    driver = browser.start(short_tmp / "profile")
    try:
        browser.viewport(driver, 390, 844, mobile=True)
        driver.get(web.url)
        s.wait(lambda: text_of(driver, "#conn") == "live", 15, "the page's event stream")
        long_task = "tidy the build " * 30 + "AND THE END OF IT"
        assert s.cli("delegate", "--to", "coder", "--task", long_task).returncode == 0
        s.wait(lambda: driver.find_elements("css selector", "#gate-T1 input"), 10, "the gate")

        # A reason half typed survives the page redrawing its gates for news.
        reason = driver.find_element("css selector", "#gate-T1 input")
        reason.click()
        reason.send_keys("not like this")
        assert s.cli("delegate", "--to", "coder", "--task", "a second gate").returncode == 0
        s.wait(lambda: driver.find_elements("css selector", "#gate-T2"), 10, "the second gate")
        assert driver.execute_script(
            "const i = document.querySelector('#gate-T1 input');"
            "return [i.value, document.activeElement === i];") == ["not like this", True]

        # The board cuts a task to one line; a tap shows all of it (no hover on a phone).
        assert "AND THE END OF IT" not in text_of(driver, "#task-T1")
        driver.find_element("css selector", "#task-T1").click()
        s.wait(lambda: "AND THE END OF IT" in text_of(driver, "#task-T1"), 5, "the whole task")

        # A pane wider than the phone says so (a scrollbar may not show); one that fits does not.
        driver.find_element("css selector", "#role-orchestrator button").click()
        s.wait(lambda: driver.find_element("css selector", "#screen-wide").is_displayed(), 5,
               "the wide pane's sign")
        browser.viewport(driver, 1280, 800)
        s.wait(lambda: not driver.find_element("css selector", "#screen-wide").is_displayed(), 5,
               "no sign once the pane fits")

        # A rotated token: the open page says it is signed out, not "reconnecting" forever.
        assert s.cli("web", "--rotate", "--no-qr").returncode == 0
        s.wait(lambda: text_of(driver, "#conn") == "signed out", 15, "signed out, said")
        assert driver.find_element("css selector", "#signed-out").is_displayed()
        assert "choragos web" in text_of(driver, "#signed-out")
    finally:
        driver.quit()
