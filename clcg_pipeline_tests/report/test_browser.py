"""The report in a real browser: headless Debian Chromium driven by Selenium.

The report is rendered from what the analysis stage really produces (the suite run on
synthetic scores, plus the drill-down over matching predictions and items), written to disk
and opened as a file. The test fails on a console error, on any request that is not the file
itself (or a data: URL), on a missing section or an undrawn chart, and when the drill-down
selector does not switch language. A full-page screenshot is saved under the test's tmp_path.

Skipped when Chromium, chromedriver or Selenium are missing, unless CLCG_REQUIRE_BROWSER is set.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.analysis import run_suite
from clcg_pipeline.analysis._drilldown import drilldown
from clcg_pipeline.config import load_config
from clcg_pipeline.report import render_report, write_report
from clcg_pipeline.synthetic import (
    synthetic_articles,
    synthetic_config,
    synthetic_fertility,
    synthetic_scores,
)
from clcg_pipeline_tests.report import study_fixtures

CONFIG_DIR = Path(__file__).resolve().parents[2] / "assets_config"
CHROMIUM = os.environ.get("CLCG_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CLCG_CHROMEDRIVER", "/usr/bin/chromedriver")
NO_DATA = ("fon", "gn")  # panel languages left without scores, as in a partial corpus
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1280,1000",
)


def _browser_or_skip() -> Any:
    """Selenium's webdriver module, or skip (fail under CLCG_REQUIRE_BROWSER) when unavailable."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    try:
        from selenium import webdriver
    except ImportError:
        missing.append("the selenium package")
        webdriver = None
    if missing:
        message = f"browser test needs {', '.join(missing)}"
        if os.environ.get("CLCG_REQUIRE_BROWSER"):
            pytest.fail(message + " (CLCG_REQUIRE_BROWSER is set)")
        pytest.skip(message)
    return webdriver


def _study(tmp_path: Path) -> tuple[dict[str, Any], pd.DataFrame, Path]:
    """study_results.json + estimates as the analysis asset writes them, and the report file."""
    config = synthetic_config(load_config(CONFIG_DIR))
    scores = synthetic_scores(config.languages, n_articles=12, n_stability=2, seed=5)
    scores = scores[~scores["language"].isin(NO_DATA)].reset_index(drop=True)
    suite = run_suite(
        scores,
        config,
        articles=synthetic_articles(12),
        fertility=synthetic_fertility(config.languages),
        replicates=40,
    )
    band = config.study.band
    predictions = scores[["model", "language", "doc_id", "item_id", "rep", "context_scope"]].copy()
    # A readable answer that differs with the score, as a model's would.
    predictions["answer"] = [
        f"answer to {item} ({score:.2f})"
        for item, score in zip(scores["item_id"], scores[band.metric], strict=True)
    ]
    items = pd.DataFrame({"item_id": scores["item_id"].unique()})
    items["question"] = "What does paragraph " + items["item_id"] + " say?"
    items["gold_answer"] = "The gold answer of " + items["item_id"]
    results = json.loads(json.dumps(suite.results, default=str))  # as read back from study_results.json
    results.setdefault(
        "languages",
        [
            {"iso": lang.iso, "name": lang.name, "joshi_class": lang.joshi_class, "role": lang.role}
            for lang in config.languages.languages
        ],
    )
    results.setdefault("excluded_versions", [])
    # The studies of issues 10 and 11, as their contracts shape them (simulated annotations: a banner).
    results["error_taxonomy"] = study_fixtures.taxonomy()
    results["human_validation"] = study_fixtures.human()
    results["granularity"] = study_fixtures.granularity("not_identifiable")
    results["drilldown"] = drilldown(
        scores,
        predictions,
        items,
        reference=config.languages.reference,
        metric=band.metric,
        levels=band.levels,
        item_source=band.item_source,
        context_scope=band.context_scope,
        languages=config.languages.isos,
    )
    path = tmp_path / "report.html"
    write_report(render_report(results, suite.estimates), path)
    return results, suite.estimates, path


