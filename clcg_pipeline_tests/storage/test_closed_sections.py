"""The last open fields of ``study_results.json`` have closed shapes (issue 34): ``context_scope``
(a pydantic model), ``model_contrasts.pairs`` and both ``multiplicity`` families, the new model's
``differences``, ``settings.code_version`` (and ``settings.sources``' field types: an entry
stays open to further keys, see ``SourceEntry``), ``warnings``, ``excluded_versions``,
``human_validation``'s keypoint and consensus counts, and ``granularity``'s ``settings`` and
``prompt_tokens_by_task``. What their producers write fits (the suite's golden document, the
results and validation functions' own output); a misspelt key or a wrong type is refused where
the document is written and read, naming the field. Before, each was ``Any`` or
``dict[str, Any]`` and took anything."""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.corpus import audit_corpus
from clcg_pipeline.results import drop_incomplete_versions, new_model_block, split_model_pairs
from clcg_pipeline.storage import DocumentError, validate_document
from clcg_pipeline_tests.storage.conftest import SOURCE, golden_results

PAIR = "model-a vs model-b"


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return golden_results()


def _excluded_versions() -> list[dict[str, Any]]:
    """``excluded_versions`` as results/_inputs.py writes it: one German version half missing."""
    articles = pd.DataFrame({"doc_id": ["d1", "d1"], "language": ["en", "de"]})
    paragraphs = pd.DataFrame(
        {
            "doc_id": ["d1"] * 3,
            "language": ["en", "en", "de"],
            "pid": ["p1", "p2", "p1"],
            "ordinal": [0, 1, 0],
            "text": ["One.", "Two.", " "],
        }
    )
    audit = audit_corpus(articles, paragraphs, reference="en", threshold=0.9)
    scores = pd.DataFrame({"doc_id": ["d1", "d1"], "language": ["en", "de"]})
    _, excluded = drop_incomplete_versions(scores, audit)
    return list(excluded.to_dict(orient="records"))


def _human_validation() -> dict[str, Any]:
    """The keypoint and consensus counts as validation/human writes them."""
    from clcg_pipeline.validation.human._estimands import max_adequacy_incomplete
    from clcg_pipeline.validation.human._joins import judge_consensus

    singles = pd.DataFrame(
        {"task_id": ["t1", "t1", "t2"], "adequacy": [5, 5, 4], "keypoint_recall": [0.5, 1.0, 0.5]}
    )
    rows = pd.DataFrame(
        {
            "annotation_id": ["r1", "r1", "r2", "r2"],
            "judge": ["j1", "j2", "j1", "j2"],
            "judge_label": ["correct", "correct", "correct", "wrong_answer"],
            "human": ["correct", "correct", "wrong_answer", "wrong_answer"],
        }
    )
    return {
        "status": "ok",
        "max_adequacy_incomplete_keypoints": max_adequacy_incomplete(singles),
        "judge_consensus": judge_consensus(rows),
    }


def _granularity() -> dict[str, Any]:
    """``granularity.settings`` and ``prompt_tokens_by_task`` as granularity/_analysis writes them."""
    from clcg_pipeline.granularity._analysis._results import _settings

    ctx = SimpleNamespace(
        replicates=200, seed=7, confidence=0.95, min_articles=10, roles=SimpleNamespace(reference="en")
    )
    settings = {**_settings(ctx, 12, 480), "rows_no_reference": 0, "paragraphs_left_out": 2}  # type: ignore[arg-type]
    tokens = {
        "task": "paragraph_fill",
        "calls": 4,
        "prompt_tokens_total": 800,
        "prompt_tokens_mean": 200.0,
        "prompt_tokens_max": 260,
        "output_tokens_total": 40,
        "cost_usd": None,
    }
    return {"status": "ok", "settings": settings, "prompt_tokens_by_task": [tokens]}


@pytest.fixture(scope="module")
def document(golden: dict[str, Any]) -> dict[str, Any]:
    """The golden document with every newly closed field as its producer writes it."""
    out = copy.deepcopy(golden)
    out["settings"]["code_version"] = {"package": "0.1.0", "git_commit": None}
    out["settings"]["sources"] = [
        {"name": "demo", "kind": "demo", "role": "primary", "path": None, "split": None},
        {
            "name": "flores",
            "kind": "flores",
            "role": "auxiliary",
            "path": "s3://bucket/f",
            "split": "devtest",
        },
    ]
    out["new_model"] = new_model_block(out, "model-a")
    out["excluded_versions"] = _excluded_versions()
    out["human_validation"] = _human_validation()
    out["granularity"] = _granularity()
    out["code_version"] = {"package": "0.1.0", "git_commit": "abc123"}
    return out


