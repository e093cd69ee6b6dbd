"""The demo study's report in headless Chromium: short, decision first, each reason said once (issue 34).

Reads the report ``clcg run`` wrote for the shared demo study (``demo_study`` fixture) and
measures it as a reader sees it at 1280 px: the page height, the tables, and how often each
caveat is visible. Before issue 34 the page was 57,904 px tall with 73 tables (60 unfolded),
and "6 < study.min_articles = 10" was visible 98 times. The figures are printed (``-s``).

Skipped when Chromium, chromedriver or Selenium are missing, unless CLCG_REQUIRE_BROWSER is set.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from clcg_pipeline_tests.demo_study import DemoStudy
from clcg_pipeline_tests.report.conftest import headless_chromium

MAX_HEIGHT = 10_000  # about ten screens at 1280 x 1000
CAVEATS = ("CI withheld", "not identifiable", "SIMULATED", "Status: ok (computed)")

_MEASURE = """
const visible = document.body.innerText;
const top = document.getElementById('decision');
const sections = Array.from(document.querySelectorAll('body > section'));
return {
  height: document.documentElement.scrollHeight,
  tables: document.querySelectorAll('table').length,
  visibleTables: Array.from(document.querySelectorAll('table')).filter(t => t.checkVisibility()).length,
  visible: visible,
  all: document.body.textContent,
  decisionTop: top ? top.getBoundingClientRect().top : null,
  decisionBottom: top ? top.getBoundingClientRect().bottom : null,
  greenStatuses: document.querySelectorAll('p.status-ok').length,
  languageRows: document.querySelectorAll('#decision table.decision-languages tbody tr').length,
  modelRows: document.querySelectorAll('#decision table.decision-models tbody tr').length,
  sections: sections.map(s => ({id: s.id, text: s.innerText, all: s.textContent})),
};
"""


def _reasons(value: object) -> Iterator[str]:
    """Every reason an estimate of the document gives for being not identifiable."""
    if isinstance(value, Mapping):
        if value.get("identifiable") is False and value.get("reason"):
            yield str(value["reason"])
        for v in value.values():
            yield from _reasons(v)
    elif isinstance(value, list):
        for v in value:
            yield from _reasons(v)


def _measure(path: Path, tmp_path: Path) -> dict[str, Any]:
    with headless_chromium(tmp_path) as driver:
        driver.get(path.as_uri())
        return driver.execute_script(_MEASURE)


def test_demo_report_leads_with_the_decision_and_fits_ten_screens(
    demo_study: DemoStudy, tmp_path: Path
) -> None:
    results = json.loads((demo_study.data_dir / "study_results.json").read_text(encoding="utf-8"))
    page = _measure(demo_study.data_dir / "report.html", tmp_path)
    reasons = Counter(_reasons(results))
    counts = {s: page["visible"].count(s) for s in (*CAVEATS, *reasons)}
    print(f"demo report: {page['height']} px, {page['tables']} tables ({page['visibleTables']} unfolded)")
    print("visible counts:", counts)
    print("counts in the page's text, folded parts included:", {s: page["all"].count(s) for s in counts})

    assert page["height"] <= MAX_HEIGHT, page["height"]
    assert page["visibleTables"] <= 10, page["visibleTables"]  # the rest folded, one click away
    # The first screen (1000 px) opens with the decision: the gap per language and the models.
    assert page["decisionTop"] is not None and page["decisionTop"] < 400
    assert page["languageRows"] == len(results["h1"]["by_language"])
    assert page["modelRows"] == len(results["h1"]["by_model"])
    # Each reason is visible at most once at the top and once per section, never per row.
    for reason in reasons:
        assert counts[reason] <= 1 + len(page["sections"]), (reason, counts[reason])
        for section in page["sections"]:
            # Folded parts included: a section says a reason once, its rows carry a short mark.
            assert section["all"].count(reason) <= 1, (section["id"], reason)
    # No success status where the section shows otherwise.
    # The demo's reader is simulated (the banner at the top): no section says a green "ok" under
    # it, folded parts included (the error taxonomy did, and the ceiling rule's verdict).
    simulated = any(m.get("simulated") for m in results["settings"].get("models") or [])
    assert simulated
    assert page["greenStatuses"] == 0 and page["all"].count("Status: ok") == 0
    assert "Status estimated" not in page["visible"]
