"""``clcg compare``'s terminal table says each reason for a missing interval once, under the
table, not on every row (issue 34, item 1)."""

from __future__ import annotations

import re
from pathlib import Path

from clcg_pipeline_tests.test_cli import _band_scores

LANGUAGES = {"en": 0.8, "pt": 0.7, "ka": 0.5, "sw": 0.4}
FEW = "too few articles: 4 < study.min_articles = 10"


def test_one_reason_for_every_row_is_said_once(demo_config_dir: Path, tmp_path: Path, capsys) -> None:
    """Four articles: every interval and p withheld for the same reason, said once."""
    from clcg_pipeline.cli import main

    scores = _band_scores(demo_config_dir, "lexical-reader", LANGUAGES, n_docs=4)
    worse = scores.assign(token_f1=scores["token_f1"] - 0.05 * (scores["language"] != "en"))
    paths = {"a": tmp_path / "a.parquet", "b": tmp_path / "b.parquet"}
    scores.to_parquet(paths["a"])
    worse.to_parquet(paths["b"])
    assert main(["compare", str(paths["a"]), str(paths["b"]), "--config", str(demo_config_dir)]) == 0
    out = capsys.readouterr().out
    assert out.count(FEW) == 1 and f"no interval on any row: {FEW}" in out, out
    assert out.count("none") > 1  # each row says it has none ...
    assert not re.search(r"\[-?\d\.\d{4}, -?\d\.\d{4}\]", out), out  # ... and no interval escapes
