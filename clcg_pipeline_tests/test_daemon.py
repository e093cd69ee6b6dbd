"""The study without `clcg run`: the real daemon, the UI's view of runs, runs launched by others."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
import yaml
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import (
    PROJECT_ROOT,
    LocalDaemon,
    ProviderTaggingRunCoordinator,
    build_definitions,
)
from clcg_pipeline.orchestration._jobs import (
    CODE_LOCATION,
    CORPUS_ASSETS,
    PROVIDER_TAG,
    RESPONSE_ASSETS,
    STUDY_INPUT_ASSETS,
    code_location_job_origin,
    runs_under_code_location,
)
from clcg_pipeline.partitions import MODEL_CALLS, MODEL_CALLS_JOB, response_key, run_span
from clcg_pipeline.storage import query
from clcg_pipeline_tests.conftest import (
    SMALL_PANEL,
    SmallStudy,
    add_fake_model,
    cut_to_small_panel,
    partition_call_rows,
    quick_backfill_daemon,
)

FIRST, SECOND = "lexical-reader", "hosted-b"
KEY_ENV = "CLCG_DAEMON_FAKE_KEY"
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}

# Two languages keep the daemon tests short; the chain is the same for 18.
PANEL = SMALL_PANEL
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@pytest.fixture
def small_config(config_dir: Path) -> Path:
    """The config of ``conftest.small_study``: the demo's, cut to PANEL and 50 replicates."""
    cut_to_small_panel(config_dir)
    return config_dir


def _run_ended(instance: dg.DagsterInstance, asset: str, partition: str) -> float:
    """When the run that last materialized ``asset[partition]`` ended."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1
    ).records
    assert records, f"{asset}[{partition}] was never materialized"
    return instance.get_run_stats(records[0].run_id).end_time or 0.0


def _latest(instance: dg.DagsterInstance, asset: str, partition: str | None = None) -> float:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
        ),
        limit=1,
    ).records
    return records[0].timestamp if records else 0.0


def _run_model(run: dg.DagsterRun) -> str:
    """The model of a responses run: one partition, or a range over one model's languages."""
    return str(run_span(run.tags)).split("|")[-1]


def _materializations(instance: dg.DagsterInstance, asset: str, partition: str) -> int:
    return len(
        instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=10
        ).records
    )


def _requested(ticks: Any) -> dict[str, set[str]]:
    """What one evaluation of the automation conditions requests: asset -> partitions."""
    return {
        result.key.to_user_string(): {str(key) for key in ticks.get_requested_partitions(result.key)}
        for result in ticks.results
        if ticks.get_num_requested(result.key)
    }


def test_the_daemons_first_ticks_build_the_study_from_nothing_in_dependency_order(
    small_config: Path, tmp_path: Path
) -> None:
    """The "from nothing" half of the daemon's work, tick by tick in process (the daemon test
    below starts from a study `clcg run` built, and follows a new model from there): on a fresh
    instance the conditions request every language's corpus (and the language panel, which reads
    nothing); with the corpus there, the study inputs; with those, the model's stream; with the
    stream, all of its partitions at once (one range run). Nothing is requested before its inputs."""
    defs = build_definitions(small_config, tmp_path / "data")
    ours = {f"{iso}|{FIRST}" for iso in PANEL}
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(small_config))
        ticks = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert _requested(ticks) == {"languages": {"None"}} | {a: set(PANEL) for a in CORPUS_ASSETS}
        for iso in PANEL:
            corpus = defs.resolve_job_def("corpus_job")
            assert corpus.execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET).success
        ticks = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=ticks.cursor)
        assert _requested(ticks) == {a: {"None"} for a in STUDY_INPUT_ASSETS if a != "languages"}
        inputs = defs.resolve_job_def("study_inputs_job")
        assert inputs.execute_in_process(instance=instance, run_config=_QUIET).success
        ticks = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=ticks.cursor)
        assert _requested(ticks) == {MODEL_CALLS: {FIRST}}
        stream = defs.resolve_job_def(MODEL_CALLS_JOB)
        assert stream.execute_in_process(instance=instance, partition_key=FIRST, run_config=_QUIET).success
        ticks = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=ticks.cursor)
        assert _requested(ticks) == dict.fromkeys(RESPONSE_ASSETS, ours)


def _sensors_ticked(instance: dg.DagsterInstance, names: set[str]) -> bool:
    """Whether each sensor named has finished at least one tick on ``instance``."""
    states = {state.instigator_name: state for state in instance.all_instigator_state()}
    return names <= set(states) and all(
        any(
            tick.status.value != "STARTED"
            for tick in instance.get_ticks(
                states[name].instigator_origin_id, states[name].selector_id, limit=3
            )
        )
        for name in names
    )


