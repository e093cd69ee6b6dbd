"""``clcg compare A B`` and ``clcg plan --power`` on data folders, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.analysis import run_suite
from clcg_pipeline.config import load_config
from clcg_pipeline.storage import partition_dir, write_frame
from clcg_pipeline_tests.test_cli import _band_scores
from clcg_pipeline_tests.test_cli_power import varied_pilot

LANGUAGES = {"en": 0.8, "pt": 0.7, "ka": 0.5, "sw": 0.4}


def _run_folder(path: Path, config_dir: Path, scores: pd.DataFrame) -> Path:
    for (language, model), part in scores.groupby(["language", "model"]):
        write_frame(
            partition_dir(path, "scores", {"language": language, "model": model}) / "data.parquet",
            part,
            contract="scores",
        )
    config = load_config(config_dir)
    small = config.model_copy(update={"study": config.study.model_copy(update={"bootstrap_replicates": 100})})
    estimates = run_suite(scores, small).estimates
    write_frame(partition_dir(path, "estimates", None) / "data.parquet", estimates, contract="estimates")
    return path


def test_compare_two_folders_pairs_the_shared_items(demo_config_dir: Path, tmp_path: Path, capsys) -> None:
    from clcg_pipeline.cli import main

    scores = _band_scores(demo_config_dir, "lexical-reader", LANGUAGES)
    worse = scores.assign(
        token_f1=scores["token_f1"].where(scores["language"] == "en", scores["token_f1"] - 0.1)
    )
    a = _run_folder(tmp_path / "a", demo_config_dir, scores)
    b = _run_folder(tmp_path / "b", demo_config_dir, worse)
    out, page = tmp_path / "compare.json", tmp_path / "compare.html"
    args = [
        "compare",
        str(a),
        str(b),
        "--config",
        str(demo_config_dir),
        "--json",
        str(out),
        "--html",
        str(page),
    ]
    assert main(args) == 0, capsys.readouterr().err
    document = json.loads(out.read_text())
    micro = next(r for r in document["rows"] if r["estimand"] == "h1_micro" and r["group"] == "all")
    assert document["paired"] and micro["pairing"] == "paired"
    assert micro["difference"] == pytest.approx(0.1, abs=1e-9)  # every target answer 0.1 lower
    assert "H1 paired on" in capsys.readouterr().err and page.read_text().startswith("<!DOCTYPE html>")
    # A folder that is not a finished run: one line, exit 1.
    assert main(["compare", str(a), str(tmp_path / "nothing"), "--config", str(demo_config_dir)]) == 1
    err = capsys.readouterr().err
    assert "not a finished run's data folder" in err and len(err.strip().splitlines()) == 1


def test_plan_power_from_the_scores_at_hand(demo_config_dir: Path, tmp_path: Path, capsys) -> None:
    from clcg_pipeline.cli import main

    # Articles that differ: a pilot whose gap does not vary has no power to plan (test_cli_power.py).
    scores = varied_pilot(_band_scores(demo_config_dir, "lexical-reader", LANGUAGES))
    data = _run_folder(tmp_path / "pilot", demo_config_dir, scores)
    base = ["plan", "--power", "--config", str(demo_config_dir), "--data", str(data)]
    assert main([*base, "--effect", "0.02", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["status"] == "ok" and plan["pilot_articles"] == 12 and plan["articles_needed"] >= 2
    assert main(base) == 2  # --power needs --effect
    assert "--effect" in capsys.readouterr().err
    assert main([*base, "--effect", "0.02", "--compare-models", "lexical-reader,nope"]) == 2  # usage
    assert "--compare-models: unknown nope" in capsys.readouterr().err


def test_compare_two_scores_files_names_what_one_run_alone_has(
    demo_config_dir: Path, tmp_path: Path, capsys
) -> None:
    """Two scores files (the old command failed on them with a utf-8 decode error); run B adds a
    model: said on its own line, and every row without an interval says why in the table."""
    from clcg_pipeline.cli import main

    scores = _band_scores(demo_config_dir, "lexical-reader", LANGUAGES)
    both = pd.concat([scores, scores.assign(model="reader-2")], ignore_index=True)
    paths = {"a": tmp_path / "a.parquet", "b": tmp_path / "b.parquet"}
    scores.to_parquet(paths["a"])
    both.to_parquet(paths["b"])
    out = tmp_path / "compare.json"
    args = ["compare", str(paths["a"]), str(paths["b"]), "--config", str(demo_config_dir), "--json", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert "only in run B: models reader-2" in captured.err and "only in run A: nothing" in captured.err
    assert "p: paired rows: two-sided bootstrap p" in captured.err
    rows = json.loads(out.read_text())["rows"]
    # The file reads back as its typed shape (results.ComparisonDocument), row for row.
    from clcg_pipeline.results import read_comparison

    assert [row.model_dump() for row in read_comparison(out).rows] == rows
    new = next(r for r in rows if r["estimand"] == "h1_micro_model" and r["group"] == "reader-2")
    assert new["reason"] == "only in run B: model reader-2 is not in run A" and new["b_estimate"] is not None
    assert all(r["reason"] for r in rows if r["difference_ci_low"] is None)
    # Each reason once, under the table, not on every row it applies to (issue 34, item 1).
    reasons = {r["reason"] for r in rows if r["difference_ci_low"] is None}
    assert reasons and all(captured.out.count(reason) == 1 for reason in reasons), captured.out
