"""``clcg plan --power --compare-models``: the A,B form is checked before the ids are looked up."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.cli import main
from clcg_pipeline.storage import partition_dir, write_frame
from clcg_pipeline_tests.test_cli import _band_scores


def varied_pilot(scores: pd.DataFrame, seed: int = 7) -> pd.DataFrame:
    """``scores`` with a seeded shift per language and article: a pilot whose gap varies across
    articles (``_band_scores`` moves every language alike per article, so its gap does not)."""
    rng = np.random.default_rng(seed)
    keys = scores[["language", "doc_id"]].drop_duplicates()
    shift = keys.assign(shift=rng.normal(0, 0.05, len(keys)))
    moved = scores.merge(shift, on=["language", "doc_id"], how="left")
    return moved.assign(token_f1=(moved["token_f1"] + moved.pop("shift")).clip(0, 1))


def _pilot(folder: Path, scores: pd.DataFrame) -> Path:
    for (language, model), part in scores.groupby(["language", "model"]):
        where = {"language": language, "model": model}
        write_frame(partition_dir(folder, "scores", where) / "data.parquet", part, contract="scores")
    return folder


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ("onlyone", "got 1: onlyone"),
        ("lexical-reader", "got 1: lexical-reader"),
        ("a,b,c", "got 3: a, b, c"),
        ("lexical-reader,lexical-reader", "got lexical-reader twice"),
    ],
)
def test_compare_models_asks_for_the_a_b_form(
    demo_config_dir: Path, tmp_path: Path, capsys, value: str, got: str
) -> None:
    """One id was called "unknown onlyone" (a known one too), not a question of the form."""
    argv = ["plan", "--power", "--config", str(demo_config_dir), "--data", str(tmp_path / "data")]
    assert main([*argv, "--effect", "0.01", "--compare-models", value]) == 2
    err = capsys.readouterr().err
    assert "--compare-models takes two different model ids as A,B" in err and got in err
    assert "unknown" not in err


def _second_reader(doc: dict) -> None:
    """A second entry of the demo's reader under another id: the same answers."""
    reader = next(model for model in doc["models"] if model["id"] == "lexical-reader")
    doc["models"].append({**reader, "id": "lexical-reader-2"})


def test_two_identical_models_are_not_planned(
    demo_config_dir: Path, edit_yaml, tmp_path: Path, capsys
) -> None:
    """Two models with the same answers: "pilot se 0, articles for power 2, simulated power 1"."""
    edit_yaml(demo_config_dir / "models.yaml", _second_reader)
    one = varied_pilot(_band_scores(demo_config_dir, "lexical-reader", {"en": 0.8, "pt": 0.7, "ka": 0.5}))
    data = _pilot(tmp_path / "pilot", pd.concat([one, one.assign(model="lexical-reader-2")]))
    base = ["plan", "--power", "--config", str(demo_config_dir), "--data", str(data), "--effect", "0.01"]
    pair = ["--compare-models", "lexical-reader,lexical-reader-2"]
    assert main([*base, *pair, "--format", "json"]) == 0, capsys.readouterr().err
    plan = json.loads(capsys.readouterr().out)
    assert plan["status"].startswith("not estimable") and "power cannot be estimated" in plan["status"]
    assert "articles_needed" not in plan and "simulated_power" not in plan
    assert main([*base, *pair]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "no variance" in shown and "articles needed" not in shown.replace("Articles needed to detect", "")
    # One model's gap over the same varied pilot is planned as before.
    assert main([*base, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "ok"