_MEASURE = """
const out = {charts: [], sections: [], bodyWidth: document.body.clientWidth};
for (const svg of document.querySelectorAll('svg.chart')) {
  const box = svg.getBoundingClientRect();
  const section = svg.closest('section');
  const label = svg.querySelector('text.label');
  // Bar charts declare bars, heat maps cells, line charts points: each must be drawn.
  const kind = svg.dataset.cells !== undefined ? 'rect.cell, rect.cell.empty'
    : svg.dataset.points !== undefined ? 'circle.point' : 'rect.bar';
  const bars = Array.from(svg.querySelectorAll(kind)).map(r => r.getBoundingClientRect());
  out.charts.push({
    id: svg.id, width: box.width, height: box.height, kind: kind,
    sectionWidth: section.clientWidth - parseFloat(getComputedStyle(section).paddingLeft)
      - parseFloat(getComputedStyle(section).paddingRight),
    declared: Number(svg.dataset.bars ?? svg.dataset.cells ?? svg.dataset.points), bars: bars.length,
    drawnBars: bars.filter(b => b.width > 0 && b.height > 0).length,
    fontPx: parseFloat(svg.getAttribute('font-size')) * box.width / svg.viewBox.baseVal.width,
    labelHeight: label ? label.getBoundingClientRect().height : 0,
    // Text drawn (partly) outside the chart is cut off on screen.
    overflow: Array.from(svg.querySelectorAll('text')).filter(t => {
      const r = t.getBoundingClientRect();
      return r.left < box.left - 1 || r.right > box.right + 1
        || r.top < box.top - 1 || r.bottom > box.bottom + 1;
    }).map(t => t.textContent),
  });
}
for (const s of document.querySelectorAll('body > section, body > header')) {
  out.sections.push({id: s.id, height: s.getBoundingClientRect().height});
}
out.tableFontPx = parseFloat(getComputedStyle(document.querySelector('#estimates td')).fontSize);
return out;
"""


