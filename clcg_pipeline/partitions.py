"""Every partitions definition of the project, defined once (DESIGN.md, "Partitions").

Corpus assets are partitioned by language; responses and scores by language x model. The
model dimension is dynamic so that adding a model to ``models.yaml`` adds its partitions
(``model_partitions_sensor``) without redeploying the code location.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Sequence

import dagster as dg

MODEL_DIMENSION = "model"
LANGUAGE_DIMENSION = "language"

model_partitions = dg.DynamicPartitionsDefinition(name=MODEL_DIMENSION)


def language_partitions(isos: Sequence[str]) -> dg.StaticPartitionsDefinition:
    """One partition per language of ``isos``: the panel languages a source covers
    (``corpus.study_coverage``), so a language with nothing to load has no partition."""
    return dg.StaticPartitionsDefinition(list(isos))


def response_partitions(isos: Sequence[str]) -> dg.MultiPartitionsDefinition:
    return dg.MultiPartitionsDefinition(
        {LANGUAGE_DIMENSION: language_partitions(isos), MODEL_DIMENSION: model_partitions}
    )


def response_key(language: str, model: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({LANGUAGE_DIMENSION: language, MODEL_DIMENSION: model})


def model_of_partition(partition_key: str | None) -> str | None:
    """The model of a language x model key given as text (``"en|gpt-4o"``), else None.

    Keys arrive as text from run tags, ``dagster job launch`` and backfills; a multi-partition
    key's dimensions are joined in sorted dimension-name order (language, then model).
    """
    if not partition_key:
        return None
    parts = partition_key.split("|")  # Dagster's multi-partition delimiter
    if len(parts) != 2:
        return None
    return dict(zip(sorted((LANGUAGE_DIMENSION, MODEL_DIMENSION)), parts, strict=True))[MODEL_DIMENSION]


# The asset that sends one model's requests in one stream ahead of that model's language x
# model partitions (``orchestration/_model_calls.py``), and the metadata entry of its
# materialization that names the stream (the origin its cache entries were paid for).
MODEL_CALLS = "model_calls"
MODEL_CALLS_JOB = "model_calls_job"  # the job that runs it alone (``orchestration/_jobs.py``)
STREAM_TOKEN = "stream_token"


def by_dimension(dimension: str) -> dg.MultiToSingleDimensionPartitionMapping:
    """A language x model partition's ``dimension`` partition of an upstream asset."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # beta, but the documented way to map dimensions
        return dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=dimension)


def model_calls_dep() -> dg.AssetDep:
    """What a responses asset declares so that it runs after its model's stream."""
    return dg.AssetDep(MODEL_CALLS, partition_mapping=by_dimension(MODEL_DIMENSION))


def _latest(instance: dg.DagsterInstance, asset: str, partition: str) -> dg.EventLogRecord | None:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1
    ).records
    return records[0] if records else None


# Runs of one model's stream looked at, newest first: far more than a partition ever waits for.
_STREAM_RUNS = 50


def _recorded_streams(instance: dg.DagsterInstance, model: str, since: float | None) -> tuple[str, ...]:
    """The tokens ``model_calls[model]``'s materializations since ``since`` name, oldest first.

    ``clcg run`` records its own stream's token there before it sends anything
    (``_study_steps.record_streams``), so the token of a ``clcg run`` killed while sending is
    known to the next run, which has a token of its own.
    """
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(MODEL_CALLS), asset_partitions=[model], after_timestamp=since
        ),
        limit=_STREAM_RUNS,
    ).records
    tokens: list[str] = []
    for record in records:
        materialization = record.asset_materialization
        value = materialization.metadata.get(STREAM_TOKEN) if materialization else None
        token = getattr(value, "value", value)
        if isinstance(token, str) and token:
            tokens.append(token)
    return tuple(reversed(tokens))


def streamed_tokens(instance: dg.DagsterInstance, partition_key: str, calls_asset: str) -> tuple[str, ...]:
    """The tokens of the model's streams that may have paid for this partition's calls, unclaimed.

    A ``model_calls`` run's token is its run id, so a stream killed or failed half-way still
    names what it paid for; ``clcg run``'s own stream records its token in a materialization
    of ``model_calls`` before sending, so a ``clcg run`` killed after paying is found too.
    Streams started before ``calls_asset`` (the partition's calls table) was last written were
    claimed by that write: a rerun finds those calls cached, and the IO manager keeps the
    earlier record of payment.
    """
    model = model_of_partition(partition_key)
    if model is None:
        return ()
    own = _latest(instance, calls_asset, partition_key)
    since = dt.datetime.fromtimestamp(own.timestamp, tz=dt.UTC) if own else None
    runs = instance.get_run_records(
        dg.RunsFilter(tags={"dagster/partition": model}, created_after=since), limit=_STREAM_RUNS
    )
    stream = dg.AssetKey(MODEL_CALLS)
    run_tokens = tuple(
        record.dagster_run.run_id
        for record in runs
        if record.dagster_run.job_name == MODEL_CALLS_JOB
        or stream in (record.dagster_run.asset_selection or ())
    )
    recorded = _recorded_streams(instance, model, own.timestamp if own else None)
    return tuple(dict.fromkeys(run_tokens + recorded))  # a stream's run also records its token
