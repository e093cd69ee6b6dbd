"""What a stream paid before it died is recorded, once, by the run and host that paid, when its
data folder is copied and run on a fresh Dagster instance (which knows nothing of the stream)."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.partitions import response_key
from clcg_pipeline.storage import spend
from clcg_pipeline_tests.conftest import partition_call_rows
from clcg_pipeline_tests.orchestration.test_model_calls import (
    _QUIET,
    KEY_ENV,
    LANGUAGES,
    _hosted_study,
    _stream_dies_after_sending,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def two_languages(demo_config_dir: Path, edit_yaml: Callable) -> Path:
    edit_yaml(
        demo_config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[lang for lang in doc["languages"] if lang["iso"] in LANGUAGES]),
    )
    return demo_config_dir


def _run_partitions(config_dir: Path, data: Path) -> None:
    """Every language x model partition of the fake model, on a fresh instance over ``data``."""
    with dg.instance_for_test() as fresh:
        defs = build_definitions(config_dir, data)
        sync_model_partitions(fresh, load_config(config_dir))
        responses = defs.resolve_job_def("responses_job")
        for iso in LANGUAGES:
            key = str(response_key(iso, "fake-gpt"))
            assert responses.execute_in_process(instance=fresh, partition_key=key, run_config=_QUIET).success


def test_a_dead_streams_payments_are_recorded_by_it_on_a_copied_folder(
    two_languages: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "fake-stream-not-real")
    _stream_dies_after_sending(monkeypatch)
    monkeypatch.setattr(socket, "gethostname", lambda: "stream-host")
    data, copied = tmp_path / "data", tmp_path / "copied"
    with _hosted_study(two_languages, edit_yaml, data) as (server, instance, defs):
        died = defs.resolve_job_def("model_calls_job").execute_in_process(
            instance=instance, partition_key="fake-gpt", run_config=_QUIET, raise_on_error=False
        )
        assert not died.success
        sent = dict(server.state.requests)
        assert sent and not (data / "calls").exists()  # paid, and recorded in no calls table
        shutil.copytree(data, copied)
        monkeypatch.setattr(socket, "gethostname", lambda: "rerun-host")
        _run_partitions(two_languages, copied)
        first = partition_call_rows(copied)
        _run_partitions(two_languages, copied)  # again: every call found cached, the record kept
        assert dict(server.state.requests) == sent, "a rerun called the model again"
    rows = partition_call_rows(copied)
    paid = rows[~rows["cached"].astype(bool)]
    assert sorted(paid["call_id"]) == sorted(sent)  # each payment once, none lost
    assert set(paid["paid_run"]) == {died.run_id} and set(paid["paid_host"]) == {"stream-host"}
    assert paid.sort_values("call_id")["paid_at"].tolist() == (
        first[~first["cached"].astype(bool)].sort_values("call_id")["paid_at"].tolist()
    )
    found = spend(copied, tables=("calls", "task_calls"))
    assert found.paid_calls == len(sent) and found.by_host.keys() == {"stream-host"}
    assert found.by_host["stream-host"][1] == pytest.approx(float(paid["cost_usd"].sum()))
