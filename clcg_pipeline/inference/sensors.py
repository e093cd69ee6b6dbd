"""Keeping the model dimension in step with models.yaml, and retrying what was never scored.

Runs themselves are requested by declarative automation (``clcg_pipeline/orchestration/_automation.py``):
this sensor only adds partitions, so nothing is launched before its inputs exist.
"""

import dagster as dg

from clcg_pipeline.calls import PROVIDER_TAG
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, MODEL_DIMENSION, model_partitions, response_key
from clcg_pipeline.resources import StudyResource

# Seconds between two reads of models.yaml: part of a new model's wall time, and cheap.
MODEL_SYNC_INTERVAL_S = 5


def new_model_ids(instance: dg.DagsterInstance, config: ProjectConfig) -> list[str]:
    """Model ids of models.yaml that are not yet partitions, in file order."""
    existing = set(instance.get_dynamic_partitions(MODEL_DIMENSION))
    return [m.id for m in config.models.evaluated if m.id not in existing]


def sync_model_partitions(instance: dg.DagsterInstance, config: ProjectConfig) -> list[str]:
    """Add a partition for every model of models.yaml that lacks one; return those added.

    Models removed from the file keep their partitions (their results stay queryable); the
    analysis only reads the models the config lists.
    """
    added = new_model_ids(instance, config)
    if added:
        instance.add_dynamic_partitions(MODEL_DIMENSION, added)
    return added


def missing_response_keys(instance: dg.DagsterInstance, config: ProjectConfig) -> list[dg.MultiPartitionKey]:
    """Language x model partitions of the current config whose scores were never materialized.

    Only the languages a source covers have partitions (``corpus.study_coverage``)."""
    done = instance.get_materialized_partitions(dg.AssetKey("scores"))
    covered = study_coverage(config).covered
    return [
        key
        for model in config.models.evaluated
        for iso in covered
        if (key := response_key(iso, model.id)) not in done
    ]


def _run_request(config: ProjectConfig, key: dg.MultiPartitionKey, run_key: str) -> dg.RunRequest:
    model = config.models.get(key.keys_by_dimension[MODEL_DIMENSION])
    return dg.RunRequest(partition_key=key, run_key=run_key, tags={PROVIDER_TAG: model.provider})


def upstream_ready(
    instance: dg.DagsterInstance, keys: list[dg.MultiPartitionKey]
) -> list[dg.MultiPartitionKey]:
    """The keys whose inputs exist: the item bank, the sample and the language's paragraphs.

    A run requested before them fails on a missing input and, with a run key, is never asked
    for again (a fresh instance used to launch every responses run before any corpus existed).
    """
    if not all(
        instance.get_latest_materialization_event(dg.AssetKey(name)) for name in ("items", "study_sample")
    ):
        return []
    languages = instance.get_materialized_partitions(dg.AssetKey("paragraphs"))
    return [key for key in keys if key.keys_by_dimension[LANGUAGE_DIMENSION] in languages]


@dg.sensor(
    minimum_interval_seconds=MODEL_SYNC_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a model partition for every new model of models.yaml; "
    "study_automation_sensor then runs its partitions once their inputs exist.",
)
def model_partitions_sensor(context: dg.SensorEvaluationContext, study: StudyResource) -> dg.SensorResult:
    added = new_model_ids(context.instance, study.load())
    if added:
        context.log.info(f"new models {added}: partitions added")
    return dg.SensorResult(
        dynamic_partitions_requests=[model_partitions.build_add_request(added)] if added else [],
        skip_reason=None if added else "no new model in models.yaml",
    )


@dg.schedule(
    job_name="responses_job",
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily retry: requests every response partition never scored whose inputs exist "
    "(e.g. one that failed for a missing key).",
)
def missing_partitions_schedule(
    context: dg.ScheduleEvaluationContext, study: StudyResource
) -> list[dg.RunRequest]:
    config = study.load()
    day = context.scheduled_execution_time.date().isoformat()
    known = set(context.instance.get_dynamic_partitions(MODEL_DIMENSION))
    missing = [
        key
        for key in missing_response_keys(context.instance, config)
        if key.keys_by_dimension[MODEL_DIMENSION] in known
    ]
    return [
        _run_request(config, key, f"recheck:{day}:{key}") for key in upstream_ready(context.instance, missing)
    ]


inference_automation_defs = dg.Definitions(
    sensors=[model_partitions_sensor], schedules=[missing_partitions_schedule]
)
