"""The whole graph on the demo corpus, through `clcg run` and Dagster, on a persistent test instance."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.cli import main
from clcg_pipeline.config import load_config
from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import query, read_frame, run_named_query
from clcg_pipeline_tests.demo_study import DemoStudy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished_study(demo_study: DemoStudy) -> dict:
    """The demo study and the checks its run recorded."""
    with dg.DagsterInstance.from_config(str(demo_study.home)) as instance:
        checks = {
            key.name: instance.event_log_storage.get_latest_asset_check_execution_by_key([key]).get(key)
            for key in [
                dg.AssetCheckKey(dg.AssetKey("predictions"), "one_row_per_slot"),
                dg.AssetCheckKey(dg.AssetKey("corpus_audit"), "alignment_coverage"),
            ]
        }
    return {
        "study": demo_study,
        "config_dir": demo_study.config_dir,
        "data_dir": demo_study.data_dir,
        "checks": checks,
    }


def test_every_partition_is_materialized(finished_study: dict) -> None:
    data_dir: Path = finished_study["data_dir"]
    config = load_config(finished_study["config_dir"])
    for iso in config.languages.isos:
        assert (data_dir / "paragraphs" / f"language={iso}" / "data.parquet").exists()
        for table in ("predictions", "calls", "scores"):
            assert (data_dir / table / f"language={iso}" / "model=lexical-reader" / "data.parquet").exists()
    assert (data_dir / "study_results.json").exists()
    assert (data_dir / "report.html").exists()
    leaderboard = pd.read_csv(data_dir / "leaderboard.csv")  # one row per evaluated model, beside it
    assert leaderboard["model"].tolist() == [m.id for m in config.models.evaluated]
    assert json.loads((data_dir / "leaderboard.json").read_text())["models"][0]["model"] == "lexical-reader"
    assert (data_dir / "item_level_audit" / "data.parquet").exists()  # empty: no auditor configured
    # One corpus run over every language, the study inputs, one responses run per model over
    # all its languages (issue 32), the analysis.
    runs = 1 + 1 + len(config.models.evaluated) + 1
    assert finished_study["study"].runs_after_first == runs


def test_every_slot_has_one_prediction(finished_study: dict) -> None:
    data_dir: Path = finished_study["data_dir"]
    items = read_frame(data_dir / "items" / "data.parquet")
    sample = read_frame(data_dir / "study_sample" / "data.parquet")
    predictions = read_frame(
        data_dir / "predictions" / "language=ht" / "model=lexical-reader" / "data.parquet"
    )
    # demo-006 has no Haitian Creole version: no slots there, and every other slot exactly once.
    assert "demo-006" not in set(predictions["doc_id"])
    full_body = predictions[predictions["context_scope"] == "full_body"]
    expected = sum(
        int(sample.set_index("doc_id").loc[doc, "n_reps"]) * int((items["doc_id"] == doc).sum())
        for doc in sample["doc_id"]
        if doc != "demo-006"
    )
    assert len(full_body) == expected
    assert not predictions.duplicated(["doc_id", "item_id", "rep", "context_scope"]).any()
    assert set(predictions["context_scope"]) == {"full_body", "closed_book"}
    assert finished_study["checks"]["one_row_per_slot"] is not None


def test_results_show_a_gap_for_the_english_centric_reader(finished_study: dict) -> None:
    results = json.loads((finished_study["data_dir"] / "study_results.json").read_text())
    h1 = results["h1"]
    assert h1["h1_micro"]["estimate"] > 0
    # Issue 34: 11 demo articles (10 in ht) >= study.min_articles (10): the headline estimates
    # are identifiable, each with an interval around it.
    for estimate in (h1["h1_micro"], *h1["by_language"].values()):
        assert estimate["identifiable"] is True and estimate["reason"] is None
        assert 0 < estimate["ci_low"] < estimate["estimate"] < estimate["ci_high"]
    assert set(h1["by_language"]) == {"is", "mt", "ka", "ht", "sw"}
    # The SIMULATED per-language gap (models.yaml simulated_drop_*): it differs by language, the
    # lowest drop rate (ka 0.3) giving the smallest gap and the highest (ht 0.75) the largest.
    gaps = {iso: row["estimate"] for iso, row in h1["by_language"].items()}
    assert min(gaps, key=gaps.__getitem__) == "ka" and max(gaps, key=gaps.__getitem__) == "ht"
    assert gaps["ht"] - gaps["ka"] > 0.03
    assert h1["pt_gap"]["estimate"] < gaps["ka"]
    reader = next(m for m in results["settings"]["models"] if m["id"] == "lexical-reader")
    assert reader["simulated"].startswith("SIMULATED per-language gap")
    report = (finished_study["data_dir"] / "report.html").read_text(encoding="utf-8")
    assert "SIMULATED per-language gap on the demo corpus" in report  # on the report's model line
    assert results["excluded_versions"] == []  # every demo translation is complete
    assert h1["macro_net"]["estimate"] == pytest.approx(h1["macro"]["estimate"] - h1["pt_gap"]["estimate"])


def test_catalog_answers_queries(finished_study: dict) -> None:
    catalog = finished_study["data_dir"] / "clcg.duckdb"
    per_language = query(catalog, "SELECT language, count(*) AS n FROM scores GROUP BY language")
    assert set(per_language["language"]) == {"en", "pt", "is", "mt", "ka", "ht", "sw"}
    estimates = query(catalog, "SELECT * FROM estimates")
    assert isinstance(estimates, pd.DataFrame) and len(estimates) > 0


def test_second_run_reuses_everything(finished_study: dict) -> None:
    study: DemoStudy = finished_study["study"]
    assert "everything is up to date" in study.second.stdout and "0 new model calls" in study.second.stdout
    # Nothing run, not even the analysis (nothing it reads has changed), and no file rewritten.
    assert study.runs_after_second == study.runs_after_first
    assert study.rewritten_by_second == []


def test_run_then_query(
    demo_study: DemoStudy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config_dir, ran = demo_study.config_dir, demo_study.first
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", demo_study.env["COLUMNS"])  # the table's width, as before

    def _query(folder: Path, *args: str) -> str:
        """``clcg query --data FOLDER ARGS``'s output; it must succeed. In this process, through
        the entry point `clcg` is (``cli.main``): a fresh interpreter per query cost ~2 s of imports."""
        capsys.readouterr()
        code = main(["query", "--data", str(folder), *args])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    assert "H1 micro" in ran.stdout and "Georgian" in ran.stdout
    data = demo_study.data_dir
    assert str(data / "report.html") in ran.stdout.replace("\n", "")
    # issue 11: the demo's SIMULATED paragraph-filling ratings reach the human-vs-judge correlation.
    granularity = json.loads((data / "study_results.json").read_text(encoding="utf-8"))["granularity"]
    correlation = granularity["human_judge_correlation"]
    assert correlation is not None and correlation["n"] >= 3 and correlation["simulated"] is True
    assert any("SIMULATED" in c for c in granularity["caveats"])

    counted = _query(data, "--format", "json", "SELECT model, count(*) AS n FROM predictions GROUP BY model")
    rows = json.loads(counted)
    assert rows[0]["model"] == "lexical-reader" and rows[0]["n"] > 0

    named = _query(data, "--config", str(config_dir), "--format", "csv", "--named", "clcg_by_language")
    assert named.splitlines()[0].startswith("language,name,role")

    # The folder is portable: copied to a laptop with the original gone, the copy's catalog reads
    # the copy's files, through `clcg query` (table format, with list columns) and plain DuckDB.
    laptop = tmp_path / "laptop" / "results"
    shutil.copytree(data, laptop)
    away = tmp_path / "moved-away"
    data.rename(away)
    try:
        copied = _query(
            laptop,
            "SELECT model, count(*) AS n, any_value(target_pids) AS pids FROM predictions "
            "JOIN items USING (item_id) GROUP BY model",
        )
        assert f" {rows[0]['n']} " in copied and "lexical-reader" in copied
        plain = subprocess.run(
            [sys.executable, "-c", "import duckdb; print(duckdb.connect('clcg.duckdb').sql("
             "'SELECT count(*) FROM predictions').fetchall()[0][0])"],
            cwd=laptop, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert plain.returncode == 0, plain.stderr
        assert int(plain.stdout) == rows[0]["n"]
    finally:
        away.rename(data)

    # The second `clcg run`, with nothing changed, called nothing.
    assert "0 new model calls" in demo_study.second.stdout


def test_judge_error_overlap_on_the_demo(finished_study: dict) -> None:
    """Issue 36: the judges' error overlap is in study_results.json, the report and a named query,
    the 6 demo articles its judged pairs come from (< study.min_articles) give no interval, and the
    offline judges are marked."""
    data: Path = finished_study["data_dir"]
    block = json.loads((data / "study_results.json").read_text(encoding="utf-8"))["human_validation"]
    pairs, effective = block["judge_error_correlation"], block["judge_effective_number"]
    assert {r["family"] for r in pairs} == {"error_taxonomy", "granularity"}
    assert {r["by"] for r in effective} == {"all", "language", "script"}
    for record in (*pairs, *effective):
        assert record["rule_based"] is True and record["ci_low"] is None and record["identifiable"] is False
    pooled = next(r for r in effective if r["by"] == "all" and r["family"] == "error_taxonomy")
    assert pooled["reason"] == "too few articles: 6 < study.min_articles = 10" and pooled["k"] == 2
    assert any("rule-based offline judges (simulated" in c for c in block["caveats"])
    report = (data / "report.html").read_text(encoding="utf-8")
    assert "Judge error overlap" in report and "rule-based offline stand-ins, simulated; not LLMs" in report
    named = run_named_query(data / "clcg.duckdb", "judge_error_overlap", {}, data_dir=data)
    assert len(named) == len(pairs) + len(effective) and named["rule_based_judges"].all()
    assert named["ci_low"].isna().all()


def test_the_daemon_has_nothing_to_do_after_clcg_run(finished_study: dict) -> None:
    """Issue 32: `make dev` after `make run` showed model_calls as never materialized, and its
    daemon launched the stream and the annotation import again (two runs, 27 files rewritten,
    nothing changed). Every tick the daemon would make first, on the instance `clcg run` left:
    the automation conditions and each sensor with a fresh cursor request nothing."""
    study: DemoStudy = finished_study["study"]
    defs = build_definitions(study.config_dir, study.data_dir)
    resources = {"study": StudyResource(config_dir=str(study.config_dir), data_dir=str(study.data_dir))}
    with dg.DagsterInstance.from_config(str(study.home)) as instance:
        graph = defs.resolve_asset_graph()
        never = [
            key.to_user_string()
            for key in graph.materializable_asset_keys
            if instance.get_latest_materialization_event(key) is None
        ]
        assert never == []
        stream = instance.get_latest_materialization_event(dg.AssetKey("model_calls"))
        assert stream is not None and stream.asset_materialization is not None
        recorded = {name: entry.value for name, entry in stream.asset_materialization.metadata.items()}
        assert recorded["launched_by"] == "clcg run" and recorded["streamed"] is False  # offline
        ticks = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        requested = {r.key.to_user_string(): ticks.get_num_requested(r.key) for r in ticks.results}
        assert ticks.total_requested == 0, {key: n for key, n in requested.items() if n}
        for sensor in defs.sensors or ():
            if isinstance(sensor, dg.AutomationConditionSensorDefinition):
                continue  # evaluated above
            context = dg.build_sensor_context(instance=instance, resources=resources)
            tick = defs.resolve_sensor_def(sensor.name).evaluate_tick(context)
            assert not tick.run_requests, (sensor.name, tick.run_requests)