def test_what_the_producers_write_fits(document: dict[str, Any]) -> None:
    assert document["context_scope"]["full_body"]["n_articles"] == 5  # the section with its estimates
    assert document["new_model"]["differences"] and document["excluded_versions"]
    assert document["excluded_versions"][0]["language"] == "de"
    validate_document(document, source=SOURCE)
    # Once the pairs move to their table, each family's lists become counts: still its shape.
    compact = copy.deepcopy(document)
    split_model_pairs(compact)  # type: ignore[arg-type]
    assert "tests_in" in compact["model_contrasts"]["multiplicity"]["h1_micro"]
    validate_document(compact, source=SOURCE)
    # A study without item_grounded rows says so only; older documents keep a string code version.
    older = {"context_scope": {"status": "not available: no item_grounded rows"}, "code_version": "0.1.0"}
    validate_document(older, source=SOURCE)
    validate_document(document["human_validation"], "human_validation", source="human_validation.json")
    validate_document(document["granularity"], "granularity", source="granularity.json")


def _set(document: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    target: Any = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


def _rename(document: dict[str, Any], path: tuple[str | int, ...], new: str) -> None:
    target: Any = document
    for part in path[:-1]:
        target = target[part]
    target[new] = target.pop(path[-1])


# (the field changed, how: a misspelt key or a value of the wrong type, the field the error names)
CASES = [
    (("context_scope", "full_body"), "full_bdy", "context_scope.full_bdy"),
    (("context_scope", "articles"), "5", "context_scope.articles"),
    (("context_scope", "difference", "estimate"), "0.1", "context_scope.difference.estimate"),
    (("model_contrasts", "pairs", PAIR, "model_a"), "modle_a", f"model_contrasts.pairs.{PAIR}.modle_a"),
    (
        ("model_contrasts", "pairs", PAIR, "h1_micro", "ci_low"),
        "low",
        f"model_contrasts.pairs.{PAIR}.h1_micro.ci_low",
    ),
    (("model_contrasts", "multiplicity", "macro", "m"), "3", "model_contrasts.multiplicity.macro.m"),
    (("multiplicity", "method"), "methd", "multiplicity.methd"),
    (("multiplicity", "tests", 0, "p_adj"), "0.2", "multiplicity.tests[0].p_adj"),
    (("new_model", "differences", 0, "other"), "othr", "new_model.differences[0].othr"),
    (("settings", "sources", 0, "path"), 3, "settings.sources[0].path"),
    (("settings", "sources", 1, "split"), ["devtest"], "settings.sources[1].split"),
    (("settings", "code_version", "git_commit"), "git_comit", "settings.code_version.git_comit"),
    (("code_version", "package"), "pkg", "code_version.pkg"),
    (("warnings",), [{"message": "a warning as a mapping"}], "warnings[0]"),
    (("excluded_versions", 0, "coverage"), "0.5", "excluded_versions[0].coverage"),
    (("excluded_versions", 0, "doc_id"), "docid", "excluded_versions[0].docid"),
    (
        ("human_validation", "max_adequacy_incomplete_keypoints", "ratings"),
        "2",
        "human_validation.max_adequacy_incomplete_keypoints.ratings",
    ),
    (("human_validation", "judge_consensus", "share"), "shares", "human_validation.judge_consensus.shares"),
    (("granularity", "settings", "seed"), "7", "granularity.settings.seed"),
    (("granularity", "settings", "reference"), "referense", "granularity.settings.referense"),
    (("granularity", "prompt_tokens_by_task"), {"paragraph_fill": 800}, "granularity.prompt_tokens_by_task"),
]


@pytest.mark.parametrize(("path", "change", "field"), CASES, ids=[c[2] for c in CASES])
def test_a_misspelt_key_or_a_wrong_type_is_refused_naming_the_field(
    document: dict[str, Any], path: tuple[str | int, ...], change: Any, field: str
) -> None:
    bad = copy.deepcopy(document)
    # A string equal to a key name renames that key; anything else replaces the value.
    renames = isinstance(change, str) and field.endswith("." + change)
    if renames:
        _rename(bad, path, change)
    else:
        _set(bad, path, change)
    with pytest.raises(DocumentError) as refused:
        validate_document(bad, source=SOURCE)
    message = str(refused.value)
    assert message.startswith(f"{SOURCE}: section {path[0]!r}, field {field}:"), message
    assert ("does not declare" in message) == renames, message
    assert re.search(r"\(the shape is StudyResultsDocument, clcg_pipeline\.storage\)$", message)