@pytest.mark.slow
def test_the_daemon_follows_a_new_model_of_a_study_built_by_clcg_run(
    small_study: SmallStudy, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`clcg run` builds the study; then only `dagster-daemon run` on its instance (what `make dev`
    after `make run` is): it launches nothing for the study as it is, and a hosted model added to
    models.yaml ends up in study_results.json, the report and the catalog, its calls sent in one
    stream (model_calls) ahead of its partitions' run. Building from nothing is the test above
    (the same conditions, tick by tick); the daemon once did both here, ~3 minutes on CI."""
    monkeypatch.setenv(KEY_ENV, "fake-daemon-not-real")
    quick_backfill_daemon(tmp_path / "site", monkeypatch)
    # The study `run_study` built (conftest.small_study: the panel of small_config), copied: its
    # config, data folder and Dagster home, where LocalDaemon looks for them.
    root = small_study.copy_to(tmp_path / "run")
    config = root / "config"
    assert small_study.summary.runs > 0
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        runs_of_clcg_run = len(instance.get_runs())
    with FakeServer(Faults(latency_s=0.01)) as server, LocalDaemon(root, config) as daemon:
        assert FIRST in daemon.models_in_results()
        # Generous limits: a loaded 2-core machine runs the daemon's ticks and runs slowly (each of
        # the new model's runs, a fresh interpreter, took a minute there); a healthy run is faster.
        sensors = {
            "model_partitions_sensor",
            "study_automation_sensor",
            "corpus_automation_sensor",
            "model_family_automation_sensor",
        }
        with dg.DagsterInstance.from_config(str(daemon.home)) as instance:
            daemon.wait_for("the daemon's first ticks", lambda: _sensors_ticked(instance, sensors), 240)
            assert len(instance.get_runs()) == runs_of_clcg_run, "the daemon redid what `clcg run` did"
        add_fake_model(config, edit_yaml, server.url, KEY_ENV, id=SECOND, concurrency=8, timeout_s=10)
        daemon.wait_for(
            f"study_results.json with {SECOND} (added to models.yaml)",
            lambda: SECOND in daemon.models_in_results(),
            480,
        )
        daemon.wait_for(
            f"report.html naming {SECOND}",
            lambda: SECOND in (daemon.data_dir / "report.html").read_text(encoding="utf-8"),
            30,
        )
        with dg.DagsterInstance.from_config(str(daemon.home)) as instance:
            # The results can name the new model once its first language is scored; the daemon
            # then scores the other language and rebuilds the analysis and the catalog by itself.
            # Wait for that, and for every run it launched to finish, before judging.
            def settled() -> bool:
                in_flight = instance.get_run_records(
                    dg.RunsFilter(statuses=[s for s in dg.DagsterRunStatus if s not in FINISHED])
                )
                scored = [_latest(instance, "scores", str(response_key(iso, SECOND))) for iso in PANEL]
                return not in_flight and all(scored) and _latest(instance, "duckdb_catalog") > max(scored)

            daemon.wait_for("the catalog rebuilt after every partition of the new model", settled, 240)
            catalog_built = _latest(instance, "duckdb_catalog")
            last_scores = max(_latest(instance, "scores", str(response_key(iso, SECOND))) for iso in PANEL)
            runs = instance.get_run_records()
            unsuccessful = FINISHED - {dg.DagsterRunStatus.SUCCESS}
            failed = [r.dagster_run for r in runs if r.dagster_run.status in unsuccessful]
            # Dependency order: no run was launched before its inputs existed, so none failed.
            assert not failed, [(r.run_id, r.status, r.asset_selection) for r in failed]
            # The first model's: `clcg run`'s responses_job; the new model's: the daemon's backfill.
            responses = [
                r
                for r in runs
                if r.dagster_run.job_name == "responses_job"
                or dg.AssetKey("predictions") in (r.dagster_run.asset_selection or ())
            ]
            assert {r.dagster_run.tags[PROVIDER_TAG] for r in responses} == {"offline", "openai_compatible"}
            # The new model's languages ran as ONE run (the family's single-run backfill policy),
            # and no partition ran twice.
            by_model: dict[str, list[dg.DagsterRun]] = {}
            for r in responses:
                by_model.setdefault(_run_model(r.dagster_run), []).append(r.dagster_run)
            assert len(by_model[SECOND]) == 1, [run.tags for run in by_model[SECOND]]
            assert len(by_model[FIRST]) <= len(PANEL)
            for iso in PANEL:
                for model in (FIRST, SECOND):
                    assert _materializations(instance, "scores", str(response_key(iso, model))) == 1
            # The hosted model's stream ran first; its partitions' run started after it ended.
            streamed = _run_ended(instance, MODEL_CALLS, SECOND)
            (run,) = by_model[SECOND]
            assert (instance.get_run_stats(run.run_id).start_time or 0.0) >= streamed
        sent = dict(server.state.requests)
    assert catalog_built > last_scores, "the DuckDB catalog was not rebuilt after the new model's scores"
    # Every call sent once, by the stream, and recorded as paid by the partition it was sent for.
    assert sent and set(sent.values()) == {1}
    calls = partition_call_rows(daemon.data_dir, SECOND)
    assert sorted(calls.loc[~calls["cached"].astype(bool), "call_id"]) == sorted(sent)
    models = query(daemon.data_dir / "clcg.duckdb", "select distinct model from scores")["model"]
    assert set(models) == {FIRST, SECOND}
    estimates = duckdb.sql(
        f"select * from read_parquet('{daemon.data_dir / 'estimates' / 'data.parquet'}')"
    ).df()
    assert SECOND in estimates.to_string()


def _materialize_inputs(defs: dg.Definitions, instance: dg.DagsterInstance, isos: tuple[str, ...]) -> None:
    for iso in isos:
        assert (
            defs.resolve_job_def("corpus_job")
            .execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET)
            .success
        )
    assert (
        defs.resolve_job_def("study_inputs_job")
        .execute_in_process(instance=instance, run_config=_QUIET)
        .success
    )


def test_a_responses_run_launched_outside_clcg_run(
    small_config: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dagster job launch --tags '{"dagster/partition": "en|lexical-reader"}'` hands the asset a
    text key (it used to fail: 'str' object has no attribute 'keys_by_dimension'); and a model
    whose key is unset fails before any request, naming the variable, without `clcg run`."""
    monkeypatch.delenv("CLCG_TEST_UNSET_KEY", raising=False)
    hosted = {
        "id": "hosted",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "api_key_env": "CLCG_TEST_UNSET_KEY",
    }
    edit_yaml(
        small_config / "models.yaml",
        lambda doc: doc["models"].append({**hosted, "knowledge_cutoff": "2023-10-01"}),
    )
    defs = build_definitions(small_config, tmp_path / "data")
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(small_config))
        _materialize_inputs(defs, instance, ("en",))
        job = defs.resolve_job_def("responses_job")
        result = job.execute_in_process(
            instance=instance, tags={"dagster/partition": f"en|{FIRST}"}, run_config=_QUIET
        )
        assert result.success
        assert _latest(instance, "scores", str(response_key("en", FIRST)))

        cache = tmp_path / "data" / "cache"
        cached_before = sorted(cache.rglob("*"))
        failed = job.execute_in_process(
            instance=instance,
            tags={"dagster/partition": "en|hosted"},
            run_config=_QUIET,
            raise_on_error=False,
        )
        assert not failed.success
        errors = [
            str(event.event_specific_data.error) for event in failed.all_events if event.is_step_failure
        ]
        assert errors and "CLCG_TEST_UNSET_KEY" in errors[0]
        assert sorted(cache.rglob("*")) == cached_before, "something was called or cached without a key"


