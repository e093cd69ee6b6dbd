"""Issue 37: the report's "New model" section shows the same differences as the terminal (one
selection, ``shown_differences``): at hundreds of models a summary, the rows a reader needs and the
query with all of them; a small study every difference, as before."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

from clcg_pipeline.report import new_model_lines, render_report
from clcg_pipeline.results import split_model_pairs
from clcg_pipeline_tests.report.test_new_model_lines_at_scale import NEW, study
from clcg_pipeline_tests.report.test_report import _section_html, _text

# Its CLCG, its two neighbours in rank and at most 10 significant differences, whatever the size.
AT_MOST = 1 + 2 + 10


def _section(document: dict[str, Any]) -> str:
    return _section_html(render_report(document, None), "new-model")


def _labels(html: str) -> list[str]:
    """The first cell of each row of the section's table (the row's label)."""
    return [_text(cell) for cell in re.findall(r"<tr>\s*<t[dh][^>]*>(.*?)</t[dh]>", html, re.S)][1:]


def test_at_500_models_the_section_shows_the_terminal_rows_and_names_the_query() -> None:
    document = study(500, NEW)
    split_model_pairs(document)  # as the analysis writes it: the pairs_table named
    html = _section(document)
    labels = _labels(html)
    # The old section had one row per other model: 500 rows.
    assert len(labels) <= AT_MOST and labels[0] == "s250: H1 micro CLCG"
    terminal = [
        line.split(": ", 1)[0].strip()
        for line in new_model_lines(document)
        if line.startswith("  s250 minus ")
    ]
    assert labels[1:] == terminal  # the same rows, in the same (rank) order
    assert "s250 minus s249 (rank 250)" in labels and "s250 minus s251 (rank 252)" in labels
    text = _text(html)
    assert (
        "Against the other 499 models (H1 micro; p (adj.) < 0.05, Benjamini-Hochberg across all pairs): "
        "significantly better (smaller gap) than 229, worse than 230, not separated from 38; "
        "2 without a test." in text
    )
    assert (
        f"Not shown here: {499 - len(terminal)} more; every pair is in the catalog view model_pairs "
        "( clcg query --named model_pairs ); all 499, model_a minus model_b: clcg query "
        '"SELECT model_a, model_b, estimate, ci_low, ci_high, p_adj FROM model_pairs WHERE '
        "gap = 'h1_micro' AND 's250' IN (model_a, model_b) ORDER BY p_adj\"" in text
    )


def test_the_section_s_commands_are_code_as_the_terminal_prints_them() -> None:
    """The commands were plain text in the paragraph; each is a <code> element, the last the
    terminal's command exactly (the report names no folder: it lies in the one it describes)."""
    document = study(500, NEW)
    split_model_pairs(document)
    codes = [unescape(code) for code in re.findall(r"<code>(.*?)</code>", _section(document), re.S)]
    last = new_model_lines(document)[-1]
    assert codes == ["clcg query --named model_pairs", last.split("model_a minus model_b: ", 1)[1]]


def test_a_model_id_with_markup_is_escaped_in_the_code() -> None:
    document = study(15, 7)
    split_model_pairs(document)
    document["new_model"]["model"] = "<b>m</b>"
    html = _section(document)
    assert "<b>m</b>" not in html and "&#39;&lt;b&gt;m&lt;/b&gt;&#39; IN (model_a, model_b)" in html


def test_a_document_before_the_pairs_table_shows_its_query_as_code() -> None:
    html = _section(study(60, 30))
    assert "all 59: <code>clcg query --named model_contrasts</code>" in html


def test_eleven_models_list_every_difference_without_a_summary() -> None:
    html = _section(study(11, 4))
    assert _labels(html)[1:] == [f"s004 minus s{k:03d}" for k in range(11) if k != 4]
    assert "Against the other" not in _text(html) and "Not shown here" not in _text(html)


def test_a_3_model_study_section_is_unchanged() -> None:
    document = study(3, 1)
    text = _text(_section(document))
    assert _labels(_section(document)) == ["s001: H1 micro CLCG", "s001 minus s000", "s001 minus s002"]
    assert text.startswith("New model: s001")
    assert "rank 2 of 3 (interval 1\u20133) (1 = smallest gap) estimate" in text
    assert "Against the other" not in text and "Not shown here" not in text
