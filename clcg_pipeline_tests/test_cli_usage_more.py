"""Usage errors found by hand on a fresh clone (issue 34 item 7).

``clcg query --named nosuch`` exited 1 like a run error, and only after opening the catalog (with
no catalog yet it said "no catalog yet" instead). ``clcg run --models offline-judge-a`` called the
demo's judge "unknown" while models.yaml lists it (as ``evaluated: false``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline_tests.conftest import DEFAULT_CONFIG
from clcg_pipeline_tests.test_cli_conventions import _main, outside  # noqa: F401 (the fixture)


def test_an_unknown_named_query_exits_2_with_one_error_line(
    outside: Path,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture,
) -> None:
    # No catalog in reach: the name is judged first, as every usage error is, before anything runs.
    assert _main(["query", "--data", str(outside / "d"), "--named", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: --named: no named query 'nosuch'; available: ")
    assert "clcg_by_language" in err


def test_an_auxiliary_model_is_named_as_one_not_as_unknown(
    outside: Path,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture,
) -> None:
    config = ["--config", str(DEFAULT_CONFIG), "--data", str(outside / "d")]
    assert _main(["run", *config, "--models", "lexical-reader,offline-judge-a"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "unknown" not in err
    assert err.startswith("error: --models: offline-judge-a not evaluated (evaluated: false in models.yaml")
    assert err.rstrip().endswith("the evaluated models are lexical-reader")
    power = [
        "plan",
        *config,
        "--power",
        "--effect",
        "0.02",
        "--compare-models",
        "lexical-reader,offline-judge-b",
    ]
    assert _main(power) == 2
    assert capsys.readouterr().err.startswith("error: --compare-models: offline-judge-b not evaluated")
