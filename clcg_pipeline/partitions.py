"""Every partitions definition of the project, defined once (DESIGN.md, "Partitions").

Corpus assets are partitioned by language; responses and scores by language x model. The
model dimension is dynamic so that adding a model to ``models.yaml`` adds its partitions
(``model_partitions_sensor``) without redeploying the code location.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import pandas as pd

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


# The token of no stream (see ``streamed_tokens``); ``calls`` knows an origin by its token.
PARTITION_MARK = ""


def streamed_tokens(instance: dg.DagsterInstance, partition_key: str, calls_asset: str) -> tuple[str, ...]:
    """The tokens of the model's streams that may have paid for this partition's calls, unclaimed.

    A ``model_calls`` run's token is its run id, so a stream killed or failed half-way still
    names what it paid for; ``clcg run``'s own stream records its token in a materialization
    of ``model_calls`` before sending, so a ``clcg run`` killed after paying is found too.
    Streams started before ``calls_asset`` (the partition's calls table) was last written were
    claimed by that write: a rerun finds those calls cached, and the IO manager keeps the
    earlier record of payment.

    Last comes ``PARTITION_MARK``, the token of no stream: the origins it makes
    (``calls.partition_origin``) name the partition whatever the instance holds, so a calls
    table written on a fresh Dagster home (a copied data folder) still records what a killed
    run or stream paid for this partition (``calls.from_cache``, ``storage/_paid.py``).
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
    # A stream's run also records its token.
    return (*dict.fromkeys(run_tokens + recorded), PARTITION_MARK)


# -- runs over a partition range (issue 32: fewer, bigger runs) -------------------------------
# Every asset of the language x model family carries ``single_run_policy()``: an asset backfill
# (the UI's, or a daemon that emits backfills) of a new model's partitions is one run over the
# model's language range, not one run per language paying the run start-up each. Assets with
# different policies never share a run, so the family takes this one function, not a copy.


#: What Dagster (1.13) warns each time an asset takes a ``backfill_policy``; nothing else is matched.
BACKFILL_POLICY_BETA = r"Parameter `backfill_policy` of function `\w+` is currently in beta"


def single_run_policy() -> dg.BackfillPolicy:
    """The backfill policy of every language x model asset.

    Dagster marks the ``backfill_policy`` parameter beta and warns, once per process, on every
    ``clcg run``, ``dagster dev`` and code-server load. The single-run policy is chosen on purpose
    (docs/ARCHITECTURE.md, "One run per new model"), so that one warning, and no other
    beta or deprecation warning, is silenced here: every asset calls this function right before
    its decorator warns, so the filter is in place wherever the definitions are built (a test's or
    ``-W``'s own filters reset it; the next call installs it again, ``filterwarnings`` keeping one copy).
    """
    warnings.filterwarnings("ignore", message=BACKFILL_POLICY_BETA, category=dg.BetaWarning)
    return dg.BackfillPolicy.single_run()


@dataclass(frozen=True)
class PartitionFrames:
    """One output of a run over a partition range: each partition's table and its metadata.

    The IO manager writes each frame to its own partition, with its own record, exactly as a
    run of that partition alone would. A frame is not split by its columns because some tables
    cannot be: ``task_judge_calls`` names the judge in ``model`` and no language.
    """

    frames: Mapping[str, pd.DataFrame]
    metadata: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def partition_check(result: dg.AssetCheckResult, partition: str) -> dg.AssetCheckEvaluation:
    """``result`` as the evaluation of one partition of its check.

    Dagster resolves a yielded ``AssetCheckResult`` to the run's single partition key
    (``to_asset_check_evaluation`` reads ``dagster/partition``), which a range run has not: it
    would record one unpartitioned evaluation for the whole range. An ``AssetCheckEvaluation``
    yielded by the op is recorded as it is, so each partition gets its own result.
    """
    return dg.AssetCheckEvaluation(
        asset_key=_check_asset_key(result),
        check_name=str(result.check_name),
        passed=result.passed,
        metadata=result.metadata,
        severity=result.severity,
        description=result.description,
        partition=partition,
    )


def _check_asset_key(result: dg.AssetCheckResult) -> dg.AssetKey:
    if result.asset_key is None or result.check_name is None:
        raise ValueError(f"a check result in a range run must name its asset and check: {result!r}")
    return dg.AssetKey.from_coercible(result.asset_key)


PartitionEvent = dg.Output | dg.AssetCheckResult


def range_events(
    context: dg.AssetExecutionContext, by_partition: Mapping[str, Sequence[PartitionEvent]]
) -> Iterator[dg.Output | dg.AssetCheckEvaluation]:
    """The events of a range run, from what each partition would have yielded alone.

    Each output becomes one ``PartitionFrames`` output; each partition's output metadata goes to
    that partition's materialization (``add_asset_metadata(partition_key=)``) and record; each
    check result becomes that partition's evaluation (``partition_check``), after the outputs.
    """
    frames: dict[str, dict[str, pd.DataFrame]] = {}
    metadata: dict[str, dict[str, Mapping[str, Any]]] = {}
    checks: list[dg.AssetCheckEvaluation] = []
    selected_checks = context.selected_asset_check_keys
    for key, events in by_partition.items():
        for event in events:
            if isinstance(event, dg.AssetCheckResult):
                evaluation = partition_check(event, key)
                if evaluation.asset_check_key in selected_checks:
                    checks.append(evaluation)
                continue
            frames.setdefault(event.output_name, {})[key] = event.value
            metadata.setdefault(event.output_name, {})[key] = event.metadata
            # The row count the IO manager gives a partition run's materialization, per partition.
            rows = {"dagster/row_count": len(event.value)} if isinstance(event.value, pd.DataFrame) else {}
            asset = context.asset_key_for_output(event.output_name)
            context.add_asset_metadata({**event.metadata, **rows}, asset_key=asset, partition_key=key)
    for name, by_key in frames.items():
        yield dg.Output(PartitionFrames(by_key, metadata[name]), output_name=name)
    # The checks' own outputs, which Dagster requires and yields itself for an AssetCheckResult;
    # they carry nothing (the evaluations below do).
    for name in sorted(context.op_execution_context.selected_output_names - frames.keys()):
        yield dg.Output(None, output_name=name)
    yield from checks


def each_partition(
    context: dg.AssetExecutionContext, one: Callable[[str], Iterable[PartitionEvent]]
) -> Iterator[Any]:
    """The events of a partition run, or of a range run: ``one(key)`` yields what partition
    ``key`` yields when run alone (a range run is a backfill of a new model, or ``clcg run``'s
    run of a model's languages)."""
    if not context.has_partition_key_range:
        yield from one(str(context.partition_key))
        return
    yield from range_events(context, {str(key): list(one(str(key))) for key in context.partition_keys})


def own_rows(context: dg.AssetExecutionContext, frame: pd.DataFrame, partition: str) -> pd.DataFrame:
    """A table as a partition run read it: whole in a partition run, ``partition``'s rows in a range run."""
    return partition_rows(frame, partition) if context.has_partition_key_range else frame


def partition_rows(frame: pd.DataFrame, partition: str) -> pd.DataFrame:
    """The rows of one language x model partition (``"en|gpt-4o"``) of a table read over a range."""
    dims = dict(zip(sorted((LANGUAGE_DIMENSION, MODEL_DIMENSION)), str(partition).split("|"), strict=True))
    if not len(frame):
        return frame
    mask = pd.Series(True, index=frame.index)
    for column, value in dims.items():
        mask &= frame[column] == value
    return frame.loc[mask].reset_index(drop=True)


# The tags of a run over a partition range (a single-run backfill, or ``clcg run``'s run of a
# model's languages): Dagster's own names, set by users too (``dagster job launch --tags``).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def run_span(tags: Mapping[str, str]) -> str | None:
    """What a run covers, from its tags: ``en|m`` for one partition, ``en|m..sw|m`` for a range."""
    if "dagster/partition" in tags:
        return tags["dagster/partition"]
    if RANGE_START_TAG in tags and RANGE_END_TAG in tags:
        return f"{tags[RANGE_START_TAG]}..{tags[RANGE_END_TAG]}"
    return None
