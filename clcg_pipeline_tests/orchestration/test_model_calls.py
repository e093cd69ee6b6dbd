"""``model_calls``: one model's stream as a Dagster step, whoever launches it (``clcg run``'s own
runs of it: ``clcg_pipeline_tests/test_study_calls.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.calls import PROVIDER_TAG
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import _model_calls, build_definitions
from clcg_pipeline.orchestration._freshness import Freshness
from clcg_pipeline.orchestration._jobs import RESPONSE_ASSETS, provider_tags
from clcg_pipeline.orchestration._model_calls import OFFLINE
from clcg_pipeline.orchestration._versions import code_versions
from clcg_pipeline.partitions import MODEL_CALLS, STREAM_TOKEN, response_key
from clcg_pipeline_tests.conftest import add_fake_model, partition_call_rows

pytestmark = pytest.mark.slow

KEY_ENV = "CLCG_STREAM_FAKE_KEY"
LANGUAGES = ("en", "pt")
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _stream(instance: dg.DagsterInstance, model: str) -> dg.AssetMaterialization:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(MODEL_CALLS), asset_partitions=[model]), limit=1
    ).records
    assert records and records[0].asset_materialization
    return records[0].asset_materialization


def _materialize_inputs(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    """The corpus of both languages and the study inputs: what a model's stream reads."""
    for iso in LANGUAGES:
        job = defs.resolve_job_def("corpus_job")
        assert job.execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET).success
    inputs = defs.resolve_job_def("study_inputs_job")
    assert inputs.execute_in_process(instance=instance, run_config=_QUIET).success


def _stream_dies_after_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream's process dies (a kill, a crash) once its calls were sent and answered."""
    real = _model_calls.send_stream

    def then_die(*args: object, **kwargs: object) -> object:
        real(*args, **kwargs)  # type: ignore[arg-type]
        raise RuntimeError("the stream's process died here")

    monkeypatch.setattr(_model_calls, "send_stream", then_die)


@contextmanager
def _hosted_study(
    config_dir: Path, edit_yaml: Callable, data: Path
) -> Iterator[tuple[FakeServer, dg.DagsterInstance, dg.Definitions]]:
    """The fake hosted model added, on a fresh instance with the stream's inputs materialized."""
    with FakeServer(Faults(latency_s=0.01)) as server, dg.instance_for_test() as instance:
        add_fake_model(config_dir, edit_yaml, server.url, KEY_ENV, concurrency=8, timeout_s=10)
        defs = build_definitions(config_dir, data)
        sync_model_partitions(instance, load_config(config_dir))
        _materialize_inputs(defs, instance)
        yield server, instance, defs


@pytest.fixture
def two_languages(demo_config_dir: Path, edit_yaml: Callable) -> Path:
    edit_yaml(
        demo_config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[lang for lang in doc["languages"] if lang["iso"] in LANGUAGES]),
    )
    return demo_config_dir


