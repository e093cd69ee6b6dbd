"""The documents the stages write conform to the shapes in ``clcg_pipeline.storage`` (keys and types).

The report reads study_results.json through those shapes, so a producer that renames or adds a
key must change the shape too; these tests fail until it does.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel, ValidationError

from clcg_pipeline.config import LanguagesConfig, ProjectConfig, default_config_dir, load_config
from clcg_pipeline.storage import (
    ErrorTaxonomyResults,
    GranularityResults,
    HumanValidationResults,
    StudyResultsDocument,
    document_keys,
)

synthetic = pytest.importorskip("clcg_pipeline.synthetic")
CONFIG_DIR = Path(__file__).resolve().parents[2] / "assets_config"


def _is_shape(hint: object) -> bool:
    return isinstance(hint, type) and hasattr(hint, "__optional_keys__")


def _conforms(value: object, hint: Any, path: str, errors: list[str]) -> None:
    """Append to ``errors`` every place where ``value`` does not fit ``hint`` (undeclared keys too)."""
    if hint is Any or hint is object:
        return
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        trials = []
        for option in options:
            found: list[str] = []
            _conforms(value, option, path, found)
            if not found:
                return
            trials.append(found)
        errors.append(f"{path}: fits none of {hint}: " + " | ".join(found[0] for found in trials))
        return
    if hint is type(None):
        if value is not None:
            errors.append(f"{path}: expected None, got {type(value).__name__}")
        return
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        # A section converted to a pydantic model (h2, context_gain): the model says what does not fit.
        try:
            hint.model_validate(value)
        except ValidationError as exc:
            errors.extend(f"{path}.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return
    if _is_shape(hint):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping ({hint.__name__}), got {type(value).__name__}")
            return
        hints = typing.get_type_hints(hint)
        for key, item in value.items():
            if key not in hints:
                errors.append(f"{path}.{key}: not declared in {hint.__name__}")
            else:
                _conforms(item, hints[key], f"{path}.{key}", errors)
        return
    if origin is list:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        (item_hint,) = typing.get_args(hint) or (Any,)
        for i, item in enumerate(value):
            _conforms(item, item_hint, f"{path}[{i}]", errors)
        return
    if origin is dict:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping, got {type(value).__name__}")
            return
        _, item_hint = typing.get_args(hint) or (str, Any)
        for key, item in value.items():
            _conforms(item, item_hint, f"{path}.{key}", errors)
        return
    expected: tuple[type, ...] = (int, float) if hint is float else (hint,)
    if (isinstance(value, bool) and hint is not bool) or not isinstance(value, expected):
        errors.append(f"{path}: expected {getattr(hint, '__name__', hint)}, got {type(value).__name__}")


def _assert_conforms(document: dict[str, Any], shape: type, name: str) -> None:
    document = json.loads(json.dumps(document, default=str))  # as study_results.json holds it
    errors: list[str] = []
    _conforms(document, shape, name, errors)
    assert not errors, "\n".join(errors[:20])


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return load_config(default_config_dir())


def test_analysis_document_conforms() -> None:
    analysis = pytest.importorskip("clcg_pipeline.analysis")
    config = synthetic.synthetic_config(load_config(CONFIG_DIR))
    scores = synthetic.synthetic_scores(config.languages, n_articles=8, n_stability=2, seed=3)
    suite = analysis.run_suite(
        scores,
        config,
        articles=synthetic.synthetic_articles(8),
        fertility=synthetic.synthetic_fertility(config.languages),
        replicates=30,
    )
    assert {"h1", "settings", "languages", "definitions", "estimands"} <= set(suite.results)
    _assert_conforms(suite.results, StudyResultsDocument, "study_results")


def test_error_taxonomy_document_conforms(config: ProjectConfig) -> None:
    validation = pytest.importorskip("clcg_pipeline.validation")
    taxonomy = validation.load_taxonomy("clcg-error-v1")
    sample, judgements, order = synthetic.synthetic_frames(
        200, 30, judges=("ja", "jb"), labels=taxonomy.labels, languages={"sw": 2, "fon": 0}, order_pairs=40
    )
    inputs = validation.AnalysisInputs(
        judges=("ja", "jb"),
        families={"ja": "alpha", "jb": "beta", "model-x": "alpha", "model-y": "gamma"},
        joshi={"sw": 2, "fon": 0},
        replicates=30,
        seed=7,
        confidence=0.95,
        min_articles=10,
    )
    doc = validation.analyse_error_taxonomy(sample, judgements, order, taxonomy, inputs, config).results
    assert doc["status"] == "ok" and doc["label_frequencies"] and doc["self_preference"]
    # Every key of the shape is written (the report shows each of them in a block of its own).
    assert document_keys(ErrorTaxonomyResults) == set(doc)
    _assert_conforms(doc, ErrorTaxonomyResults, "error_taxonomy")


def test_human_validation_document_conforms(config: ProjectConfig) -> None:
    validation = pytest.importorskip("clcg_pipeline.validation")
    annotations, sample, _ = synthetic.synthetic_human_study(
        singles=150, pairs=24, annotators=50, attention_failures=5, contradictory=1, invalid=4, fast=3, seed=3
    )
    estimates = pd.DataFrame(
        {
            "estimand": ["class_raw_primary"] * 4,
            "group": ["class=1", "class=2", "class=4", "class=5"],
            "estimate": [0.20, 0.12, 0.05, None],
        }
    )
    doc = validation.run_human_validation(config, annotations, sample, estimates=estimates).results
    assert doc["status"] == "ok" and doc["alpha"] and doc["preference"]
    _assert_conforms(doc, HumanValidationResults, "human_validation")
    awaiting = validation.run_human_validation(config, pd.DataFrame(), pd.DataFrame()).results
    _assert_conforms(awaiting, HumanValidationResults, "human_validation")


def test_granularity_document_conforms() -> None:
    granularity = pytest.importorskip("clcg_pipeline.granularity")
    base = load_config(CONFIG_DIR)
    languages = LanguagesConfig.model_validate(
        {
            "languages": [
                {"iso": "en", "name": "English", "script": "Latn", "joshi_class": 5, "role": "reference"},
                {"iso": "pt", "name": "Portuguese", "script": "Latn", "joshi_class": 4, "role": "baseline"},
                {"iso": "sw", "name": "Swahili", "script": "Latn", "joshi_class": 2, "role": "target"},
                {"iso": "fon", "name": "Fon", "script": "Latn", "joshi_class": 0, "role": "target"},
            ]
        }
    )
    enabled = base.study.granularity.model_copy(update={"enabled": True})
    study = base.study.model_copy(update={"granularity": enabled, "min_articles": 10})
    config = base.model_copy(update={"languages": languages, "study": study})
    scores = synthetic.synthetic_task_scores(
        ("en", "pt", "sw", "fon"), n_documents=15, gaps={"pt": 0.02, "sw": 0.1, "fon": 0.2}, seed=2
    )
    doc = granularity.analyse_granularity(scores, config, replicates=20).results
    assert doc["status"] == "ok" and doc["heatmap"] and doc["position_curve"]
    assert document_keys(GranularityResults) == set(doc)
    _assert_conforms(doc, GranularityResults, "granularity")
    empty = granularity.analyse_granularity(pd.DataFrame(), config).results
    _assert_conforms(empty, GranularityResults, "granularity")


def test_the_validator_catches_a_renamed_key() -> None:
    errors: list[str] = []
    _conforms({"status": "ok", "label_frequency": []}, ErrorTaxonomyResults, "error_taxonomy", errors)
    assert errors == ["error_taxonomy.label_frequency: not declared in ErrorTaxonomyResults"]
    errors = []
    _conforms({"pairs": "12"}, ErrorTaxonomyResults, "error_taxonomy", errors)
    assert errors and "pairs" in errors[0]
