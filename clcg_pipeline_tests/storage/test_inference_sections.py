"""The ``equivalence``, ``parse_rule``, ``h4`` and ``mixed_effects`` sections are pydantic models
(issue 34): the suite's own output fits them (a full panel, and the shapes it writes when a
section cannot be computed or its intervals are withheld), read back as typed fields; a misspelt
key or a wrong type is refused where the document is written (``validate_document``), naming the
field. Before, the four sections were open mappings and took anything."""

from __future__ import annotations

from typing import Any

import pytest

from clcg_pipeline.storage import (
    EquivalenceResults,
    H4Results,
    MixedEffectsResults,
    ParseRuleResults,
    validate_document,
)
from clcg_pipeline_tests.storage.conftest import SOURCE, golden_results, refused

# The four sections of the golden document, exactly as analysis/sections/h1.py, h4.py and
# mixed.py write them.
SECTIONS = ("equivalence", "parse_rule", "h4", "mixed_effects")


def _withheld() -> dict[str, Any]:
    """The shapes of a study below ``min_articles`` (the demo's): the mixed fits not run, Rule B
    and both TOSTs withheld by results/_identifiability.py, H4 without human items."""
    reason = "too few articles: 6 < study.min_articles = 10"
    not_run = {"estimate": None, "ci_low": None, "ci_high": None, "p": None, "converged": False}
    fit = {
        **not_run,
        "status": f"not identifiable: {reason}",
        "reason": reason,
        "n": 120,
        "n_articles": 6,
        "identifiable": False,
        "flags": [],
        "p_bound": False,
    }
    gap = {"estimate": 0.112, "ci_low": None, "ci_high": None}
    withheld_gap = {**gap, "identifiable": False, "reason": reason}
    counts = {"english": 60, "target": 90, "baseline": 60, "articles": 6}
    return {
        "mixed_effects": {"aggregation": "cell means", "h1": fit, "h2": dict(fit)},
        "parse_rule": {
            "A": {"h1_micro": {"estimate": 0.11, "ci_low": None, "ci_high": None, "identifiable": False}},
            "B": {"h1_micro": withheld_gap, "n": counts},
        },
        "equivalence": {
            "contrast": "EN - PT (pt_gap)",
            "bootstrap": {
                "bounds": [-0.02, 0.02],
                "p_lower": None,
                "p_upper": None,
                "p": None,
                "ci_90": None,
                "equivalent": None,
                "identifiable": False,
            },
            "paired_article_means": {"p": None, "n": 2},
            "estimate": 0.107,
            "equivalent": None,
            "n": 120,
            "n_articles": 6,
            "identifiable": False,
            "reason": reason,
        },
        "h4": {
            "status": "not available: needs both human and llm rows",
            "identifiable": False,
            "reason": "needs both human and llm rows",
        },
    }


def test_the_suites_sections_fit_and_read_as_typed_fields() -> None:
    document = golden_results(*SECTIONS)
    validate_document(document, source=SOURCE)
    equivalence = EquivalenceResults.model_validate(document["equivalence"])
    assert equivalence.bootstrap is not None and equivalence.bootstrap.bounds == [-0.02, 0.02]
    assert equivalence.paired_article_means is not None and equivalence.paired_article_means.n == 24
    rules = ParseRuleResults.model_validate(document["parse_rule"])
    assert rules.A is not None and rules.A.h1_micro is not None and rules.A.h1_micro.n_articles == 24
    assert rules.B is not None and rules.B.n is not None and rules.B.n.articles == 24
    h4 = H4Results.model_validate(document["h4"])
    assert h4.difference is not None and h4.alternative == "two-sided"
    mixed = MixedEffectsResults.model_validate(document["mixed_effects"])
    assert mixed.fit("h1") is mixed.h1 and mixed.h1 is not None and mixed.h1.term == "english"
    assert mixed.h2 is not None and mixed.h2.variance_components is not None
    assert "article" in mixed.h2.variance_components and mixed.fit("h3") is None


def test_the_withheld_and_not_computed_shapes_fit() -> None:
    document = _withheld()
    validate_document(document, source=SOURCE)
    h4 = H4Results.model_validate(document["h4"])
    assert (
        h4.identifiable is False
        and h4.difference is None
        and h4.model_fields_set
        == {
            "status",
            "identifiable",
            "reason",
        }
    )


# One misspelt key per section, at the depth a producer writes it.
MISSPELT = [
    ("equivalence", ("bootstrap",), "ci90", "equivalence.bootstrap.ci90"),
    ("parse_rule", ("B",), "h1_mikro", "parse_rule.B.h1_mikro"),
    ("h4", ("difference",), "p_val", "h4.difference.p_val"),
    ("mixed_effects", ("h2",), "p_one_sided", "mixed_effects.h2.p_one_sided"),
]


@pytest.mark.parametrize(("section", "path", "key", "field"), MISSPELT, ids=[m[0] for m in MISSPELT])
def test_a_misspelt_key_is_refused_naming_it(
    section: str, path: tuple[str, ...], key: str, field: str
) -> None:
    document = golden_results(*SECTIONS)
    block = document[section]
    for part in path:
        block = block[part]
    block[key] = 0.5
    message = refused(validate_document, document)
    said = "a key its shape does not declare"
    assert message.startswith(f"{SOURCE}: section '{section}', field {field}: {said}")


# One wrong-typed value per section: a number as text, a count as a float, a verdict as a number.
WRONG_TYPE = [
    ("equivalence", ("bootstrap",), "equivalent", 1, "equivalence.bootstrap.equivalent", "valid boolean"),
    ("parse_rule", ("A", "n"), "articles", 24.0, "parse_rule.A.n.articles", "valid integer"),
    ("h4", ("human",), "estimate", "0.08", "h4.human.estimate", "valid number"),
    ("mixed_effects", ("h1",), "converged", "yes", "mixed_effects.h1.converged", "valid boolean"),
]


@pytest.mark.parametrize(
    ("section", "path", "key", "value", "field", "said"), WRONG_TYPE, ids=[w[0] for w in WRONG_TYPE]
)
def test_a_wrong_typed_field_is_refused_naming_it(
    section: str, path: tuple[str, ...], key: str, value: object, field: str, said: str
) -> None:
    document = golden_results(*SECTIONS)
    block = document[section]
    for part in path:
        block = block[part]
    block[key] = value
    message = refused(validate_document, document)
    assert message.startswith(f"{SOURCE}: section '{section}', field {field}:") and said in message


def test_a_section_of_another_type_is_refused() -> None:
    # An old fixture's flat H4 (one estimate at the top) is no longer taken for the section.
    message = refused(
        validate_document, {"h4": {"estimate": -0.01, "ci_low": -0.02, "ci_high": 0.0, "p": 0.5}}
    )
    assert "section 'h4', field h4.estimate: a key its shape does not declare" in message
