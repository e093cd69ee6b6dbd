"""One model's calls in one stream, as a step of the Dagster graph, whoever launches the study.

``clcg run`` sends each hosted model's calls ahead of its partitions' runs (``_calls_ahead``).
Runs launched by the daemon, a backfill or the UI used to call inside each language x model
run instead, and the model's calls drained at every partition boundary. ``model_calls`` is
that stream as an asset partitioned by model: it sends the requests of every partition of the
model that has not been answered yet through one call session, then records the stream's
token in its materialization (``partitions.STREAM_TOKEN``). The responses assets depend on it
through their model dimension (``partitions.model_calls_dep``), so the daemon and a backfill
run them after it, and each finds its calls in the cache, paid for on its behalf, and records
them as its new calls (``calls.partition_origin``), paid by this stream's run (``paid_run``,
``calls.call_row``): each partition's ``calls`` rows still say what was paid for
it, and by whom. Judges read the answers, so they are still called inside the runs.

Offline models have no latency to hide: their stream records that their partitions answer
inside their own runs.
"""

import time
from collections.abc import Callable
from typing import Any

import dagster as dg

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.orchestration._calls_ahead import send_calls_ahead
from clcg_pipeline.orchestration._dagster_internals import CODE_VERSION_TAG
from clcg_pipeline.partitions import MODEL_CALLS, STREAM_TOKEN, model_partitions, response_key
from clcg_pipeline.resources import StudyResource

# The calls tables a responses partition writes: answered means every one of them exists.
_PARTITION_CALLS = ("calls", "task_calls")
# Seconds between two progress lines in the run's event log (each line is a stored event).
_LOG_EVERY_S = 10.0
OFFLINE = "offline model: its partitions answer inside their own runs (no latency to hide)"


def pending_languages(instance: dg.DagsterInstance, config: ProjectConfig, model_id: str) -> list[str]:
    """The covered languages whose partition of ``model_id`` has not been answered yet."""
    tables = _PARTITION_CALLS if config.study.granularity.enabled else _PARTITION_CALLS[:1]
    answered = [instance.get_materialized_partitions(dg.AssetKey(table)) for table in tables]
    return [
        iso
        for iso in study_coverage(config).covered
        if not all(str(response_key(iso, model_id)) in done for done in answered)
    ]


def unstreamed_models(instance: dg.DagsterInstance, model_ids: list[str]) -> list[str]:
    """The models of ``model_ids`` whose ``model_calls`` partition the instance has never recorded."""
    recorded = instance.get_materialized_partitions(dg.AssetKey(MODEL_CALLS))
    return [model_id for model_id in model_ids if model_id not in recorded]


def record_stream(
    instance: dg.DagsterInstance, model_id: str, code_version: str, metadata: dict[str, Any]
) -> None:
    """Record ``model_calls[model_id]`` as materialized by ``clcg run``, which sends the stream
    itself (``_calls_ahead``) or leaves the calls to the partitions' runs, as this asset does.

    Without it the daemon of ``make dev`` finds the partition missing after ``make run`` and
    launches a stream with nothing left to send, and the UI shows the asset as never
    materialized. Recorded before the model's partitions run, so they are never older than it.
    """
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            MODEL_CALLS,
            partition=model_id,
            metadata={**metadata, "launched_by": "clcg run"},
            # As a run would record it, so the UI does not show the code version as changed.
            tags={CODE_VERSION_TAG: code_version},
        )
    )


def _every(seconds: float, log: Callable[[str], None]) -> Callable[[str], None]:
    shown = {"at": float("-inf")}

    def progress(text: str) -> None:
        if time.monotonic() - shown["at"] >= seconds:
            shown["at"] = time.monotonic()
            log(text)

    return progress


class ModelCallsConfig(dg.Config):
    budget_usd: float | None = None
    """Stop sending before this run's spend would exceed it; the study budget binds as well.
    What it stops is left to the partitions' runs, under their own budgets."""


def _inputs(config: ProjectConfig) -> list[dg.AssetDep]:
    # Every language's paragraphs: the stream builds every pending partition's requests.
    inputs = [dg.AssetDep("paragraphs", partition_mapping=dg.AllPartitionMapping())]
    inputs += [dg.AssetDep(name) for name in ("items", "study_sample")]
    if config.study.granularity.enabled:
        inputs += [dg.AssetDep(name) for name in ("long_paragraphs", "granularity_tasks")]
    return inputs


def build_model_calls_defs(config: ProjectConfig) -> dg.Definitions:
    @dg.asset(
        name=MODEL_CALLS,
        group_name="inference",
        partitions_def=model_partitions,
        deps=_inputs(config),
        owners=["team:clcg"],
        description="Sends one model's requests for every language not answered yet in one "
        "stream, ahead of its language x model partitions (which record the calls as theirs).",
    )
    def model_calls(
        context: dg.AssetExecutionContext, config: ModelCallsConfig, study: StudyResource
    ) -> dg.MaterializeResult:
        """One call session for every pending partition of the model: no drain between them."""
        cfg = study.load()
        model_id = str(context.partition_key)
        if cfg.models.get(model_id).provider == "offline":
            context.log.info(f"{model_id}: {OFFLINE}")
            return dg.MaterializeResult(metadata={"streamed": False, "why": OFFLINE})
        languages = pending_languages(context.instance, cfg, model_id)
        sent = send_calls_ahead(
            cfg,
            study.data_dir,
            [(model_id, iso) for iso in languages],
            token=context.run_id,
            budget_usd=config.budget_usd,
            progress=_every(_LOG_EVERY_S, context.log.info),
        )
        if sent.refused:
            # Its partitions would meet the same error: said once, here, before any of them runs.
            raise dg.Failure(description=f"{model_id}: {sent.refused[model_id]}")
        if sent.failed:
            context.log.warning(
                f"{model_id}: {sent.failed:,} calls not answered (errors, or a budget reached): "
                "the partitions' runs try them again, under their own budgets"
            )
        context.log.info(
            f"{model_id}: {sent.requests:,} requests of {len(languages)} partitions, "
            f"{sent.sent:,} new calls, {sent.failed:,} failed, in {sent.seconds:.1f}s"
        )
        return dg.MaterializeResult(
            metadata={
                "streamed": True,
                STREAM_TOKEN: context.run_id,
                "languages": dg.MetadataValue.json(languages),
                "requests": sent.requests,
                "new_calls": sent.sent,
                # errors and budget stops: the partitions' runs try them again
                "failed": sent.failed,
                "seconds": round(sent.seconds, 2),
                "budget_usd": config.budget_usd,
                "calls_per_s": round(sent.sent / sent.seconds, 1) if sent.seconds else 0.0,
            }
        )

    return dg.Definitions(assets=[model_calls])
