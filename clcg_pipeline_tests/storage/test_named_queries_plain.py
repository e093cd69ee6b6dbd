"""The band queries of sql/queries/ run as written in a plain DuckDB client on the catalog.

They took the band as bound parameters ($context_scope, $item_source, $levels), so a DuckDB
client failed with "Values were not provided for the following parameters"; they now read
session variables with the default band when unset, which ``clcg query`` sets from study.yaml.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from clcg_pipeline.config import Band
from clcg_pipeline.storage import build_catalog, named_queries, partition_dir, run_named_query, write_frame
from clcg_pipeline_tests.storage.conftest import score_rows

BAND_QUERIES = ("clcg_by_language", "clcg_by_class", "clcg_by_model")


def _scores(language: str, levels: list[str], values: list[float]) -> pd.DataFrame:
    return score_rows(language, values, levels=levels, statuses=["ok"] * len(values))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """English and Georgian, each with an L3 and an L1 item (L1 is outside the default band)."""
    languages = pd.DataFrame(
        {
            "iso": ["en", "ka"],
            "name": ["English", "Georgian"],
            "script": ["Latn", "Geor"],
            "joshi_class": [5, 3],
            "joshi_class_sensitivity": [None] * 2,
            "role": ["reference", "target"],
            "speakers": [1.0, 1.0],
            "risk": [None] * 2,
            "isolate": ["none"] * 2,
            "non_latin": [False, True],
            "optional": [False] * 2,
        }
    )
    write_frame(partition_dir(tmp_path, "languages", None) / "data.parquet", languages, contract="languages")
    for language, values in (("en", [0.8, 0.2]), ("ka", [0.5, 0.1])):
        write_frame(
            partition_dir(tmp_path, "scores", {"language": language, "model": "m"}) / "data.parquet",
            _scores(language, ["L3", "L1"], values),
            contract="scores",
        )
    build_catalog(tmp_path, tmp_path / "clcg.duckdb")
    return tmp_path


def _plain_client(data_dir: Path, name: str, before: str | None = None) -> pd.DataFrame:
    """The query file run as written in a plain DuckDB connection on the catalog."""
    con = duckdb.connect(
        str(data_dir / "clcg.duckdb"), read_only=True, config={"file_search_path": str(data_dir)}
    )
    try:
        if before:
            con.execute(before)
        return con.sql(named_queries()[name].read_text(encoding="utf-8")).df()
    finally:
        con.close()


def _default_band() -> dict[str, object]:
    band = Band()
    return {"context_scope": band.context_scope, "item_source": band.item_source, "levels": list(band.levels)}


def _same(left: pd.DataFrame, right: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(left.astype(object), right.astype(object), check_dtype=False)


@pytest.mark.parametrize("name", BAND_QUERIES)
def test_a_band_query_runs_in_a_plain_client_with_clcg_query_s_default_band(
    data_dir: Path, name: str
) -> None:
    plain = _plain_client(data_dir, name)
    assert len(plain) > 0
    _same(plain, run_named_query(data_dir / "clcg.duckdb", name, _default_band()))


def test_the_band_is_still_chosen_by_clcg_query_and_by_a_set_variable(data_dir: Path) -> None:
    catalog = data_dir / "clcg.duckdb"
    default = run_named_query(catalog, "clcg_by_language", _default_band()).set_index("language")
    other = run_named_query(catalog, "clcg_by_language", {**_default_band(), "levels": ["L1"]})
    assert default.loc["ka", "clcg"] == pytest.approx(0.8 - 0.5)
    assert other.set_index("language").loc["ka", "clcg"] == pytest.approx(0.2 - 0.1)
    _same(_plain_client(data_dir, "clcg_by_language", "SET VARIABLE levels = ['L1']"), other)


@pytest.mark.parametrize("name", BAND_QUERIES)
def test_a_band_query_s_header_says_how_to_choose_the_band(name: str) -> None:
    header = named_queries()[name].read_text(encoding="utf-8").split("WITH", 1)[0]
    band = _default_band()
    assert "SET VARIABLE" in header
    for key in band:
        assert key in header
    assert "full_body" in header and "[L3, L4, L5]" in header
