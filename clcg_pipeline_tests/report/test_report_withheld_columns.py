"""A long table's column in which every interval is withheld is left out, and that is said once (issue 34).

Measured in Chromium on the demo report (fresh clone, ``make run``): the granularity section, whose
every interval is withheld, printed "CI withheld" 642 times, a whole column of it in each table,
beside rows already flagged not identifiable and a status line saying every interval is withheld.
"""

from __future__ import annotations

import re

from clcg_pipeline.report import render_report
from clcg_pipeline_tests.report import study_fixtures as fx
from clcg_pipeline_tests.report.test_report import _full
from clcg_pipeline_tests.report.test_studies import _section, _text


def _granularity(block: dict) -> str:
    results = _full()
    results["granularity"] = block
    return _section(render_report(results, None), "granularity")


def _headers(section: str) -> list[list[str]]:
    return [
        [_text(th) for th in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]
        for head in re.findall(r"<thead>(.*?)</thead>", section, re.S)
    ]


def _long_withheld() -> dict:
    """Granularity with every interval withheld and a scores table of 12 rows."""
    block = {**fx.granularity("not_identifiable"), "status": "ok", "reason": None}
    row = block["scores"][0]
    block["scores"] = [
        {**row, "language": lang, "model": f"model-{m}"} for lang in ("en", "sw", "ka") for m in "abcd"
    ]
    return block


def test_a_long_column_of_withheld_intervals_is_left_out_and_said_once() -> None:
    section = _granularity(_long_withheld())
    tables = re.findall(r"<table.*?</table>", section, re.S)
    scores = next(t for t in tables if t.count("model-") >= 12)
    assert "CI withheld" not in scores and "interval" not in " ".join(_headers(scores)[0])
    # The rows keep their estimates and their mark: the note's letter, spoken as "not identifiable".
    assert scores.count('aria-label="not identifiable (note ') == 12
    assert _text(section).count("every interval is withheld (not identifiable) are left out") == 1
    # A short table keeps its "CI withheld" cells, read at a glance.
    assert any("CI withheld" in t for t in tables if t is not scores)


def test_a_column_with_a_shown_interval_stays() -> None:
    section = _granularity(fx.granularity())
    assert any("interval" in " ".join(header) for header in _headers(section))
    assert "are left out" not in _text(section)