def test_a_run_with_dimension_tags_only_never_writes_an_unpartitioned_table(
    small_config: Path, tmp_path: Path
) -> None:
    """`dagster/partition/language` + `dagster/partition/model` without `dagster/partition`: Dagster
    hands the asset a key but its outputs no partition, and scores/data.parquet beside the
    partitions broke every catalog query on the table. The run fails instead, writing nothing."""
    data = tmp_path / "data"
    defs = build_definitions(small_config, data)
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(small_config))
        _materialize_inputs(defs, instance, ("en",))
        result = defs.resolve_job_def("responses_job").execute_in_process(
            instance=instance,
            tags={"dagster/partition/language": "en", "dagster/partition/model": FIRST},
            run_config=_QUIET,
            raise_on_error=False,
        )
        assert not result.success
        errors = [str(e.event_specific_data.error) for e in result.all_events if e.is_step_failure]
        assert errors and "dagster/partition" in errors[0]
    for table in ("predictions", "calls", "scores"):
        assert not (data / table / "data.parquet").exists(), table


def test_queued_runs_get_their_provider_tag(small_config: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Whatever submits a run (daemon, UI, backfill, `dagster job launch`), the coordinator adds
    clcg/provider before queueing it, so the per-provider limit of dagster.yaml binds it."""
    monkeypatch.setenv("CLCG_CONFIG_DIR", str(small_config))
    settings = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text(encoding="utf-8"))
    assert settings["run_coordinator"]["class"] == ProviderTaggingRunCoordinator.__name__
    job = build_definitions(small_config, tmp_path / "data").resolve_job_def("responses_job")
    origin = code_location_job_origin(job.name)  # queued runs need one, as in the UI and daemon
    with dg.instance_for_test(overrides={"run_coordinator": settings["run_coordinator"]}) as instance:
        assert isinstance(instance.run_coordinator, ProviderTaggingRunCoordinator)
        for tags in ({"dagster/partition": f"pt|{FIRST}"}, {"dagster/partition/model": FIRST}):
            run = instance.create_run_for_job(
                job, tags=tags, status=dg.DagsterRunStatus.NOT_STARTED, remote_job_origin=origin
            )
            queued = instance.run_coordinator.submit_run(dg.SubmitRunContext(run, workspace=None))  # type: ignore[arg-type]
            assert queued.status == dg.DagsterRunStatus.QUEUED
            assert instance.get_run_by_id(run.run_id).tags[PROVIDER_TAG] == "offline"  # type: ignore[union-attr]
        # Dimension tags alone (as `dagster job launch --tags` may give them) get the partition
        # tag too, so the run's outputs are stored in their partition.
        run = instance.create_run_for_job(
            job,
            tags={"dagster/partition/language": "pt", "dagster/partition/model": FIRST},
            status=dg.DagsterRunStatus.NOT_STARTED,
            remote_job_origin=origin,
        )
        instance.run_coordinator.submit_run(dg.SubmitRunContext(run, workspace=None))  # type: ignore[arg-type]
        assert instance.get_run_by_id(run.run_id).tags["dagster/partition"] == f"pt|{FIRST}"  # type: ignore[union-attr]
        untagged = instance.create_run_for_job(
            job, tags={}, status=dg.DagsterRunStatus.NOT_STARTED, remote_job_origin=origin
        )
        instance.run_coordinator.submit_run(dg.SubmitRunContext(untagged, workspace=None))  # type: ignore[arg-type]
        assert PROVIDER_TAG not in instance.get_run_by_id(untagged.run_id).tags  # type: ignore[union-attr]


RUNS_QUERY = """
query JobRuns($selector: PipelineSelector!) {
  pipelineOrError(params: $selector) {
    __typename
    ... on Pipeline { runs { runId repositoryOrigin { repositoryName repositoryLocationName } } }
  }
}
"""


def test_clcg_runs_are_listed_under_their_job_in_the_ui(small_config: Path, tmp_path: Path) -> None:
    """The UI's job page lists runs by their code location's label, and the Overview timeline
    drops runs without a repository origin; asked through the webserver's GraphQL schema."""
    data_dir = tmp_path / "data"
    defs = build_definitions(small_config, data_dir)
    workspace = tmp_path / "workspace.yaml"
    location = {
        "module_name": "clcg_pipeline.definitions",
        "location_name": CODE_LOCATION,
        "working_directory": str(PROJECT_ROOT),
    }
    workspace.write_text(yaml.safe_dump({"load_from": [{"python_module": location}]}), encoding="utf-8")
    with dg.instance_for_test() as instance:
        plain = defs.resolve_job_def("corpus_job").execute_in_process(
            instance=instance, partition_key="en", run_config=_QUIET
        )
        with runs_under_code_location(instance):
            filed = defs.resolve_job_def("corpus_job").execute_in_process(
                instance=instance, partition_key="pt", run_config=_QUIET
            )
        assert plain.success and filed.success
        with pytest.MonkeyPatch.context() as env:
            env.setenv("CLCG_CONFIG_DIR", str(small_config))
            env.setenv("CLCG_DATA_DIR", str(data_dir))
            with define_out_of_process_context(str(workspace), None, instance) as context:
                selector = {
                    "repositoryLocationName": CODE_LOCATION,
                    "repositoryName": "__repository__",
                    "pipelineName": "corpus_job",
                }
                result = execute_dagster_graphql(context, RUNS_QUERY, {"selector": selector})
    assert not result.errors, result.errors
    job = result.data["pipelineOrError"]
    assert job["__typename"] == "Pipeline", job
    assert [run["runId"] for run in job["runs"]] == [filed.run_id]
    assert job["runs"][0]["repositoryOrigin"] == {
        "repositoryName": "__repository__",
        "repositoryLocationName": CODE_LOCATION,
    }
