"""Headless Debian chromium for the UI's browser tests and screenshots.

Selenium drives /usr/bin/chromium through /usr/bin/chromedriver, both from
Debian's packages (`apt-get install chromium chromium-driver`); nothing is
downloaded. This module defines no workflow, so tests may import it freely.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["CHROMEDRIVER", "CHROMIUM", "browser"]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextmanager
def browser(width: int = 1360, height: int = 900) -> Iterator[Any]:
    """A selenium driver of headless Debian chromium, quit (and its profile removed) after."""
    # Selenium Manager would otherwise look for (and fetch) a driver of its own.
    os.environ.setdefault("SE_AVOID_STATS", "true")
    os.environ.setdefault("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="replaykit-ui-chromium-")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
