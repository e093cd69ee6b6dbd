"""The ``settings`` section is a pydantic model (issue 34): checked where the document is written
(``validate_document``) and read (``study_results_view``), a wrong-typed or unknown field refused
naming it, and read back as typed fields (the languages with and without data among them)."""

from __future__ import annotations

from typing import Any

import pytest

from clcg_pipeline.storage import StudySettings, study_results_view, validate_document
from clcg_pipeline_tests.storage.conftest import refused


def _settings() -> dict[str, Any]:
    """``settings`` as analysis/_settings.py writes it (and results/_inputs.py completes it)."""
    return {
        "seed": 7,
        "replicates": 200,
        "confidence": 0.95,
        "min_articles": 5,
        "band": {"levels": ["L1"], "item_source": "llm", "context_scope": "full_body", "metric": "token_f1"},
        "rule": "A",
        "replicate_rule": "mean of the replicates",
        "config_hash": "abc123",
        "bootstrap": "article-cluster",
        "n_rows": 120,
        "n_band_rows": 100,
        "models": [
            {"id": "m1", "provider": "offline", "model": "lexical", "knowledge_cutoff": None},
            {"id": "m2", "provider": "p", "model": "x", "knowledge_cutoff": "2024-01-01", "simulated": "yes"},
        ],
        "sources": [{"name": "demo", "kind": "folder", "role": "primary", "path": "corpus", "split": None}],
        "languages_with_data": ["en", "sw"],
        "languages_without_data": [{"iso": "eu", "name": "Basque", "role": "target", "reason": "no rows"}],
        "code_version": {"package": "0.1.0", "git_commit": None},
        "generated_at": "2026-12-05T10:00:00+00:00",
    }


def test_the_producers_settings_fit_and_read_as_typed_fields() -> None:
    document = {"settings": _settings(), "h1": {"settings": {"bootstrap_replicates": 500}}}
    validate_document(document, source="run/study_results.json")
    settings = study_results_view(document).merged_settings()
    assert isinstance(settings, StudySettings) and settings.languages_with_data == ["en", "sw"]
    missing = settings.languages_without_data
    assert missing is not None and not isinstance(missing[0], str) and missing[0].reason == "no rows"
    assert settings.models is not None and settings.models[1].simulated == "yes"
    # Merged: h1.settings under the top-level settings, key by key.
    assert settings.bootstrap_replicates == 500 and settings.band is not None and settings.band.metric


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("languages_with_data", [{"iso": "sw"}]),
        ("languages_without_data", [{"iso": "eu", "reason": 3}]),
        ("models", [{"id": 1}]),
    ],
)
def test_a_wrong_typed_settings_field_is_refused_naming_it(call: Any, field: str, value: Any) -> None:
    document = {"settings": {**_settings(), field: value}}
    message = refused(call, document)
    assert message.startswith(f"run/study_results.json: section 'settings', field settings.{field}[0]"), (
        message
    )


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
def test_an_unknown_settings_key_is_refused_naming_it(call: Any) -> None:
    message = refused(call, {"h1": {"settings": {**_settings(), "seeed": 7}}})
    assert "section 'h1', field h1.settings.seeed: a key its shape does not declare" in message


def test_a_models_entry_keeps_the_fields_it_does_not_declare() -> None:
    entry = {"id": "m1", "provider": "p", "temperature": 0.0}
    view = study_results_view({"settings": {"models": [entry]}})
    assert view.models()[0].record() == entry