def test_report_in_headless_chromium(tmp_path: Path) -> None:
    webdriver = _browser_or_skip()
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import Select

    results, _, path = _study(tmp_path)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    started = time.perf_counter()
    # An explicit driver path: Selenium Manager never runs, so nothing is downloaded.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.get(path.as_uri())
        assert driver.title == "Cross-Lingual Comprehension Gap"
        # The sections after the headline start folded (issue 34); a reader opens them to see them.
        driver.execute_script(
            "document.querySelectorAll('section.folded > details').forEach(d => d.open = true)"
        )

        # Every section there, and not collapsed to nothing.
        measured = driver.execute_script(_MEASURE)
        heights = {s["id"]: s["height"] for s in measured["sections"]}
        expected_sections = {"header", "h1", "by-language", "by-model", "drilldown", "estimates", "settings"}
        expected_sections |= {"result-error_taxonomy", "result-human_validation", "result-granularity"}
        expected_sections |= {
            f"result-{key}"
            for key in results
            if key not in ("h1", "languages", "warnings", "settings", "estimands", "drilldown", "definitions")
            and not key.startswith("languages_")
        }
        assert expected_sections <= set(heights), expected_sections - set(heights)
        assert all(heights[s] > 20 for s in expected_sections), heights

        # Every chart drawn at the column's full width, with readable text and the expected bars.
        charts = {c["id"]: c for c in measured["charts"]}
        with_estimate = [
            iso for iso, block in results["h1"]["by_language"].items() if block.get("estimate") is not None
        ]
        levels = [lvl for lvl, b in results["h3"]["standardized"].items() if b.get("estimate") is not None]
        expected_bars = {
            "chart-by-language": len(with_estimate),
            "chart-by-model": len(results["h1"]["by_model"]),
            "chart-language_net": len(
                [b for b in results["language_net"].values() if b.get("estimate") is not None]
            ),
            "chart-joshi_class": len(
                [
                    b
                    for b in results["joshi_class"]["primary"].values()
                    if b["raw"].get("estimate") is not None
                ]
            ),
            "chart-h3-standardized": len(levels),
        }
        assert {k: charts[k]["bars"] for k in expected_bars} == expected_bars
        # The study sections: a transition heat map per judge (9 x 9 labelled cells), a gap heat map per
        # language group, the position curve (3 groups x 9 places), and their bar charts.
        n_labels = len(study_fixtures.LABELS)
        study_charts = {
            **{f"heatmap-transitions-{j}": n_labels**2 for j in study_fixtures.JUDGES},
            **{f"heatmap-granularity-{g}": 9 for g in ("high", "mid", "low")},
            "curve-word-accuracy": 27,
            "score-curve-word-accuracy": 28,  # English's score too (one point), but no gap line for it
            "chart-taxonomy-loss": 6,
            "chart-human-funnel": 4,
            "chart-human-alpha": 3,
            "chart-granularity-tokens": 2,
        }
        assert {k: charts[k]["bars"] for k in study_charts} == study_charts
        cell_texts = driver.execute_script(
            "return Array.from(document.querySelectorAll('#heatmap-transitions-judge-a text.cell-value'))"
            ".filter(t => !t.classList.contains('cell-sub')).map(t => t.textContent)"
        )
        assert len(cell_texts) == n_labels**2 and "12" in cell_texts and "40" in cell_texts
        banner = driver.find_element("css selector", "#result-human_validation .banner")
        assert banner.is_displayed() and banner.text.startswith("SIMULATED annotations")
        assert banner.rect["height"] > 30 and banner.rect["width"] > 600
        status = driver.find_element("css selector", "#result-granularity p.status").text
        assert status.startswith("Not identifiable") and "CI withheld" in status
        for chart in charts.values():
            assert chart["drawnBars"] == chart["bars"] == chart["declared"] > 0, chart
            assert chart["height"] > 50, chart
            assert chart["width"] >= 0.98 * chart["sectionWidth"], chart  # full width of the column
            assert chart["fontPx"] >= 15 and chart["labelHeight"] >= 15, chart
            assert chart["overflow"] == [], chart
        assert measured["tableFontPx"] >= 14

        # The drill-down shows one language at a time, and the selector switches it.
        select = Select(driver.find_element("id", "dd-select"))
        visible = driver.execute_script(
            "return Array.from(document.querySelectorAll('.dd-panel')).filter(p => !p.hidden)"
            ".map(p => p.dataset.lang)"
        )
        first = select.first_selected_option.get_attribute("value")
        assert visible == [first]
        other = next(o.get_attribute("value") for o in select.options if o.get_attribute("value") != first)
        select.select_by_value(other)
        visible = driver.execute_script(
            "return Array.from(document.querySelectorAll('.dd-panel')).filter(p => !p.hidden)"
            ".map(p => p.dataset.lang)"
        )
        assert visible == [other]
        panel = driver.find_element("id", f"dd-{other}")
        assert panel.is_displayed() and not driver.find_element("id", f"dd-{first}").is_displayed()
        assert len(results["drilldown"][first]) > 0
        assert driver.find_element("css selector", f"#dd-{first} table.dd") is not None

        # Languages without data are named in the header.
        header = driver.find_element("id", "study-facts").text
        assert "Fon (fon)" in header and "Guarani (gn)" in header

        # A full-page screenshot for a person to look at.
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, min(int(height) + 100, 30000))
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        # No console errors, and no request other than the file itself (or inline data:).
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        # (The log also holds the browser's own start page, chrome://; only our page's requests count,
        # and nothing at all may go to the network.)
        ours, network = [], []
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                url = message["params"]["request"]["url"]
                if message["params"].get("documentURL") == path.as_uri():
                    ours.append(url)
                if url.startswith(("http:", "https:", "ws:", "wss:", "ftp:")):
                    network.append(url)
        assert network == []
        assert path.as_uri() in ours
        assert all(url == path.as_uri() or url.startswith("data:") for url in ours), ours
    finally:
        driver.quit()
    elapsed = time.perf_counter() - started
    print(f"browser part: {elapsed:.1f}s; screenshot {tmp_path / 'report.png'}")
    print("charts:", {k: (round(c["width"]), round(c["fontPx"], 1)) for k, c in charts.items()})
