from pathlib import Path

import duckdb
import pandas as pd
import pytest

from clcg_pipeline.storage import (
    CatalogError,
    build_catalog,
    named_queries,
    partition_dir,
    query,
    run_named_query,
    write_frame,
)

BAND = {"context_scope": "full_body", "item_source": "llm", "levels": ["L3", "L4", "L5"]}


def _scores(language: str, values: list[float], statuses: list[str]) -> pd.DataFrame:
    n = len(values)
    return pd.DataFrame(
        {
            "model": ["m"] * n,
            "language": [language] * n,
            "doc_id": [f"d{i}" for i in range(n)],
            "item_id": [f"i{i}" for i in range(n)],
            "rep": [1] * n,
            "context_scope": ["full_body"] * n,
            "level": ["L3"] * n,
            "item_source": ["llm"] * n,
            "token_f1": values,
            "exact_match": [0.0] * n,
            "accuracy": [None] * n,
            "rouge_l": values,
            "semsim": [None] * n,
            "status": statuses,
        }
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    languages = pd.DataFrame(
        {
            "iso": ["en", "pt", "ka"],
            "name": ["English", "Portuguese", "Georgian"],
            "script": ["Latn", "Latn", "Geor"],
            "joshi_class": [5, 4, 3],
            "joshi_class_sensitivity": [None] * 3,
            "role": ["reference", "baseline", "target"],
            "speakers": [1.0, 1.0, 1.0],
            "risk": [None] * 3,
            "isolate": ["none"] * 3,
            "non_latin": [False, False, True],
            "optional": [False] * 3,
        }
    )
    write_frame(partition_dir(tmp_path, "languages", None) / "data.parquet", languages, contract="languages")
    write_frame(
        partition_dir(tmp_path, "scores", {"language": "en", "model": "m"}) / "data.parquet",
        _scores("en", [0.8, 0.6], ["ok", "ok"]),
        contract="scores",
    )
    # The unparseable row keeps its token_f1 in the file but counts 0 under rule A.
    write_frame(
        partition_dir(tmp_path, "scores", {"language": "ka", "model": "m"}) / "data.parquet",
        _scores("ka", [0.5, 0.9], ["ok", "unparseable"]),
        contract="scores",
    )
    return tmp_path


def test_catalog_views_and_named_query(data_dir: Path) -> None:
    catalog = data_dir / "clcg.duckdb"
    counts = build_catalog(data_dir, catalog)
    assert counts == {"band_scores": 4, "languages": 3, "scores": 4}
    by_language = run_named_query(catalog, "clcg_by_language", BAND).set_index("language")
    assert by_language.loc["ka", "clcg"] == pytest.approx(0.7 - 0.25)
    assert by_language.loc["en", "clcg"] == pytest.approx(0.0)
    assert by_language.loc["ka", "n"] == 2


def test_catalog_is_read_only_for_queries(data_dir: Path) -> None:
    catalog = data_dir / "clcg.duckdb"
    build_catalog(data_dir, catalog)
    with pytest.raises(CatalogError, match="read-only"):
        query(catalog, "CREATE TABLE x AS SELECT 1")
    assert len(query(catalog, "SELECT * FROM scores WHERE language = 'en'")) == 2


def test_rebuild_sees_new_partitions(data_dir: Path) -> None:
    catalog = data_dir / "clcg.duckdb"
    build_catalog(data_dir, catalog)
    write_frame(
        partition_dir(data_dir, "scores", {"language": "pt", "model": "m"}) / "data.parquet",
        _scores("pt", [0.7], ["ok"]),
        contract="scores",
    )
    # Views are globs: new files show up without rebuilding.
    assert len(query(catalog, "SELECT * FROM scores")) == 5
    con = duckdb.connect(str(catalog), read_only=True)
    assert {
        row[0] for row in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    } == {"languages", "scores", "band_scores"}
    con.close()


def test_missing_catalog_and_unknown_query(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="no catalog yet"):
        query(tmp_path / "clcg.duckdb", "SELECT 1")
    assert {"clcg_by_language", "clcg_by_model", "clcg_by_class"} <= set(named_queries())
    with pytest.raises(CatalogError, match="no named query 'nope'"):
        run_named_query(tmp_path / "clcg.duckdb", "nope", {})
