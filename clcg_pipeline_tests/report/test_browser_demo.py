"""The demo study's report in headless Chromium: short, decision first, each reason said once (issue 34).

Reads the report ``clcg run`` wrote for the shared demo study (``demo_study`` fixture) and
measures it as a reader sees it at 1280 px: the page height, the tables, and how often each
caveat is visible. Before issue 34 the page was 57,904 px tall with 73 tables (60 unfolded),
and "6 < study.min_articles = 10" was visible 98 times. The figures are printed (``-s``).

Skipped when Chromium, chromedriver or Selenium are missing, unless CLCG_REQUIRE_BROWSER is set.
"""

from __future__ import annotations

import html
import json
import re
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


# The state every withheld row shares; the demo printed it 739 times (732 of them one short mark per
# row of the folded study tables) before each section said it once and its rows a note's letter.
_STATE = "not identifiable"
_WITHHELD = "CI withheld"
_SECTION = re.compile(r"<section\b[^>]*\bid=\"([^\"]+)\"")
_ROW_BADGE = re.compile(r"<td[^>]*>(?:(?!</td>).)*?<span class=\"flag\"[^>]*>&#9888; ([^<]*)</span>", re.S)


def _text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)))


def _sections_of(page: str) -> dict[str, str]:
    """Each section's HTML, from its opening tag to the next section's (folded parts included)."""
    starts = [(m.start(), m.group(1)) for m in _SECTION.finditer(page)]
    ends = [start for start, _ in starts[1:]] + [len(page)]
    return {key: page[start:end] for (start, key), end in zip(starts, ends, strict=True)}


def test_demo_report_says_each_reason_once_per_section_in_its_html(demo_study: DemoStudy) -> None:
    """Counted in the HTML's text, folded parts included (no browser needed): each reason at
    most once per section, the state "not identifiable" at most a few times per section (its
    status line and notes) and, over the page, no more often than there are sections."""
    results = json.loads((demo_study.data_dir / "study_results.json").read_text(encoding="utf-8"))
    page = (demo_study.data_dir / "report.html").read_text(encoding="utf-8")
    sections = _sections_of(page)
    texts = {key: _text_of(part) for key, part in sections.items()}
    counts = {key: text.count(_STATE) for key, text in texts.items() if _STATE in text}
    print(f"{_STATE!r} per section:", counts, "page:", _text_of(page).count(_STATE))
    assert len(sections) >= 20, list(sections)
    assert _text_of(page).count(_STATE) <= len(sections), counts
    assert all(n <= 5 for n in counts.values()), counts
    for reason in set(_reasons(results)):
        for key, text in texts.items():
            assert text.count(reason) <= 1, (key, reason)
    # No two rows of a section carry the same flag in words: a shared one is the note's letter.
    for key, part in sections.items():
        badges = Counter(_ROW_BADGE.findall(part))
        assert [b for b, n in badges.items() if n > 1 and len(b) > 8] == [], (key, badges)
    # Each withheld row is still marked: its badge is spoken (and hovered) as "not identifiable".
    spoken = re.findall(r'<span class="flag" role="img" aria-label="([^"]*)"', page)
    assert sum(_STATE in label for label in spoken) >= 100, len(spoken)
    # "CI withheld" too: said once per section (its status line or a note); each withheld cell a
    # short mark ("\u2014 a") spoken as the words. Before: 94 times, one per cell (67 in granularity).
    withheld = {key: text.count(_WITHHELD) for key, text in texts.items() if _WITHHELD in text}
    print(f"{_WITHHELD!r} per section:", withheld, "page:", _text_of(page).count(_WITHHELD))
    assert all(n <= 1 for n in withheld.values()), withheld
    marked = re.findall(r'<span class="withheld" role="img" aria-label="([^"]*)"', page)
    assert len(marked) >= 30 and all(label.startswith(_WITHHELD) for label in marked), marked
    assert f">{_WITHHELD}</td>" not in page
    # A note a row's flag already says ("198 of 200 bootstrap replicates valid") is not repeated in
    # its notes: before, "valid replicates: 198 of 200" stood on 7 rows of H2 (2 left: the arm
    # without that flag, pooled and per model).
    notes = {key: text.count("valid replicates:") for key, text in texts.items()}
    assert all(n <= 2 for n in notes.values()), notes
