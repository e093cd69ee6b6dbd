"""The report draws ``h4``, ``equivalence`` and ``parse_rule`` from their typed models (storage
``H4Results``, ``EquivalenceResults``, ``ParseRuleResults``; issue 34), and the appendix's rows
take the flags the document's ``estimands`` index adds, keyed flat as the suite writes it
(``"<estimand>/<group>"``)."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.report import render_report
from clcg_pipeline.storage import DocumentError

_WHY = "no estimate: a group or language of the contrast has no scored rows"


def _est(estimate: float | None, low: float | None, high: float | None, **extra: object) -> dict[str, Any]:
    return {"estimate": estimate, "ci_low": low, "ci_high": high, **extra}


def _withheld(n: int) -> dict[str, Any]:
    return {"estimate": None, "ci_low": None, "ci_high": None, "identifiable": False, "reason": _WHY, "n": n}


def _rule(micro: float) -> dict[str, Any]:
    """One rule of ``parse_rule`` as analysis/sections/h1.py writes it (keys in JSON's sorted order)."""
    return {
        "h1_micro": _est(micro, micro - 0.01, micro + 0.01, n=150),
        "macro": _est(0.07, 0.06, 0.08, n=150),
        "macro_net": _est(0.02, 0.01, 0.03, n=300),
        "micro_net": _est(0.021, 0.011, 0.031, n=300),
        "n": {"articles": 11, "baseline": 150, "english": 150, "target": 140},
        "pt_gap": _est(0.005, 0.001, 0.009, n=300),
    }


def _document() -> dict[str, Any]:
    """The three sections as their producers write them (study_results.json sorts its keys)."""
    return {
        "h4": {
            "alternative": "two-sided",
            "difference": _est(-0.012, -0.03, 0.006, p=0.2, n=194),
            "human": _est(0.071, 0.05, 0.09, n=44),
            "llm": _est(0.083, 0.07, 0.095, n=150),
            "note": "human: every human item under the band's context scope; llm: the primary band",
        },
        "equivalence": {
            "bootstrap": {
                "bounds": [-0.02, 0.02],
                "ci_90": [0.0014, 0.0081],
                "equivalent": True,
                "p": 0.0196,
                "p_lower": 0.0196,
                "p_upper": 0.0003,
            },
            "contrast": "EN - PT (pt_gap)",
            "equivalent": True,
            "estimate": 0.0049,
            "n": 300,
            "n_articles": 11,
            "paired_article_means": {"n": 11, "p": 0.3, "p_lower": 0.3, "p_upper": 0.001},
        },
        "parse_rule": {
            "A": _rule(0.081),
            "B": _rule(0.079),
            "difference_h1_micro": _est(0.002, -0.001, 0.005),
        },
    }


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _section(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}"')
    return _text(html[start : html.index("</section>", start)])


def test_h4_shows_human_llm_then_their_difference_from_typed_fields() -> None:
    h4 = _section(render_report(_document(), None), "result-h4")
    assert "Alternative two-sided" in h4 and "Note human: every human item" in h4
    # The difference last, after the two groups it is taken between (the walker kept key order).
    assert h4.index("Human-written items 0.071 [0.050, 0.090]") < h4.index("LLM-generated items 0.083")
    assert h4.index("LLM-generated items 0.083") < h4.index("Difference -0.012 [-0.030, 0.006] 0.200")


def test_h4_that_could_not_be_computed_says_why_once() -> None:
    document = {"h4": {"status": "not available", "identifiable": False, "reason": "no human items"}}
    h4 = _section(render_report(document, None), "result-h4")
    assert "not identifiable: no human items" in h4 and "Difference" not in h4


def test_parse_rule_lists_each_rules_estimands_in_the_h1_order_and_its_counts() -> None:
    rules = _section(render_report(_document(), None), "result-parse_rule")
    assert "Difference in H1 micro (A \u2212 B) 0.002 [-0.001, 0.005]" in rules
    rule_a = rules[rules.index("Rule A (parse failures score 0)") : rules.index("Rule B (parse failures")]
    # The H1 summary's order (micro, macro, PT gap, macro net, micro net), not the keys' sorted order.
    order = [
        "H1 micro CLCG 0.081",
        "Macro CLCG 0.070",
        "Portuguese gap",
        "Macro net 0.020",
        "Micro net 0.021",
    ]
    assert [rule_a.index(label) for label in order] == sorted(rule_a.index(label) for label in order)
    assert "Rule A (parse failures score 0) \u203a rows counted English 150 Target 140 Baseline 150" in rule_a
    assert "H1 micro CLCG 0.079" in rules[rules.index("Rule B (parse failures") :]


def test_equivalence_shows_the_gap_the_bootstrap_facts_and_the_paired_tost() -> None:
    equivalence = _section(render_report(_document(), None), "result-equivalence")
    assert "Equivalence 0.005" in equivalence and "Contrast: EN - PT (pt_gap); Equivalent: yes" in equivalence
    assert "Bootstrap TOST Bounds -0.020, 0.020 90% CI 0.0014, 0.0081 Equivalent yes p 0.020" in equivalence
    assert "Paired article means (t-based TOST) estimate" in equivalence and "0.300 11" in equivalence


def test_a_withheld_bootstrap_tost_shows_its_reason_and_no_p_value() -> None:
    document = _document()
    document["equivalence"]["bootstrap"] |= {"identifiable": False, "reason": "1 article (< 10)"}
    equivalence = _section(render_report(document, None), "result-equivalence")
    bootstrap = equivalence[equivalence.index("Bootstrap TOST") : equivalence.index("Paired article")]
    assert "not identifiable: 1 article (< 10)" in bootstrap
    assert "90% CI" not in bootstrap and "p (lower bound test)" not in bootstrap


@pytest.mark.parametrize(
    ("section", "broken", "field"),
    [
        ("h4", {"difference": {"estimate": "0.01"}}, r"h4\.difference\.estimate"),
        ("equivalence", {"bootstrap": {"ci90": [0.0, 0.1]}}, r"equivalence\.bootstrap\.ci90"),
        ("parse_rule", {"A": {"n": {"articles": 1.5}}}, r"parse_rule\.A\.n\.articles"),
    ],
)
def test_a_section_of_another_shape_is_refused_naming_the_field(
    section: str, broken: dict[str, Any], field: str
) -> None:
    with pytest.raises(DocumentError, match=rf"section '{section}', field {field}"):
        render_report({section: broken}, None)


def _estimates() -> pd.DataFrame:
    """The estimates table as the suite writes it, without the columns that say why a row is withheld."""
    return pd.DataFrame(
        {
            "estimand": ["pt_gap", "h1_micro", "tost_en_pt"],
            "group": ["all", "all", "all"],
            "estimate": [0.1, 0.08, 0.005],
            "ci_low": [0.09, 0.07, None],
            "ci_high": [0.11, 0.09, None],
            "p": [None, 0.0005, 0.0196],
            "p_adj": [None, None, None],
            "n": [300, 150, 300],
        }
    )


def test_the_appendix_takes_flags_and_p_bounds_from_the_flat_estimands_index() -> None:
    # ``estimands`` as analysis/_suite.py writes it: one flat key per row, "<estimand>/<group>".
    document = {
        "estimands": {
            "pt_gap/all": {"estimate": 0.1, "identifiable": False, "reason": "1 article (< 10)"},
            "h1_micro/all": {"estimate": 0.08, "p": 0.0005, "p_bound": True, "identifiable": True},
            "tost_en_pt/all": {"estimate": 0.005, "identifiable": True, "flags": []},
        }
    }
    html = render_report(document, _estimates())
    rows = {_text(m).split(" ")[0]: m for m in re.findall(r"<tr[^>]*>.*?</tr>", _section_html(html), re.S)}
    assert 'class="flagged"' in rows["pt_gap"] and "not identifiable: 1 article (&lt; 10)" in rows["pt_gap"]
    assert "\u22640.0005" in _text(rows["h1_micro"])  # the p at the bootstrap's floor, from the index
    assert 'class="flagged"' not in rows["tost_en_pt"]


def _section_html(html: str) -> str:
    start = html.index('<section id="estimates"')
    return html[start : html.index("</section>", start)]
