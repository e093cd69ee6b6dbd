"""The terminal leaderboard marks a simulated model (issue 34 item 8).

Seen on a fresh clone's ``make run``: the leaderboard, printed first, ranked the demo's
simulated reader with no mark; only a line below the H1 table said it was simulated.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline_tests.analysis.test_tie_groups import run_planted
from clcg_pipeline_tests.test_cli_leaderboard import _printed


def test_a_simulated_model_is_marked_in_the_leaderboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = run_planted([0.0, 0.1])
    settings = results.setdefault("settings", {})
    settings["models"] = [
        {"id": "model-a", "provider": "offline", "model": "m", "simulated": "SIMULATED per-language gap"},
        {"id": "model-b", "provider": "offline", "model": "m"},
    ]
    text = _printed(results, tmp_path / "data", monkeypatch)
    board = text[: text.index("Cross-Lingual Comprehension Gap (H1)")]
    rows = {
        line.split()[1]: line
        for line in board.splitlines()
        if line.split()[1:2] in (["model-a"], ["model-b"])
    }
    assert "model-a (SIMULATED)" in rows["model-a"]
    assert "SIMULATED" not in rows["model-b"]
