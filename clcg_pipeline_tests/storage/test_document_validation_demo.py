"""The demo study's own documents fit their shapes, and the typed view reads them (issue 34)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from clcg_pipeline.results import STUDY_SECTIONS, load_run
from clcg_pipeline.storage import DocumentError, read_json, study_results_view, validate_document


def test_the_demo_documents_fit_their_shapes(demo_study: Any) -> None:
    data: Path = demo_study.data_dir
    document = read_json(data / "study_results.json")
    validate_document(document, source=str(data / "study_results.json"))
    for kind, asset in STUDY_SECTIONS.items():
        # Each study's own document too, as its asset wrote it beside study_results.json.
        validate_document(read_json(data / f"{asset}.json"), kind, source=asset)
        assert document[kind]["status"] == read_json(data / f"{asset}.json")["status"]
    view = study_results_view(document)
    assert view.h1 is not None and view.h1.by_language and view.h1.h1_micro is not None
    assert view.models() and all(m.id for m in view.models())


def test_a_demo_document_with_one_wrong_field_is_refused(demo_study: Any, tmp_path: Path) -> None:
    document = copy.deepcopy(read_json(demo_study.data_dir / "study_results.json"))
    document["human_validation"]["ratings"] = str(document["human_validation"].get("ratings", 0))
    path = tmp_path / "study_results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DocumentError, match=r"section 'human_validation', field human_validation\.ratings"):
        load_run(path)
