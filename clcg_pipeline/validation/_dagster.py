"""What the two studies' Dagster assets share: their group and the run config of paid calls."""

# No ``from __future__ import annotations``: Dagster reads the Config fields' annotations.
from typing import Literal

import dagster as dg

from clcg_pipeline.calls import CallOptions, run_budget
from clcg_pipeline.config import ProjectConfig

GROUP = "validation"


class JudgeRunConfig(dg.Config):
    budget_usd: float | None = None
    """Most USD this Dagster run's new model calls may cost, shared by every paid op of the run
    (``inference._calls.run_budget``; study.budget_usd bounds the whole study)."""
    mode: Literal["online", "batch"] = "online"
    """online: the async runner; batch: the provider's batch API (half price, slower)."""

    def call_options(
        self, context: dg.AssetExecutionContext, cache_dir: str, cfg: ProjectConfig
    ) -> CallOptions:
        """This run's options for the judge calls: its shared budget, the study's, the mode."""
        return CallOptions(
            cache_dir=cache_dir,
            study_budget_usd=cfg.study.budget_usd,
            budget=run_budget(context.run_id, self.budget_usd),
            mode=self.mode,
        )


def md_counts(counts: dict[str, int]) -> dg.MetadataValue:
    return dg.MetadataValue.json(counts)
