"""Every queued run of a model partition carries its provider, whoever launched it.

The per-provider run limit of ``dagster.yaml`` (``tag_concurrency_limits`` on
``clcg/provider``) only binds runs that carry the tag. The daemon's automation sensor, a
backfill, the UI's Materialize button and ``dagster job launch`` all submit runs through the
instance's run coordinator, and none of them knows the model -> provider mapping; this
coordinator adds the tag at submission, before the run is queued, from the run's partition
and the current ``models.yaml``. (``clcg run`` executes in process and tags its own runs,
see :func:`clcg_pipeline.orchestration._jobs.study_run_tags`.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from dagster import DagsterRun, MultiPartitionKey, QueuedRunCoordinator, SubmitRunContext

from clcg_pipeline.calls import COORDINATION_TAG, PROVIDER_TAG, coordination_tags
from clcg_pipeline.config import default_config_dir
from clcg_pipeline.orchestration._dagster_internals import PARTITION_NAME_TAG
from clcg_pipeline.orchestration._jobs import provider_tags
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, MODEL_DIMENSION
from clcg_pipeline.resources import load_study_config

_log = logging.getLogger(__name__)


class ProviderTaggingRunCoordinator(QueuedRunCoordinator):
    """``QueuedRunCoordinator`` that tags model partitions' runs with ``clcg/provider``."""

    def submit_run(self, context: SubmitRunContext) -> DagsterRun:
        run = context.dagster_run
        added = partition_tag(run.tags)
        if PROVIDER_TAG not in run.tags:
            try:
                added |= provider_tags(load_study_config(default_config_dir()), {**run.tags, **added})
            except Exception as error:  # a bad models.yaml must not block every run
                _log.warning(f"run {run.run_id}: no {PROVIDER_TAG} tag added ({error})")
        if COORDINATION_TAG not in run.tags:
            try:
                added |= coordination_tags()  # how this host's runs coordinate their calls
            except ValueError as error:  # a bad dagster.yaml fails the run's calls, with its message
                _log.warning(f"run {run.run_id}: no {COORDINATION_TAG} tag added ({error})")
        if added:
            self._instance.add_run_tags(run.run_id, added)
            context = context._replace(dagster_run=run.with_tags({**run.tags, **added}))
        return super().submit_run(context)


def partition_tag(tags: Mapping[str, str]) -> dict[str, str]:
    """``{dagster/partition: "<language>|<model>"}`` for a run tagged only per dimension, else ``{}``.

    Dagster gives such a run's asset a partition key but stores its outputs unpartitioned (its
    step context checks only ``dagster/partition``); with the tag the run is an ordinary
    partition run, as ``dagster job launch --tags`` users expect.
    """
    if PARTITION_NAME_TAG in tags:
        return {}
    dims = {d: tags.get(f"{PARTITION_NAME_TAG}/{d}") for d in (LANGUAGE_DIMENSION, MODEL_DIMENSION)}
    if not all(dims.values()):
        return {}
    return {PARTITION_NAME_TAG: str(MultiPartitionKey({d: str(v) for d, v in dims.items()}))}
