"""The report's header and appendix read the ``settings`` section as typed fields (issue 34): the
merged settings (``StudyResults.merged_settings``), never the raw mappings; a settings field of
another type than its shape's is refused on read, naming it, never shown as text."""

from __future__ import annotations

from html import unescape
from typing import Any

import pytest

from clcg_pipeline.report import render_report
from clcg_pipeline.report._document import header_facts
from clcg_pipeline.storage import DocumentError, study_results_view

LANGS: dict[str, dict[str, Any]] = {
    "en": {"iso": "en", "name": "English", "role": "reference"},
    "sw": {"iso": "sw", "name": "Swahili", "role": "target"},
    "eu": {"iso": "eu", "name": "Basque", "role": "target"},
}


def _document() -> dict[str, Any]:
    return {
        "h1": {
            "h1_micro": {"estimate": 0.05, "ci_low": 0.04, "ci_high": 0.06},
            "by_language": {"sw": {"estimate": 0.05, "ci_low": 0.04, "ci_high": 0.06, "n": 10}},
            # Older documents put part of the settings here; the top-level settings win.
            "settings": {"languages_with_data": ["sw"], "config_hash": "0123456789abcdef99"},
        },
        "settings": {
            "sources": [{"name": "demo", "kind": "folder", "role": "primary"}],
            "models": [
                {
                    "id": "m1",
                    "provider": "offline",
                    "knowledge_cutoff": None,
                    "simulated": "yes",
                    "api_key": "sk-hidden",
                }
            ],
            "languages_with_data": ["en", "sw"],
            "languages_without_data": [{"iso": "eu", "name": "Basque", "reason": "no corpus version"}],
            "band": {"metric": "token_f1", "levels": ["L1"]},
            "generated_at": "2026-12-05T10:00:00+00:00",
        },
        "languages": list(LANGS.values()),
    }


def test_the_header_renders_from_the_typed_settings() -> None:
    view = study_results_view(_document())
    facts, missing = header_facts(view, LANGS, view.merged_settings())
    said = dict(facts)
    assert said["corpus"] == "demo (folder, primary)"
    assert said["models"] == "m1 (offline, no knowledge cutoff, simulated: yes)"  # no credential
    assert said["languages analysed"] == "English (en), Swahili (sw)"
    assert said["languages without data"].startswith("Basque (eu) (1 panel language")
    assert missing == [{"iso": "eu", "reason": "no corpus version"}]
    assert said["analysis band"] == "metric token_f1; levels L1"
    assert said["config hash"] == "0123456789abcdef"  # from h1.settings: merged
    text = unescape(render_report(_document(), None))
    assert "sk-hidden" not in text and "Basque (eu) (1 panel language" in text


@pytest.mark.parametrize(
    ("field", "value"),
    [("languages_with_data", [3]), ("languages_without_data", [{"iso": "eu", "reason": 1}])],
)
def test_a_wrong_typed_settings_field_is_refused_by_the_report(field: str, value: Any) -> None:
    document = _document()
    document["settings"][field] = value
    with pytest.raises(DocumentError, match=rf"section 'settings', field settings\.{field}\[0\]"):
        render_report(document, None)


def test_a_source_entry_with_a_credential_is_refused_naming_the_key_only() -> None:
    document = _document()
    document["settings"]["sources"][0]["api_key"] = "sk-hidden-source"
    for call in (study_results_view, lambda d: render_report(d, None)):
        with pytest.raises(DocumentError) as raised:
            call(document)
        message = str(raised.value)
        assert "field settings.sources[0].api_key: a key its shape does not declare" in message
        assert "sk-hidden" not in message, message