def test_the_stream_sends_every_call_and_the_partitions_record_them_as_theirs(
    two_languages: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a backfill or the daemon does: model_calls[model], then each language x model run
    without any tag of `clcg run`. The runs send nothing; their calls tables say they paid."""
    monkeypatch.setenv(KEY_ENV, "fake-stream-not-real")
    data = tmp_path / "data"
    with _hosted_study(two_languages, edit_yaml, data) as (server, instance, defs):
        streams = defs.resolve_job_def("model_calls_job")
        # A budget of 0 for the stream's run: nothing is sent, and the stream says so.
        no_spend = {**_QUIET, "ops": {MODEL_CALLS: {"config": {"budget_usd": 0.0}}}}
        assert streams.execute_in_process(
            instance=instance, partition_key="fake-gpt", run_config=no_spend
        ).success
        stopped = _stream(instance, "fake-gpt").metadata
        assert not server.state.requests
        assert stopped["failed"].value > 0 and stopped["new_calls"].value == 0  # left to the runs
        stream = streams.execute_in_process(instance=instance, partition_key="fake-gpt", run_config=_QUIET)
        assert stream.success
        sent = dict(server.state.requests)
        recorded = _stream(instance, "fake-gpt").metadata
        assert recorded[STREAM_TOKEN].value == stream.run_id
        assert recorded["languages"].value == list(LANGUAGES)
        assert sent and set(sent.values()) == {1}
        assert recorded["new_calls"].value == len(sent)

        responses = defs.resolve_job_def("responses_job")
        first_runs = {}
        for iso in LANGUAGES:
            key = str(response_key(iso, "fake-gpt"))
            run = responses.execute_in_process(instance=instance, partition_key=key, run_config=_QUIET)
            assert run.success
            first_runs[iso] = run.run_id
        assert dict(server.state.requests) == sent, "a partition's run called the model again"
        tables = partition_call_rows(data)
        paid = tables[~tables["cached"].astype(bool)]
        # Every call of the stream is recorded as paid exactly once, in the partition it was sent
        # for, and credited to the stream's run that paid it, not to the partition's run.
        assert sorted(paid["call_id"]) == sorted(sent)
        assert float(paid["cost_usd"].sum()) > 0
        assert set(paid["paid_run"]) == {stream.run_id} and not set(paid["paid_run"]) & set(
            first_runs.values()
        )

        # A rerun of a partition after the stream was claimed: nothing sent, the record kept.
        key = str(response_key("en", "fake-gpt"))
        assert responses.execute_in_process(instance=instance, partition_key=key, run_config=_QUIET).success
        assert dict(server.state.requests) == sent
        again = partition_call_rows(data)
        kept = again[~again["cached"].astype(bool)]
        assert sorted(kept["call_id"]) == sorted(paid["call_id"])
        assert set(kept["paid_run"]) == set(paid["paid_run"])

        # The stream again: every partition is answered, so it has nothing to send, and
        # `clcg run` still finds the partitions up to date (the stream only orders the runs).
        assert streams.execute_in_process(
            instance=instance, partition_key="fake-gpt", run_config=_QUIET
        ).success
        assert _stream(instance, "fake-gpt").metadata["languages"].value == []
        assert dict(server.state.requests) == sent
        fresh = Freshness(defs, str(data), code_versions(load_config(two_languages)))
        for iso in LANGUAGES:
            key = str(response_key(iso, "fake-gpt"))
            assert fresh.up_to_date(RESPONSE_ASSETS, key, list(LANGUAGES)), iso


def test_an_offline_model_streams_nothing(two_languages: Path, tmp_path: Path) -> None:
    defs = build_definitions(two_languages, tmp_path / "data")
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(two_languages))
        job = defs.resolve_job_def("model_calls_job")
        assert job.execute_in_process(
            instance=instance, partition_key="lexical-reader", run_config=_QUIET
        ).success
        recorded = _stream(instance, "lexical-reader").metadata
        assert recorded["streamed"].value is False and recorded["why"].value == OFFLINE


def test_a_model_without_its_key_fails_the_stream_naming_the_variable(
    two_languages: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Said once, on the stream, before any partition of the model runs."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    add_fake_model(two_languages, edit_yaml, "http://127.0.0.1:9", KEY_ENV)
    data = tmp_path / "data"
    defs = build_definitions(two_languages, data)
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(two_languages))
        _materialize_inputs(defs, instance)
        cache = data / "cache" / "calls"
        cached_before = sorted(cache.rglob("*"))
        failed = defs.resolve_job_def("model_calls_job").execute_in_process(
            instance=instance, partition_key="fake-gpt", run_config=_QUIET, raise_on_error=False
        )
        assert not failed.success
        errors = [str(e.event_specific_data.error) for e in failed.all_events if e.is_step_failure]
        assert errors and KEY_ENV in errors[0]
        assert sorted(cache.rglob("*")) == cached_before, "something was called or cached without a key"


def test_a_stream_run_gets_its_provider_tag(two_languages: Path) -> None:
    """A model_calls run is partitioned by model alone: the per-provider run limit binds it too."""
    config = load_config(two_languages)
    assert provider_tags(config, {"dagster/partition": "lexical-reader"}) == {PROVIDER_TAG: "offline"}
    assert provider_tags(config, {"dagster/partition": "en"}) == {}


def test_what_a_stream_paid_before_it_died_is_recorded_by_the_partitions(
    two_languages: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream that dies after its calls were answered (a kill, a crash) never materializes;
    the partitions still record its calls as theirs, paid, and ask nothing again."""
    monkeypatch.setenv(KEY_ENV, "fake-stream-not-real")
    _stream_dies_after_sending(monkeypatch)
    data = tmp_path / "data"
    with _hosted_study(two_languages, edit_yaml, data) as (server, instance, defs):
        died = defs.resolve_job_def("model_calls_job").execute_in_process(
            instance=instance, partition_key="fake-gpt", run_config=_QUIET, raise_on_error=False
        )
        assert not died.success
        sent = dict(server.state.requests)
        assert sent
        responses = defs.resolve_job_def("responses_job")
        for iso in LANGUAGES:
            key = str(response_key(iso, "fake-gpt"))
            assert responses.execute_in_process(
                instance=instance, partition_key=key, run_config=_QUIET
            ).success
        assert dict(server.state.requests) == sent
    tables = partition_call_rows(data)
    assert sorted(tables.loc[~tables["cached"].astype(bool), "call_id"]) == sorted(sent)


def test_a_stream_asked_for_some_languages_sends_only_theirs(
    two_languages: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `clcg run --languages pt` hands the stream: pt's calls, not every pending language's."""
    monkeypatch.setenv(KEY_ENV, "fake-stream-not-real")
    data = tmp_path / "data"
    with _hosted_study(two_languages, edit_yaml, data) as (server, instance, defs):
        only_pt = {**_QUIET, "ops": {MODEL_CALLS: {"config": {"languages": ["pt"]}}}}
        stream = defs.resolve_job_def("model_calls_job").execute_in_process(
            instance=instance, partition_key="fake-gpt", run_config=only_pt
        )
        assert stream.success
        assert _stream(instance, "fake-gpt").metadata["languages"].value == ["pt"]
        inputs = _model_calls._Inputs(load_config(two_languages), str(data))
        assert set(server.state.requests) == {r.call_id for r in inputs.requests("fake-gpt", "pt")}
