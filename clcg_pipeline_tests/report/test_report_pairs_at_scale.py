"""Issue 37: at N models the report's rank table (the leaderboard) lists every model, first, while
the pairs stay short, from a document that names the table of every pair or still holds them all."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.analysis import leaderboard
from clcg_pipeline.report import render_report
from clcg_pipeline_tests.report.test_report import _section_html, _text
from clcg_pipeline_tests.results.test_model_pairs import N_MODELS, split, wide_study


def _contrasts(results: dict[str, Any], estimates: pd.DataFrame) -> str:
    return _section_html(render_report(results, estimates), "result-model_contrasts")


def _rank_rows(section: str) -> list[list[str]]:
    """The cells of the rank table's body rows (the first table after its heading)."""
    after = section[section.index("Rank per model") :]
    table = after[after.index("<table") : after.index("</table>")]
    body = table[table.index("<tbody") :] if "<tbody" in table else table
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S)
    return [
        [_text(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.S)] for row in rows
    ]


def _pair_rows(section: str) -> int:
    return len(
        re.findall(r"<tr[^>]*>\s*<t[dh][^>]*>[^<]* vs [^<]* \((?:H1 micro|macro|macro net)\)", section)
    )


@pytest.mark.parametrize("slim", [False, True], ids=["pairs inline (older document)", "pairs in a table"])
def test_the_rank_table_lists_every_model_in_rank_order_first(slim: bool) -> None:
    full, estimates = wide_study()
    results = split(full)[0] if slim else full
    section = _contrasts(results, estimates)
    rows = _rank_rows(section)
    assert [row[0] for row in rows] == list(leaderboard(full).model)
    assert len(rows) == N_MODELS
    # The leaderboard comes before the pairs that explain it.
    assert section.index("Rank per model") < section.index("Paired contrasts")


def test_the_pairs_stay_short_and_name_where_every_pair_is() -> None:
    full, estimates = wide_study()
    slim = split(full)[0]
    table = slim["model_contrasts"]["pairs_table"]
    text = _text(_contrasts(slim, estimates))
    shown = len(slim["model_contrasts"]["pairs"])
    assert f"{shown} of the 435 pairs shown" in text
    assert f"{table['significant']} are significant, the 50 closest in rank shown" in text
    assert "All 435 pairs are in the catalog: clcg query --named model_pairs" in text
    assert _pair_rows(_contrasts(slim, estimates)) == 3 * shown


def test_an_older_document_shows_the_same_pairs_and_names_the_estimates_query() -> None:
    full, estimates = wide_study()
    slim = split(full)[0]
    older, newer = _contrasts(full, estimates), _contrasts(slim, estimates)
    assert _pair_rows(older) == _pair_rows(newer)
    assert "All 435 pairs are in the catalog: clcg query --named model_contrasts" in _text(older)
    significant = slim["model_contrasts"]["pairs_table"]["significant"]
    assert f"{significant} are significant, the 50 closest in rank shown" in _text(older)
