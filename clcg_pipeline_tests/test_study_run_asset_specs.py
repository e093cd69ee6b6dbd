"""What the UI shows about each asset and check: kinds, owners, readable text, code versions."""

from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.corpus.assets import alignment_coverage, language_has_paragraphs
from clcg_pipeline.inference.assets import one_row_per_slot, parse_failure_rate
from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.scoring.assets import has_scores

EXPECTED_KINDS = {
    "study_results": {"json"},
    "report": {"html"},
    "duckdb_catalog": {"duckdb"},
    # the three study documents merged into study_results.json
    "error_taxonomy_results": {"json"},
    "human_validation_results": {"json"},
    "granularity_results": {"json"},
    # Label Studio task files and the crowd CSV
    "annotation_exports": {"json", "csv"},
    # a model's stream of calls: it stores no table, only the call cache's entries
    "model_calls": set(),
}


@pytest.fixture
def graph(demo_config_dir: Path, tmp_path: Path) -> Any:
    return build_definitions(demo_config_dir, tmp_path / "data").resolve_asset_graph()


def test_every_asset_has_kinds_owners_a_code_version_and_plain_text(graph: Any) -> None:
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        name = key.to_user_string()
        assert node.kinds == EXPECTED_KINDS.get(name, {"parquet"}), name
        assert "team:clcg" in node.owners, name
        assert node.code_version, name
        assert node.description and "``" not in node.description, name
    for check in graph.asset_check_keys:
        description = graph.get_check_spec(check).description or ""
        assert "``" not in description, check


def _unpassed_warning(result: dg.AssetCheckResult, who: str) -> None:
    assert result.passed is False
    assert result.severity == dg.AssetCheckSeverity.WARN
    assert result.description is not None and result.description.startswith(who)


def test_an_empty_corpus_partition_warns_naming_the_language() -> None:
    audit = pd.DataFrame(columns=["doc_id", "language", "coverage", "complete"])
    _unpassed_warning(alignment_coverage(audit, "quy"), "quy")
    assert "no articles in this language" in (alignment_coverage(audit, "quy").description or "")
    _unpassed_warning(language_has_paragraphs(pd.DataFrame(columns=["doc_id", "pid"]), "quy"), "quy")
    complete = pd.DataFrame([{"doc_id": "d", "language": "ka", "coverage": 1.0, "complete": True}])
    assert alignment_coverage(complete, "ka").passed


def test_an_empty_responses_partition_warns_naming_it() -> None:
    predictions = pd.DataFrame(
        columns=["item_id", "status", "model", "language", "doc_id", "rep", "context_scope"]
    )
    items = pd.DataFrame({"item_id": ["i1"]})
    _unpassed_warning(one_row_per_slot(predictions, items, "quy / m"), "quy / m")
    _unpassed_warning(parse_failure_rate(predictions, 0.1, "quy / m", items), "quy / m")
    _unpassed_warning(has_scores(pd.DataFrame(columns=["token_f1"]), "quy / m"), "quy / m")
    assert has_scores(pd.DataFrame({"token_f1": [1.0]}), "ka / m").passed
    # With an empty item bank, say so (English has articles too), as the predictions checks do.
    empty_bank = has_scores(pd.DataFrame(columns=["token_f1"]), "en / m", pd.DataFrame(columns=["item_id"]))
    assert "the item bank has no item" in (empty_bank.description or ""), empty_bank.description
    assert "no sampled article" in (
        has_scores(pd.DataFrame(columns=["token_f1"]), "quy / m", items).description or ""
    )
