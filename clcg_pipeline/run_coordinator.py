"""Every queued run of a model partition carries its provider, whoever launched it.

The per-provider run limit of ``dagster.yaml`` (``tag_concurrency_limits`` on
``clcg/provider``) only binds runs that carry the tag. The daemon's automation sensor, a
backfill, the UI's Materialize button and ``dagster job launch`` all submit runs through the
instance's run coordinator, and none of them knows the model -> provider mapping; this
coordinator adds the tag at submission, before the run is queued, from the run's partition
and the current ``models.yaml``. (``clcg run`` executes in process and tags its own runs,
see :func:`clcg_pipeline.jobs.study_run_tags`.)
"""

from __future__ import annotations

import logging

from dagster import DagsterRun
from dagster._core.run_coordinator import QueuedRunCoordinator, SubmitRunContext

from clcg_pipeline.config import default_config_dir, load_config
from clcg_pipeline.jobs import PROVIDER_TAG, provider_tags

_log = logging.getLogger(__name__)


class ProviderTaggingRunCoordinator(QueuedRunCoordinator):
    """``QueuedRunCoordinator`` that tags model partitions' runs with ``clcg/provider``."""

    def submit_run(self, context: SubmitRunContext) -> DagsterRun:
        run = context.dagster_run
        if PROVIDER_TAG not in run.tags:
            try:
                tags = provider_tags(load_config(default_config_dir()), run.tags)
            except Exception as error:  # a bad models.yaml must not block every run
                _log.warning(f"run {run.run_id}: no {PROVIDER_TAG} tag added ({error})")
                tags = {}
            if tags:
                self._instance.add_run_tags(run.run_id, tags)
                context = context._replace(dagster_run=run.with_tags({**run.tags, **tags}))
        return super().submit_run(context)
