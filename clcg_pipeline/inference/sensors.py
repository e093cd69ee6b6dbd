"""Keeping the model dimension in step with models.yaml, and backfilling what is missing."""

import dagster as dg

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.jobs import PROVIDER_TAG
from clcg_pipeline.partitions import MODEL_DIMENSION, model_partitions, response_key
from clcg_pipeline.resources import StudyResource


def new_model_ids(instance: dg.DagsterInstance, config: ProjectConfig) -> list[str]:
    """Model ids of models.yaml that are not yet partitions, in file order."""
    existing = set(instance.get_dynamic_partitions(MODEL_DIMENSION))
    return [m.id for m in config.models.models if m.id not in existing]


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
    """Language x model partitions of the current config whose scores were never materialized."""
    done = instance.get_materialized_partitions(dg.AssetKey("scores"))
    return [
        key
        for model in config.models.models
        for iso in config.languages.isos
        if (key := response_key(iso, model.id)) not in done
    ]


def _run_request(config: ProjectConfig, key: dg.MultiPartitionKey, run_key: str) -> dg.RunRequest:
    model = config.models.get(key.keys_by_dimension[MODEL_DIMENSION])
    return dg.RunRequest(partition_key=key, run_key=run_key, tags={PROVIDER_TAG: model.provider})


@dg.sensor(
    job_name="responses_job",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds partitions for new models in models.yaml and requests their runs.",
)
def model_partitions_sensor(context: dg.SensorEvaluationContext, study: StudyResource) -> dg.SensorResult:
    config = study.load()
    added = new_model_ids(context.instance, config)
    requests = [
        _run_request(config, response_key(iso, model_id), f"new-model:{model_id}:{iso}")
        for model_id in added
        for iso in config.languages.isos
    ]
    if added:
        context.log.info(f"new models {added}: {len(requests)} partitions requested")
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[model_partitions.build_add_request(added)] if added else [],
    )


@dg.schedule(
    job_name="responses_job",
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily re-check: requests every response partition that has never been scored.",
)
def missing_partitions_schedule(
    context: dg.ScheduleEvaluationContext, study: StudyResource
) -> list[dg.RunRequest]:
    config = study.load()
    day = context.scheduled_execution_time.date().isoformat()
    known = set(context.instance.get_dynamic_partitions(MODEL_DIMENSION))
    return [
        _run_request(config, key, f"recheck:{day}:{key}")
        for key in missing_response_keys(context.instance, config)
        if key.keys_by_dimension[MODEL_DIMENSION] in known
    ]


inference_automation_defs = dg.Definitions(
    sensors=[model_partitions_sensor], schedules=[missing_partitions_schedule]
)
