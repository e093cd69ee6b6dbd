"""One reason, one letter; each letter a reader sees is the one the note gives (issue 34).

The demo's appendix lettered "198 of 200 bootstrap replicates valid (...; ...)" three times: "a"
for the estimates table's flag and "b", "c" for the two halves the document's ``estimands`` index
holds (it cuts a row's flags at every "; ", the one inside the parentheses too).
"""

from __future__ import annotations

import pandas as pd

from clcg_pipeline.report import render_report
from clcg_pipeline.report._consistency import withheld_once
from clcg_pipeline.report._page import Part, Row, Section, flags_of, split_flags
from clcg_pipeline.report._studies import CI_WITHHELD
from clcg_pipeline.results import split_model_pairs
from clcg_pipeline_tests.report.test_new_model_lines_at_scale import study
from clcg_pipeline_tests.report.test_report import _full, _section_html, _text

_RULE = (
    "a replicate in which a group or language of the contrast has no row is dropped; the set of "
    "languages and groups is fixed by the full sample"
)
_VALID = f"198 of 200 bootstrap replicates valid ({_RULE})"
_COLUMNS = ["", "estimate", "interval", "flags and notes"]
_BOUND = "p is the smallest attainable with 198 replicates: p <= 0.00503"


def test_a_flag_with_a_semicolon_inside_its_parentheses_stays_whole() -> None:
    halves = _VALID.split("; ")  # how the document's index holds it
    assert split_flags(halves) == [_VALID]
    assert split_flags(f"{_VALID}; {_BOUND}") == [_VALID, _BOUND]  # the estimates table's column
    assert split_flags([*halves, _BOUND, "", _VALID]) == [_VALID, _BOUND]
    # A p at the floor is a label in its cell: dropped, and only it (the whole string went before).
    assert flags_of({"flags": f"{_VALID}; {_BOUND}", "p_bound": True}) == [_VALID]


def test_the_appendix_letters_a_flag_once_not_its_halves() -> None:
    estimates = pd.DataFrame(
        {
            "estimand": ["h1_micro", "clcg", "clcg"],
            "group": ["all", "sw", "mt"],
            "estimate": [0.078, 0.065, 0.05],
            "ci_low": [0.07, 0.05, 0.04],
            "ci_high": [0.085, 0.08, 0.06],
            "p": [0.001, 0.01, 0.02],
            "p_adj": [None, None, None],
            "n": [300, 150, 150],
            "flags": [_VALID, _VALID, None],
        }
    )
    # ``estimands`` as the suite writes it (analysis/_index.py): the flags cut at every "; ".
    index = {"estimate": 0.07, "identifiable": True, "flags": _VALID.split("; ")}
    document = {"estimands": {"h1_micro/all": index, "clcg/sw": index}}
    section = _text(_section_html(render_report(document, estimates), "estimates"))
    assert section.count("198 of 200 bootstrap replicates valid") == 1, section
    assert f"\u26a0 a: {_VALID}" in section
    assert "\u26a0 b" not in section  # before: "b" and "c", the halves
    assert section.count("\u26a0 a") == 1 + 2  # the note and the two rows


def _withheld_rows(letters: str) -> list[Row]:
    """One row per letter, its interval withheld for the reason under that letter."""
    return [
        Row(
            cells=[x, "0.1", CI_WITHHELD, ""],
            flags=[f"not identifiable: {x}"],
            marks={f"not identifiable: {x}": x},
        )
        for x in letters
    ]


def _status_after(rows: list[Row]) -> str:
    status = "Not identifiable: too few. Intervals are withheld (\u201cCI withheld\u201d)."
    parts = [Part("status", level="warn", text=status), Part("table", columns=_COLUMNS, rows=rows)]
    section = withheld_once(Section(key="k", title="t", parts=parts))
    return section.parts[0].text


def test_a_status_line_names_the_marks_its_rows_show_not_a_literal_a() -> None:
    assert "(\u201c\u2014 b\u201d: CI withheld, for the reason under its letter" in _status_after(
        _withheld_rows("bb")
    )
    said = _status_after(_withheld_rows("abc"))
    assert "(\u201c\u2014 a\u201d, \u201c\u2014 b\u201d or \u201c\u2014 c\u201d: CI withheld," in said
    # Many letters: said generically, never as one literal letter.
    said = _status_after(_withheld_rows("abcdefg"))
    assert "(\u201c\u2014\u201d and a letter: CI withheld, for the reason under its letter" in said
    assert "\u201c\u2014 a\u201d" not in said


def test_h2_marks_a_withheld_arm_interval_like_every_other_section() -> None:
    results = _full()
    few = "too few articles: {} < study.min_articles = 10"
    results["h2"]["pooled"] = {
        "memorizable": {"estimate": 0.064, "n": 288, "identifiable": False, "reason": few.format(5)},
        "new": {"estimate": 0.056, "n": 576, "identifiable": False, "reason": few.format(6)},
        "difference": {"estimate": 0.007, "ci_low": -0.045, "ci_high": 0.036, "p": 0.5, "n": 864},
    }
    results["h2"]["by_model"] = {"gpt-x": results["h2"]["pooled"]}  # each reason on two rows: lettered
    html = _section_html(render_report(results, None), "result-h2")
    text = _text(html)
    # Before: "Memorizable articles 0.064 \u2014 \u2014", the interval read as a missing value.
    assert "Memorizable articles 0.064 \u2014 a \u2014" in text
    assert "New articles 0.056 \u2014 b \u2014" in text
    assert "gpt-x \u00b7 Memorizable articles 0.064 \u2014 a \u2014" in text
    assert html.count('aria-label="CI withheld (note a)"') == 2
    assert (
        "\u201c\u2014 a\u201d or \u201c\u2014 b\u201d: CI withheld, for the reason under its letter" in text
    )


def _contrasts_text(n_models: int, new: int) -> str:
    document = study(n_models, new)
    split_model_pairs(document)  # as the analysis writes it: the pairs_table named
    return _text(_section_html(render_report(document, None), "result-model_contrasts"))


def test_the_contrast_section_says_what_the_new_model_section_shows() -> None:
    # Up to ten other models its section lists each difference.
    text = _contrasts_text(6, 2)
    assert (
        "The new model (s002) against each of the 5 other models (H1 micro): its own section, first." in text
    )
    # Beyond, it shows a selection: before, this said "against every other model" too.
    text = _contrasts_text(40, 20)
    assert "against every other model" not in text
    assert (
        "The new model (s020) against the 39 other models (H1 micro): its own section, first, says how "
        "many it is significantly better or worse than, shows " in text
    )
    assert "differences (its neighbours in the ranking and the significant ones closest in rank) and " in text
