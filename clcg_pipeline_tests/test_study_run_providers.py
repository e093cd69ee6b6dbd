"""A hosted model through the real SDK and the whole Dagster graph, against the fake server."""

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls import MissingCredentialsError, RetryPolicy
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.orchestration import run_study
from clcg_pipeline_tests.conftest import add_fake_model

pytestmark = pytest.mark.slow

KEY_ENV = "CLCG_E2E_FAKE_KEY"
KEY = "fake-clcg-e2e-0d9f8e7c6b5a-not-real"
# The reference and one non-Latin script: enough for every path below (the test once ran three
# languages; the third added a partition of each kind, not a path).
LANGUAGES = ["en", "ka"]


def _shrink_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``RetryPolicy()`` the study makes backs off for milliseconds, not seconds: the faults
    are what is tested, and a second of backoff per 5xx only made the test wait."""
    fast = RetryPolicy(backoff_base_s=0.005, backoff_cap_s=0.02)
    defaults = tuple(getattr(fast, field.name) for field in dataclasses.fields(RetryPolicy))
    monkeypatch.setattr(RetryPolicy.__init__, "__defaults__", defaults)


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()]


def test_hosted_model_end_to_end_with_faults_and_no_key_leak(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(KEY_ENV, KEY)
    data = tmp_path / "data"
    _shrink_backoff(monkeypatch)
    faults = Faults(p429=0.2, p5xx=0.1, pmalformed=0.05, retry_after_s=0.01, seed=7)
    with FakeServer(faults) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, timeout_s=1.0, max_attempts=6)
        summary = run_study(
            config_dir=str(demo_config_dir), data_dir=str(data), models=["fake-gpt"], languages=LANGUAGES
        )
        sent = sum(server.state.requests.values())
        # Retries happened on top; the judges and writers are offline models (never sent).
        hosted = summary.response_calls + summary.task_calls
        assert hosted > 0 and sent >= hosted
        assert server.state.auth_seen == {f"Bearer {KEY}"}

        predictions = pd.concat(
            pd.read_parquet(p) for p in (data / "predictions").rglob("*.parquet") if "fake-gpt" in str(p)
        )
        assert set(predictions["language"]) == set(LANGUAGES)
        assert not predictions.duplicated(["language", "doc_id", "item_id", "rep", "context_scope"]).any()
        assert set(predictions["status"]) <= {"ok", "unparseable", "missing"}

        # Resuming repeats nothing but the calls that failed for good (errors are not cached):
        # with this many calls and faults, one may exhaust its attempts now and then.
        failed = sum(
            int((pd.read_parquet(p)["outcome"] == "error").sum())
            for table in ("calls", "task_calls")
            for p in (data / table).rglob("*.parquet")
            if "fake-gpt" in str(p)
        )
        # Its partitions' scores gone, only they (and the analysis) run again: a forced rerun of
        # the whole study redid the corpus and the study inputs too, which call no model.
        for scores in (data / "scores").glob("language=*/model=fake-gpt"):
            shutil.rmtree(scores)
        again = run_study(
            config_dir=str(demo_config_dir), data_dir=str(data), models=["fake-gpt"], languages=LANGUAGES
        )
        assert sum(server.state.requests.values()) - sent <= failed * 6  # max_attempts
        assert again.response_calls + again.task_calls <= failed
        assert failed or again.new_calls == 0

    # The key went to the server and nowhere else: not the tables, cache, catalog, report,
    # nor Dagster's own event logs and compute logs.
    assert _files_containing(data, KEY.encode()) == []
    assert _files_containing(tmp_path / "home", KEY.encode()) == []


def test_missing_key_fails_before_any_call(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(KEY_ENV, raising=False)
    with FakeServer() as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, timeout_s=1.0, max_attempts=6)
        with pytest.raises(MissingCredentialsError, match=KEY_ENV):
            run_study(config_dir=str(demo_config_dir), data_dir=str(tmp_path / "data"), models=["fake-gpt"])
        assert sum(server.state.requests.values()) == 0
    assert not (tmp_path / "data").exists()
