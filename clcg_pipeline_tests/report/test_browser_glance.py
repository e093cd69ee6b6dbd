"""The first screen's two tables fit their columns in headless Chromium (issue 34, item 4).

At 1400 px the "models ranked" table overflowed its half of the box: a horizontal scrollbar,
and its interval column cut to "[0.0". Skipped when Chromium, chromedriver or Selenium are
missing, unless CLCG_REQUIRE_BROWSER is set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clcg_pipeline.report import render_report
from clcg_pipeline_tests.report.conftest import headless_chromium
from clcg_pipeline_tests.report.test_report import _estimates, _full

_WIDTHS = """
return Array.from(document.querySelectorAll('#decision .table-wrap')).map(w => ({
  table: w.querySelector('table').className, wrap: w.clientWidth, content: w.scrollWidth}));
"""


def _widths(path: Path, tmp_path: Path, widths: tuple[int, ...]) -> dict[int, list[dict[str, Any]]]:
    out = {}
    with headless_chromium(tmp_path) as driver:
        for width in widths:
            driver.set_window_size(width, 1000)
            driver.get(path.as_uri())
            out[width] = driver.execute_script(_WIDTHS)
    return out


@pytest.mark.parametrize("model", ["lexical-reader", "a-model-with-a-long-configured-id"])
def test_the_first_screens_tables_fit_without_a_scrollbar(tmp_path: Path, model: str) -> None:
    results = _full()
    by_model = results["h1"]["by_model"]
    by_model[model] = by_model.pop("claude-y")
    path = tmp_path / "report.html"
    path.write_text(render_report(results, _estimates()), encoding="utf-8")
    measured = _widths(path, tmp_path, (1400, 1280, 1000, 700))
    for width, tables in measured.items():
        assert {t["table"] for t in tables} == {"decision-languages", "decision-models"}, width
        for table in tables:
            assert table["content"] <= table["wrap"], (width, table)
