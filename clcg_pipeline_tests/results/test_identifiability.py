"""One identifiability rule for every section of study_results.json (issue 34, item 1).

The estimates table decides whether an estimand's interval and p may be shown; the sections that
restate an estimand in their own shape (Rule B, the EN-PT equivalence tests) follow it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from clcg_pipeline.analysis import run_suite
from clcg_pipeline.config import StudyConfig
from clcg_pipeline.results import as_written, withheld_reasons, withhold_unidentifiable
from clcg_pipeline.synthetic import synthetic_articles, synthetic_config, synthetic_scores

REASON = "too few articles: 6 < study.min_articles = 10"
#: Fields that state an interval, a p value or a test's verdict.
SHOWN = ("ci_low", "ci_high", "ci_90", "p", "p_adj", "p_lower", "p_upper", "equivalent")


def withheld_numbers(node: object, path: str = "") -> Iterator[str]:
    """Every interval, p or verdict still shown inside a block marked not identifiable."""
    if isinstance(node, dict):
        if node.get("identifiable") is False:
            yield from (f"{path}.{k}" for k in SHOWN if node.get(k) is not None)
        for key, value in node.items():
            yield from withheld_numbers(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from withheld_numbers(value, f"{path}[{index}]")


def _small_document() -> dict[str, Any]:
    """The demo's shape: Rule B and the TOST carry intervals the estimates table withholds."""
    row = {"identifiable": False, "reason": REASON, "ci_low": None, "ci_high": None, "p": None}
    return {
        "estimands": {
            "h1_micro_rule_b/all": row,
            "tost_en_pt/all": row,
            "macro_rule_b/all": {"identifiable": True},
        },
        "parse_rule": {
            "A": {"h1_micro": {"estimate": 0.11, "ci_low": None, "ci_high": None, "identifiable": False}},
            "B": {
                "h1_micro": {"estimate": 0.112, "ci_low": 0.080, "ci_high": 0.137},
                "macro": {"estimate": 0.111, "ci_low": 0.079, "ci_high": 0.136},
                "n": {"articles": 6},
            },
        },
        "equivalence": {
            "bootstrap": {"bounds": [-0.02, 0.02], "ci_90": [0.081, 0.130], "equivalent": False, "p": 1.0},
            "paired_article_means": {"n": 6, "p": 0.996, "p_lower": 0.0005, "p_upper": 0.996},
            "equivalent": False,
            "estimate": 0.107,
            "n_articles": 6,
        },
        "model_contrasts": {
            "pairs": {"a vs b": {"h1_micro": {"identifiable": False, "p": None, "p_adj": 0.4}}}
        },
    }


def test_sections_follow_the_estimates_tables_decision() -> None:
    document = _small_document()
    out = withhold_unidentifiable(document)
    rule_b = out["parse_rule"]["B"]["h1_micro"]
    assert rule_b == {
        "estimate": 0.112,
        "ci_low": None,
        "ci_high": None,
        "identifiable": False,
        "reason": REASON,
    }
    equivalence = out["equivalence"]
    assert equivalence["identifiable"] is False and equivalence["reason"] == REASON
    assert equivalence["equivalent"] is None and equivalence["estimate"] == 0.107
    assert equivalence["bootstrap"]["ci_90"] is None and equivalence["bootstrap"]["p"] is None
    assert equivalence["bootstrap"]["bounds"] == [-0.02, 0.02]  # the config's bounds, not a result
    assert equivalence["paired_article_means"]["p"] is None and equivalence["paired_article_means"]["n"] == 6
    assert "reason" not in equivalence["bootstrap"]  # said once, on the estimand's block
    assert out["model_contrasts"]["pairs"]["a vs b"]["h1_micro"]["p_adj"] is None
    assert list(withheld_numbers(out)) == []
    # Identifiable in the estimates table: shown as computed.
    assert out["parse_rule"]["B"]["macro"] == document["parse_rule"]["B"]["macro"]
    # Pure: the input is left as it was.
    assert document["parse_rule"]["B"]["h1_micro"]["ci_low"] == 0.080
    assert withheld_reasons(document["estimands"]) == {
        "h1_micro_rule_b/all": REASON,
        "tost_en_pt/all": REASON,
    }


@pytest.fixture(scope="module")
def config(project, small_langs):
    return synthetic_config(project, n_models=2).model_copy(
        update={"languages": small_langs, "study": StudyConfig(bootstrap_replicates=60)}
    )


def _suite_document(config, n_articles: int) -> dict[str, Any]:
    opts = {"n_models": 2, "n_stability": 0, "items_per_level": 2, "human_per_article": 2, "seed": 5}
    scores = synthetic_scores(config.languages, n_articles=n_articles, **opts)
    result = run_suite(scores, config, articles=synthetic_articles(n_articles, seed=5))
    return as_written(result.results)


def test_too_few_articles_withholds_rule_b_and_the_equivalence_tests(config) -> None:
    document = _suite_document(config, n_articles=3)
    estimands = document["estimands"]
    assert estimands["h1_micro_rule_b/all"]["identifiable"] is False
    out = withhold_unidentifiable(document)
    for gap in ("h1_micro", "macro", "pt_gap", "macro_net", "micro_net"):
        block = out["parse_rule"]["B"][gap]
        assert block["identifiable"] is False and block["ci_low"] is None and block["ci_high"] is None
        assert block["reason"] == estimands[f"{gap}_rule_b/all"]["reason"]
    assert out["equivalence"]["bootstrap"]["ci_90"] is None and out["equivalence"]["bootstrap"]["p"] is None
    assert out["equivalence"]["reason"] == estimands["tost_en_pt/all"]["reason"]
    assert list(withheld_numbers(out)) == []


def test_identifiable_estimates_keep_their_numbers(config) -> None:
    """At or above study.min_articles every section is left exactly as the suite wrote it."""
    document = _suite_document(config, n_articles=14)
    assert document["estimands"]["h1_micro_rule_b/all"]["identifiable"] is True
    assert document["estimands"]["tost_en_pt/all"]["identifiable"] is True
    out = withhold_unidentifiable(document)
    for section in ("parse_rule", "equivalence", "model_contrasts", "h1"):
        assert out[section] == document[section], section
    assert out["parse_rule"]["B"]["h1_micro"]["ci_low"] is not None
    assert out["equivalence"]["bootstrap"]["ci_90"] is not None
