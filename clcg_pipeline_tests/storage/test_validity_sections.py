"""The ``nomological``, ``replication``, ``joshi_class`` and ``metric_sensitivity`` sections are
pydantic models (issue 34): the suite's own document fits them where it is written
(``validate_document``) and read (``study_results_view``), reads back as typed fields, and a
misspelt key or a value of another type is refused naming the field."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from clcg_pipeline.storage import (
    JoshiClassResults,
    MetricSensitivityResults,
    NomologicalResults,
    ReplicationResults,
    StudyResultsDocument,
    study_results_view,
    validate_document,
)
from clcg_pipeline_tests.storage.conftest import golden_results, refused

# The golden document's four sections (it has every section, with replication scores).
SECTIONS = ("nomological", "replication", "joshi_class", "metric_sensitivity")


def test_the_document_declares_the_four_sections_with_their_models() -> None:
    hints = typing.get_type_hints(StudyResultsDocument)
    assert hints["nomological"] is NomologicalResults
    assert hints["replication"] is ReplicationResults
    assert hints["joshi_class"] is JoshiClassResults
    assert hints["metric_sensitivity"] is MetricSensitivityResults


def test_the_producers_sections_fit_and_read_as_typed_fields() -> None:
    document = golden_results(*SECTIONS)
    validate_document(document, source="run/study_results.json")
    view = study_results_view(document)
    nom, rep, classes, metrics = view.nomological, view.replication, view.joshi_class, view.metric_sensitivity
    assert nom is not None and nom.spearman is not None and nom.standardized_ols is not None
    golden = golden_results(*SECTIONS)
    assert nom.spearman["fertility"].rho == golden["nomological"]["spearman"]["fertility"]["rho"]
    assert nom.spearman_joshi_sensitivity is not None and nom.spearman_joshi_sensitivity.languages
    assert nom.partial_spearman_on_joshi is not None and set(nom.partial_spearman_on_joshi) == {
        "fertility",
        "non_latin",
    }
    assert rep is not None and rep.h1 is not None and rep.spearman is not None and rep.band is not None
    assert rep.h1.summary().keys() == {"h1_micro", "macro", "pt_gap", "macro_net", "micro_net"}
    assert (
        rep.languages == golden["replication"]["languages"] and rep.n_rows == golden["replication"]["n_rows"]
    )
    assert (
        classes is not None
        and classes.primary is not None
        and classes.mappings().keys()
        == {
            "primary",
            "sensitivity",
        }
    )
    first = next(iter(classes.primary.values()))
    assert first.raw is not None and first.raw.estimate is not None and first.languages
    assert metrics is not None and metrics.metrics is not None
    assert metrics.metrics["semsim"].computed is False and metrics.metrics["semsim"].reason
    assert metrics.metrics["token_f1"].estimate("h1_micro").estimate is not None


def test_a_replication_without_scores_says_why_only() -> None:
    document = {
        "replication": {
            "status": "not available: no replication scores",
            "identifiable": False,
            "reason": "no replication scores (study.replication_scores not set or empty)",
        }
    }
    validate_document(document, source="run/study_results.json")
    replication = study_results_view(document).replication
    assert replication is not None and replication.h1 is None
    assert replication.model_fields_set == {"status", "identifiable", "reason"}


# (section, path to the mapping, misspelt key): a renamed field in each section.
MISSPELT = [
    ("nomological", ("nomological", "standardized_ols"), "coefficents"),
    ("nomological", ("nomological", "spearman", "fertility"), "rhoo"),
    ("replication", ("replication", "h1", "h1_micro"), "ci_lo"),
    ("replication", ("replication", "band"), "levles"),
    ("joshi_class", ("joshi_class", "primary", "2"), "nett"),
    ("metric_sensitivity", ("metric_sensitivity", "metrics", "rouge_l"), "h1_mikro"),
]


def _at(document: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    value: Any = document
    for key in path:
        value = value[key]
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
@pytest.mark.parametrize(("section", "path", "key"), MISSPELT, ids=[f"{m[0]}.{m[2]}" for m in MISSPELT])
def test_a_misspelt_key_is_refused_naming_it(
    call: Any, section: str, path: tuple[str, ...], key: str
) -> None:
    document = golden_results(*SECTIONS)
    _at(document, path)[key] = 1.0
    message = refused(call, document)
    field = ".".join((*path, key))
    assert f"section '{section}', field {field}: a key its shape does not declare" in message, message


# (path to the mapping, key, a value of another type, what the message says it should be)
WRONG_TYPE = [
    (("nomological", "spearman", "fertility"), "n", "4", "valid integer"),
    (("nomological", "partial_spearman_on_joshi", "fertility"), "rho", "0.3", "valid number"),
    (("replication", "spearman"), "identifiable", "yes", "valid boolean"),
    (("replication",), "languages", "sw, am", "valid list"),
    (("joshi_class", "primary", "2", "raw"), "ci_low", "0.01", "valid number"),
    (("joshi_class",), "unclassified", [5], "valid string"),
    (("metric_sensitivity", "metrics", "semsim"), "computed", "no", "valid boolean"),
    (("metric_sensitivity",), "band_metric", 1, "valid string"),
]


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
@pytest.mark.parametrize(
    ("path", "key", "value", "expected"), WRONG_TYPE, ids=[".".join((*w[0], w[1])) for w in WRONG_TYPE]
)
def test_a_wrong_typed_field_is_refused_naming_it(
    call: Any, path: tuple[str, ...], key: str, value: object, expected: str
) -> None:
    document = golden_results(*SECTIONS)
    _at(document, path)[key] = value
    message = refused(call, document)
    field = ".".join((*path, key))
    assert f"section '{path[0]}', field {field}" in message and expected in message, message


@pytest.mark.parametrize(
    ("n_articles", "drop"), [(4, ["pt"]), (3, ["sw", "am"])], ids=["no-pt", "one-target"]
)
def test_the_suites_sections_fit_on_small_and_partial_panels(n_articles: int, drop: list[str]) -> None:
    """The producers on panels with a language missing (replication scores from the same panel):
    sections with withheld intervals, undefined Spearmans and an unfitted OLS still fit."""
    from clcg_pipeline.analysis import run_suite
    from clcg_pipeline.config import load_config
    from clcg_pipeline.synthetic import synthetic_config, synthetic_fertility, synthetic_scores

    config = synthetic_config(load_config("assets_config"), n_models=2)
    scores = synthetic_scores(
        config.languages, n_models=2, n_articles=n_articles, n_stability=0, items_per_level=1, seed=3
    )
    scores = scores[~scores.language.isin(drop)]
    results = run_suite(
        scores,
        config,
        fertility=synthetic_fertility(config.languages),
        replication_scores=scores,
        replicates=20,
    ).results
    document = {name: results[name] for name in SECTIONS}
    validate_document(document, source="run/study_results.json")
    view = study_results_view(document)
    assert view.replication is not None and view.replication.h1 is not None
    assert view.nomological is not None and view.nomological.spearman is not None
