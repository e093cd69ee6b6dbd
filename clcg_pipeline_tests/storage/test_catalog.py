import shutil
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
from clcg_pipeline_tests.storage.conftest import score_rows

BAND = {"context_scope": "full_body", "item_source": "llm", "levels": ["L3", "L4", "L5"]}


def _scores(language: str, values: list[float], statuses: list[str]) -> pd.DataFrame:
    return score_rows(language, values, levels=["L3"] * len(values), statuses=statuses)


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


def test_clcg_by_class_includes_the_baseline_class(data_dir: Path) -> None:
    # The baseline language (Portuguese, class 4) is a class of its own, as in the report.
    write_frame(
        partition_dir(data_dir, "scores", {"language": "pt", "model": "m"}) / "data.parquet",
        _scores("pt", [0.6, 0.4], ["ok", "ok"]),
        contract="scores",
    )
    catalog = data_dir / "clcg.duckdb"
    build_catalog(data_dir, catalog)
    by_class = run_named_query(catalog, "clcg_by_class", BAND).set_index("joshi_class")
    assert set(by_class.index) == {3, 4}
    assert by_class.loc[4, "languages"] == "pt"
    assert by_class.loc[4, "mean_clcg"] == pytest.approx(0.7 - 0.5)
    assert by_class.loc[3, "mean_clcg"] == pytest.approx(0.7 - 0.25)


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


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "attack",
    [
        "COPY (SELECT 1) TO '{data}/scores/language=en/model=m/data.parquet'",
        "COPY (SELECT 1) TO '{outside}/written.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_csv('{data}/scores/../../../../../etc/passwd')",
        "SELECT * FROM read_parquet('{outside}/foreign.parquet')",
        "SELECT * FROM read_text('{data}/cache/calls/response.json')",
        "SELECT * FROM glob('/*')",
        "ATTACH '{outside}/other.duckdb' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "PRAGMA enable_profiling",
        "CALL pragma_version()",
        "EXPORT DATABASE '{data}/exported'",
        "SELECT 1; COPY (SELECT 1) TO '{outside}/second.csv'",
        "CREATE TABLE x AS SELECT 1",
    ],
)
def test_query_refuses_anything_but_reading_the_study(data_dir: Path, tmp_path_factory, attack: str) -> None:
    catalog = data_dir / "clcg.duckdb"
    build_catalog(data_dir, catalog)
    outside = tmp_path_factory.mktemp("outside")
    pd.DataFrame({"secret": [1]}).to_parquet(outside / "foreign.parquet")
    (data_dir / "cache" / "calls").mkdir(parents=True)
    (data_dir / "cache" / "calls" / "response.json").write_text("{}", encoding="utf-8")
    before_data, before_outside = _snapshot(data_dir), _snapshot(outside)
    with pytest.raises(CatalogError, match=r"read-only|only the study's tables"):
        query(catalog, attack.format(data=data_dir, outside=outside))
    assert _snapshot(data_dir) == before_data
    assert _snapshot(outside) == before_outside
    # The same connection rules still let every table and the study's own files be read.
    assert len(query(catalog, "SELECT * FROM scores")) == 4
    assert len(query(catalog, f"SELECT * FROM read_parquet('{data_dir}/scores/**/*.parquet')")) == 4


@pytest.mark.parametrize(
    ("sql", "named"),
    [("INSTALL httpfs", "INSTALL"), ("load httpfs", "LOAD"), ("SELECT 1; SET x = 1", "SELECT, SET")],
)
def test_a_refusal_names_the_statements_as_written(data_dir: Path, sql: str, named: str) -> None:
    # DuckDB types INSTALL as a LOAD statement; the message used to say "got LOAD" for INSTALL.
    catalog = data_dir / "clcg.duckdb"
    build_catalog(data_dir, catalog)
    with pytest.raises(CatalogError, match=rf"\(got {named}\)"):
        query(catalog, sql)


