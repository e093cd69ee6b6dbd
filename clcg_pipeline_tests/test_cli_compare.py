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

    data = _run_folder(
        tmp_path / "pilot", demo_config_dir, _band_scores(demo_config_dir, "lexical-reader", LANGUAGES)
    )
    base = ["plan", "--power", "--config", str(demo_config_dir), "--data", str(data)]
    assert main([*base, "--effect", "0.02", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["status"] == "ok" and plan["pilot_articles"] == 12 and plan["articles_needed"] >= 2
    assert main(base) == 2  # --power needs --effect
    assert "--effect" in capsys.readouterr().err
    assert main([*base, "--effect", "0.02", "--compare-models", "lexical-reader,nope"]) == 1
    assert "unknown model(s) nope" in capsys.readouterr().err
