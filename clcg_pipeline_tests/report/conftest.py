"""What the report's browser tests share."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clcg_pipeline_tests.report.test_browser import CHROME_FLAGS, CHROMEDRIVER, CHROMIUM, _browser_or_skip


@contextlib.contextmanager
def headless_chromium(tmp_path: Path) -> Iterator[Any]:
    """A Selenium driver of the headless Chromium (``CHROME_FLAGS``, a profile in ``tmp_path``), quit
    on leaving; the test is skipped when the browser is missing (``_browser_or_skip``)."""
    webdriver = _browser_or_skip()
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    # An explicit driver path: Selenium Manager never runs, so nothing is downloaded.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
