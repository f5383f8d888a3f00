"""Debian's headless Chromium, driven through its own chromedriver (Selenium),
for the tests that look at the web view the way a person would."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")


def available() -> bool:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return CHROMIUM is not None and CHROMEDRIVER is not None


def start(profile: Path):
    """A fresh browser with its own profile directory (nothing shared between tests)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    return driver


def viewport(driver, width: int, height: int, *, mobile: bool = False) -> None:
    """Make the page's viewport exactly ``width`` x ``height`` CSS pixels."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})


def dark(driver, on: bool) -> None:
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": "dark" if on else "light"}]})
