"""Issue 37: ``clcg run`` prints the leaderboard (rank interval, tie group) first, before the H1 table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.cli import _run
from clcg_pipeline.cli._tables import LEADERBOARD_ROWS, leaderboard_table
from clcg_pipeline_tests.analysis.test_tie_groups import run_planted


def _printed(results: dict, folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study_results.json").write_text(json.dumps(results), encoding="utf-8")
    console = Console(record=True, width=120)
    monkeypatch.setattr(_run, "console", console)
    _run._print_study_results(str(folder))
    return console.export_text()


def test_run_prints_the_models_ranked_with_tie_groups_first(tmp_path, monkeypatch):
    results = run_planted([0.0, 0.0, 0.0, 0.1, 0.2])
    text = _printed(results, tmp_path / "data", monkeypatch)
    assert text.index("Leaderboard (1 = smallest gap)") < text.index("results: ")
    assert "tie group" in text and "rank interval" in text
    rows = {
        line.split()[1]: line.split()
        for line in text.splitlines()
        if line.split()[1:2] in (["model-d"], ["model-e"])
    }
    # rank, model, rank interval, tie group: model-d is alone in group 2, model-e in group 3.
    assert rows["model-d"][:4] == ["4", "model-d", "4\u20134", "2"]
    assert rows["model-e"][:4] == ["5", "model-e", "5\u20135", "3"]


def test_withheld_intervals_and_tie_groups_are_said_once(tmp_path, monkeypatch):
    """Issue 34: the blank interval, rank interval and tie group columns share the rule's one
    reason, said once under the leaderboard (before the H1 table says it for its own rows)."""
    results = run_planted([0.0, 0.0, 0.1], n_articles=4)
    text = _printed(results, tmp_path / "data", monkeypatch)
    board = text[: text.index("Cross-Lingual Comprehension Gap (H1)")]
    rule = withheld_reason(0.0, 4, 10)
    assert board.count(rule) == 1
    assert f"interval, rank interval, tie group withheld: {rule}" in board


def test_a_blank_interval_without_a_recorded_reason_says_so():
    console = Console(record=True, width=120)
    table = leaderboard_table({"h1": {"by_model": {"m1": {"h1_micro": {"estimate": 0.1}}}}})
    assert table is not None
    console.print(table)
    assert "interval withheld: no reason recorded in study_results.json" in console.export_text()


def test_a_long_leaderboard_names_where_the_rest_is():
    by_model = {f"m{k:03d}": {"h1_micro": {"estimate": k / 1000}} for k in range(LEADERBOARD_ROWS + 5)}
    console = Console(record=True, width=120)
    table = leaderboard_table({"h1": {"by_model": by_model}})
    assert table is not None
    console.print(table)
    assert "... and 5 more models in leaderboard.csv" in console.export_text()
