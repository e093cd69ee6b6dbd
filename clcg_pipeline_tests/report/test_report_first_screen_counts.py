"""The first screen names what the estimates table withholds, the TOST's p values read as p values,
and the appendix shows no raw template (issue 34, items 1 and 4).

On the demo, H2's memorizable and new groups were not identifiable while the first screen said
"Every estimate above has its interval."; the t-based TOST printed "p (lower bound test): 0.0000",
the bootstrap TOST its floor 1/(B+1) as a plain "0.0050"; the definitions printed "{group}".
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from clcg_pipeline.report import render_report
from clcg_pipeline_tests.report.test_report import _full, _section_html, _text

FIVE = "too few articles: 5 < study.min_articles = 10"
SIX = "too few articles: 6 < study.min_articles = 10"


def _decision(html: str) -> str:
    start = html.index('<div id="decision"')
    return _text(html[start : html.index("</div>\n\n<dl", start)])


def _row(estimand: str, group: str, reason: str | None = None) -> dict[str, Any]:
    status = f"not identifiable: {reason}" if reason else "estimated"
    return {
        "estimand": estimand,
        "group": group,
        "estimate": 0.06,
        "ci_low": None if reason else 0.05,
        "ci_high": None if reason else 0.07,
        "p": None,
        "p_adj": None,
        "n": 300,
        "identifiable": reason is None,
        "status": status,
    }


def _table() -> pd.DataFrame:
    """The estimates table of a study whose H1 is identifiable and whose H2 groups are not."""
    return pd.DataFrame(
        [
            _row("h1_micro", "all"),
            _row("clcg_language", "sw"),
            _row("h2_clcg_memorizable", "all", FIVE),
            _row("h2_clcg_new", "all", SIX),
            _row("h2_clcg_memorizable_model", "gpt-x", FIVE),
            _row("h2_clcg_new_model", "gpt-x", SIX),
        ]
    )


def test_the_first_screen_names_what_the_estimates_table_withholds_with_its_count() -> None:
    first = _decision(render_report(_full(), _table()))
    assert "Every estimate above has its interval" not in first
    # The one count, the table's (the document's caveat counts the same rows).
    assert "4 of the 6 estimates of the estimates table (appendix) are not identifiable" in first
    # Each reason once, with the estimands and groups it concerns.
    assert first.count(FIVE) == 1 and first.count(SIX) == 1
    assert f"{FIVE} \u2014 h2_clcg_memorizable (all); h2_clcg_memorizable_model (gpt-x)" in first
    assert f"{SIX} \u2014 h2_clcg_new (all); h2_clcg_new_model (gpt-x)" in first


def test_a_table_with_nothing_withheld_keeps_the_plain_line() -> None:
    table = _table()
    table = table.loc[table["identifiable"]]
    results = _full()
    del results["h1"]["by_language"]["mt"]  # no estimate: a reason of its own
    first = _decision(render_report(results, table))
    assert "Every estimate above has its interval" in first and "are not identifiable" not in first


def _equivalence() -> dict[str, Any]:
    floor = 1 / 201  # the bootstrap's floor with 200 replicates: (0 + 1) / (200 + 1)
    return {
        **_full(),
        "settings": {"replicates": 200},
        "equivalence": {
            "bootstrap": {
                "bounds": [-0.02, 0.02],
                "ci_90": [0.001, 0.008],
                "equivalent": True,
                "p": floor,
                "p_lower": floor,
                "p_upper": 0.0199,
            },
            "contrast": "EN - PT (pt_gap)",
            "estimate": 0.0049,
            "n": 300,
            "n_articles": 11,
            "paired_article_means": {"n": 11, "p": 7.0e-07, "p_lower": 2.6e-08, "p_upper": 7.0e-07},
        },
    }


def test_the_tosts_p_values_read_as_p_values() -> None:
    section = _text(_section_html(render_report(_equivalence(), None), "result-equivalence"))
    assert "0.0000" not in section
    # The t-based TOST: a tiny p is "<0.001", as in the p column beside it.
    assert "p (lower bound test): <0.001; p (upper bound test): <0.001" in section
    # The bootstrap TOST: its floor 1/(B+1) is a bound, marked as such; another p is a p.
    assert "p \u22640.005 p (lower bound test) \u22640.005 p (upper bound test) 0.020" in section


def test_the_definitions_name_where_a_familys_metric_is() -> None:
    results = {
        **_full(),
        "definitions": {
            "h1_micro_metric": {
                "definition": "H1 micro CLCG under the metric in `group` (metric sensitivity)",
                "direction": "higher = larger loss outside English",
                "sided": "none",
                "metric": "{group}",  # as documents written before the fix hold it
            }
        },
    }
    html = render_report(results, None)
    assert "{group}" not in html
    definitions = _text(_section_html(html, "definitions"))
    assert re.search(r"h1_micro_metric .* the metric named in each row's group", definitions)
