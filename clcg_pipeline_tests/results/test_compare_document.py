"""``clcg compare --json`` has one typed shape, ``ComparisonDocument`` (issue 34, item 2): the
comparison is checked against it when written and when read back, and a field of another type
is refused with the file and the field named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.results import (
    ComparisonDocument,
    RunSide,
    compare_runs,
    comparison_lines,
    read_comparison,
    write_comparison_json,
)
from clcg_pipeline.storage import DocumentError
from clcg_pipeline.synthetic import synthetic_scores
from clcg_pipeline_tests.analysis.conftest import small_config
from clcg_pipeline_tests.results.conftest import assert_refused_naming


@pytest.fixture(scope="module")
def compared(project, small_langs) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Two scores-only runs; B adds a model (so ``only_in`` is filled)."""
    cfg = small_config(project, small_langs, 1, replicates=60)
    a = synthetic_scores(cfg.languages, n_models=1, n_articles=4, n_stability=0, seed=3)
    b = pd.concat([a, a.assign(model="model-new")], ignore_index=True)
    return compare_runs(RunSide("A", pd.DataFrame(), a), RunSide("B", pd.DataFrame(), b), cfg)


@pytest.fixture
def written(tmp_path: Path, compared) -> Path:
    path = tmp_path / "compare.json"
    write_comparison_json(*compared, path)
    return path


def test_a_written_comparison_reads_back_as_its_typed_document(written: Path, compared) -> None:
    table, info = compared
    document = read_comparison(written)
    assert isinstance(document, ComparisonDocument)
    assert [row.model_dump() for row in document.rows] == table.to_dict("records")
    assert document.only_in is not None and document.only_in["B"].models == ["model-new"]
    assert document.columns == list(table.columns)
    # The facts read back say what the run's own facts said.
    assert comparison_lines(document) == comparison_lines(info)


WRONG = [
    (lambda d: d["rows"][0].update(p="0.1"), "rows[0].p"),
    (lambda d: d["rows"][1].update(pairing="matched"), "rows[1].pairing"),
    (lambda d: d["only_in"]["B"].update(items="3"), "only_in.B.items"),
    (lambda d: d.update(common_rows=12.0), "common_rows"),
    (lambda d: d.update(paired="yes"), "paired"),
    (lambda d: d.update(verdict="better"), "verdict"),
    (lambda d: d["columns"].reverse(), "columns"),
]


@pytest.mark.parametrize(("change", "field"), WRONG, ids=[w[1] for w in WRONG])
def test_a_comparison_with_a_wrong_field_is_refused_naming_it(written: Path, change, field) -> None:
    assert_refused_naming(
        read_comparison, written, change, field, "ComparisonDocument, clcg_pipeline.results"
    )


def test_a_comparison_whose_facts_do_not_fit_is_not_written(tmp_path: Path, compared) -> None:
    table, info = compared
    path = tmp_path / "compare.json"
    with pytest.raises(DocumentError, match=rf"^{path}: field common_rows: "):
        write_comparison_json(table, {**info, "common_rows": "many"}, path)
    assert not path.exists()


def test_a_file_that_is_not_json_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "compare.json"
    path.write_bytes(b"\xca\xfe")
    with pytest.raises(DocumentError, match=r"compare\.json: not a readable ComparisonDocument JSON file"):
        read_comparison(path)