def test_query_does_not_read_the_working_directory_s_table_folders(
    data_dir: Path, tmp_path_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relative table paths are allowed (the views use them); they must mean this data folder,
    never a `scores/` folder of wherever the analyst happens to be (e.g. another data folder)."""
    catalog = data_dir / "clcg.duckdb"
    build_catalog(data_dir, catalog)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "scores").mkdir()
    (elsewhere / "scores" / "secret.txt").write_text("not the study's", encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    try:  # refused, or found nowhere in the data folder: either way, not read
        leaked = query(catalog, "SELECT content FROM read_text('scores/secret.txt')")["content"].tolist()
    except CatalogError:
        leaked = []
    assert leaked == []
    assert len(query(catalog, "SELECT * FROM scores")) == 4
    assert Path.cwd() == elsewhere  # the working directory is given back
    # A data folder given relative to the working directory (`clcg query --data data`) still reads.
    monkeypatch.chdir(data_dir.parent)
    assert len(query(Path(data_dir.name) / "clcg.duckdb", "SELECT * FROM scores")) == 4


def test_catalog_reads_the_folder_beside_it_after_a_move(
    data_dir: Path, tmp_path_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_catalog(data_dir)
    copy = tmp_path_factory.mktemp("laptop") / "results"
    shutil.copytree(data_dir, copy)
    # The copy must not depend on the original: change, then delete it.
    write_frame(
        partition_dir(data_dir, "scores", {"language": "pt", "model": "m"}) / "data.parquet",
        _scores("pt", [0.7], ["ok"]),
        contract="scores",
    )
    assert len(query(data_dir / "clcg.duckdb", "SELECT * FROM scores")) == 5
    shutil.rmtree(data_dir)

    assert len(query(copy / "clcg.duckdb", "SELECT * FROM scores")) == 4
    assert len(run_named_query(copy / "clcg.duckdb", "clcg_by_language", BAND)) == 2
    # A plain DuckDB client: from inside the folder, or from anywhere with file_search_path.
    monkeypatch.chdir(copy)
    con = duckdb.connect("clcg.duckdb", read_only=True)
    assert con.sql("SELECT count(*) FROM band_scores").fetchall() == [(4,)]
    con.close()
    monkeypatch.chdir(tmp_path_factory.getbasetemp())
    con = duckdb.connect(str(copy / "clcg.duckdb"), read_only=True, config={"file_search_path": str(copy)})
    assert con.sql("SELECT count(*) FROM scores").fetchall() == [(4,)]
    con.close()


def test_query_keeps_integer_columns_integer(data_dir: Path) -> None:
    catalog = data_dir / "clcg.duckdb"
    build_catalog(data_dir, catalog)
    # sum() of integers is HUGEINT, which DuckDB hands to pandas as float64.
    frame = query(catalog, "SELECT language, sum(rep) AS reps, count(*) AS n FROM scores GROUP BY ALL")
    assert str(frame["reps"].dtype) == "Int64" and frame["reps"].tolist() == [2, 2]
    assert frame.to_json(orient="records").count(".0") == 0


def test_catalog_survives_a_file_url(data_dir: Path) -> None:
    counts = build_catalog(f"file://{data_dir}")
    assert counts["scores"] == 4
    assert len(query(data_dir / "clcg.duckdb", "SELECT * FROM scores", data_dir=f"file://{data_dir}")) == 4


def test_overlapping_builds_do_not_share_a_temporary_file(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # QA: the daemon's automation rebuilt the catalog while human_validation_job was building it.
    # A second build starting inside the first must neither delete nor publish the first's file.
    from clcg_pipeline.storage import _catalog

    catalog = data_dir / "clcg.duckdb"
    real = _catalog._create_views
    nested: list[dict[str, int]] = []
    started: list[bool] = []

    def overlapping(con, data_dir_, **kwargs):  # type: ignore[no-untyped-def]
        counts = real(con, data_dir_, **kwargs)
        if not started:
            started.append(True)
            nested.append(build_catalog(data_dir, catalog))  # another run's build, meanwhile
        return counts

    monkeypatch.setattr(_catalog, "_create_views", overlapping)
    counts = build_catalog(data_dir, catalog)
    assert counts == nested[0]
    assert len(query(catalog, "SELECT * FROM scores")) == 4
    assert sorted(p.name for p in data_dir.iterdir() if p.name.endswith(".building")) == []
