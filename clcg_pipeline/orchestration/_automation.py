"""When the daemon materializes what, by itself (declarative automation).

With ``dagster-daemon run`` (``make dev``) on the instance, ``study_automation_sensor`` (and
``corpus_automation_sensor`` for the corpus, ``model_family_automation_sensor`` for the
language x model family) evaluate these conditions every few seconds and build a study from
nothing in dependency order: the corpus of every language in one run -> study inputs -> each
model's stream of calls (``model_calls``) -> responses of all of a model's languages in one run
-> analysis, report and catalog. A new model in ``models.yaml`` gets its partitions from
``model_partitions_sensor`` and then follows the same path.

Paid work (model calls) only runs for partitions that were never materialized
(``build_once``); re-answering after an upstream change stays a deliberate ``clcg run``.
Everything cheap downstream follows its upstream (``follow_upstream``).
"""

from __future__ import annotations

import functools
import operator

import dagster as dg

from clcg_pipeline.orchestration._jobs import CORPUS_ASSETS, RESPONSE_ASSETS, STUDY_INPUT_ASSETS

AC = dg.AutomationCondition

# Minimum seconds between two evaluations of the automation sensor. Short, because a new
# model's wall time is a chain of ticks (partitions -> responses -> analysis).
AUTOMATION_INTERVAL_S = 5


def _idle() -> dg.AutomationCondition:
    return ~AC.any_deps_in_progress() & ~AC.in_progress()


def _family_in_progress() -> dg.AutomationCondition:
    # Any partition of the language x model family in progress, whether a dependency or not. The
    # family is one run (one backfill) for all a model's languages, and Dagster clears it asset by
    # asset: a run's partitions as it executes them, a backfill's only when the backfill daemon
    # next records them (it ticks every 30 s). An analysis asset that looked only at its own
    # dependencies went ahead once ``scores`` was cleared, while ``task_scores`` (read through
    # ``granularity_results``) was not yet: two analysis runs, the first from old results
    # (issue 32). The same condition on every such asset keeps the analysis one run.
    busy = (AC.asset_matches(name, AC.in_progress()) for name in RESPONSE_ASSETS)
    return functools.reduce(operator.or_, busy).with_label("family_in_progress")


def _never_attempted() -> dg.AutomationCondition:
    return (AC.missing() & ~AC.execution_failed()).with_label("never_attempted")


def _until_requested(trigger: dg.AutomationCondition) -> dg.AutomationCondition:
    # True from the tick ``trigger`` fires until the partition is requested or updated: a
    # partition is requested once per trigger, never again on a later tick that still sees it
    # missing (a tick can read materializations from just before its run finished), and a
    # failed run is not retried every tick (the failure shows in the UI; the daily schedule
    # retries responses).
    return trigger.since(AC.newly_requested() | AC.newly_updated())


def _appeared_missing() -> dg.AutomationCondition:
    # ``newly_missing`` alone ignores what is already missing on the first evaluation (that is
    # ``on_missing``'s rule), so a fresh instance would never build anything.
    return (AC.newly_missing() | (AC.initial_evaluation() & AC.missing())).with_label("appeared_missing")


def build_once() -> dg.AutomationCondition:
    """Materialize each partition once, as soon as every upstream partition it reads exists."""
    return (
        AC.missing() & _until_requested(_appeared_missing()) & ~AC.any_deps_missing() & _idle()
    ).with_label("build_once")


def build_stream() -> dg.AutomationCondition:
    """For a model's stream (``model_calls``): once per model, when no input is still to come.

    Like ``build_once``, but an input partition that failed (one language's corpus) does not
    hold back the whole model: its partition is left to call inside its own run.
    """
    waiting = AC.any_deps_match(_never_attempted()).with_label("any_deps_never_attempted")
    return (AC.missing() & _until_requested(_appeared_missing()) & ~waiting & _idle()).with_label(
        "build_stream"
    )


def follow_upstream() -> dg.AutomationCondition:
    """Build once (as above), then rebuild whenever an upstream partition changes (cheap work)."""
    return (AC.eager() | build_once()).with_label("follow_upstream")


def after_every_partition() -> dg.AutomationCondition:
    """For assets that read every partition upstream (analysis, catalog).

    Like ``follow_upstream``, but waits until every upstream partition has been attempted and
    no partition of the language x model family is in progress (by a run or a backfill), so the
    runs of a new model's partitions lead to one analysis run, after the last. A failed upstream
    partition does not block it forever.
    """
    waiting = AC.any_deps_match(_never_attempted() & ~AC.will_be_requested()).with_label(
        "any_deps_never_attempted"
    )
    trigger = _until_requested(_appeared_missing() | AC.any_deps_updated())
    return (trigger & ~waiting & _idle() & ~_family_in_progress()).with_label("after_every_partition")


def _automation_sensor(
    name: str, target: dg.AssetSelection, description: str, *, backfills: bool
) -> dg.AutomationConditionSensorDefinition:
    """An automation sensor over ``target``; with ``backfills`` it requests them as a backfill:
    only a backfill honours the assets' single-run backfill policy (one run over the requested
    range, not one per partition). Dagster emits a backfill only for a tick that requests more
    than one partition of an asset, so a single partition is still one direct run, with no hop."""
    return dg.AutomationConditionSensorDefinition(
        name,
        target=target,
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=AUTOMATION_INTERVAL_S,
        emit_backfills=backfills,
        description=description,
    )


study_automation_sensor = _automation_sensor(
    "study_automation_sensor",
    dg.AssetSelection.all() - dg.AssetSelection.assets(*CORPUS_ASSETS, *RESPONSE_ASSETS),
    "Builds the study from nothing and follows new models (see orchestration/_automation.py).",
    # Runs launched directly: a backfill would add the backfill daemon's 30 s hop per layer, and
    # these assets are one run per partition anyway (a model's stream, or an unpartitioned asset).
    backfills=False,
)


# The corpus multi-asset: a fresh instance's languages are requested in one tick, and launched
# directly they were one run per language, each a fresh interpreter parsing the whole source
# (issue 32); as a backfill, one run over the language range.
corpus_automation_sensor = _automation_sensor(
    "corpus_automation_sensor",
    dg.AssetSelection.assets(*CORPUS_ASSETS),
    "Loads the corpus of every language not yet built, in one run over their range.",
    backfills=True,
)

# The language x model family (responses, scores, granularity answers,
# ``partitions.single_run_policy``): a new model's languages are one Dagster run, at the cost of
# one hop of the backfill daemon (it ticks every 30 s).
model_family_automation_sensor = _automation_sensor(
    "model_family_automation_sensor",
    dg.AssetSelection.assets(*RESPONSE_ASSETS),
    "Answers, scores and judges a model's partitions, all its languages in one run.",
    backfills=True,
)


# Every asset's condition, in one place (the snapshot test pins it). Assets not listed are
# never materialized by the daemon.
CONDITIONS: dict[str, dg.AutomationCondition] = {
    # corpus, per language: once; a changed source file is picked up by `clcg run`
    **dict.fromkeys(CORPUS_ASSETS, build_once()),
    # study inputs: cheap, follow the corpus (granularity documents too; the task bank is frozen:
    # kept unless regenerated)
    **dict.fromkeys(STUDY_INPUT_ASSETS, follow_upstream()),
    # a model's stream, per model: sent once, ahead of its responses partitions
    "model_calls": build_stream(),
    # responses and granularity tasks, per language x model: model calls (answers, judges) are
    # paid, so only partitions never answered (after their model's stream, which they depend on)
    **dict.fromkeys(RESPONSE_ASSETS, build_once()),
    # whole-study outputs: once every partition upstream has been attempted
    **dict.fromkeys(("estimates", "study_results", "duckdb_catalog"), after_every_partition()),
    "report": follow_upstream(),
    # error taxonomy: the sample reads every scored partition; the judges follow the sample (their
    # calls are cached and budgeted, so a changed sample pays only for its new pairs, and the
    # judgements never fall out of step with the sample the analysis joins them to)
    "diagnostic_sample": after_every_partition(),
    **dict.fromkeys(("error_judgements", "order_bias_judgements", "judge_calls"), follow_upstream()),
    # error-taxonomy analysis: cheap, derived from the stored judgements
    **dict.fromkeys(("error_taxonomy_estimates", "error_taxonomy_results"), follow_upstream()),
    # human-validation analysis: cheap, but it reads every scored partition (and the import)
    **dict.fromkeys(
        ("human_qc", "human_validation_joins", "human_validation_estimates", "human_validation_results"),
        after_every_partition(),
    ),
    # human-validation round trip: the sample reads every scored partition (then stays frozen); the
    # keypoint writer's calls are cached and only new items are asked; exports and the inbox import
    # are cheap (annotation_inbox_sensor also runs the import when a file lands in the inbox)
    "annotation_sample": after_every_partition(),
    **dict.fromkeys(
        ("keypoints", "keypoint_calls", "annotation_exports", "human_annotations", "annotation_imports"),
        follow_upstream(),
    ),
    # granularity analysis: cheap, but it reads every task_scores partition
    **dict.fromkeys(("granularity_estimates", "granularity_results"), after_every_partition()),
}


def with_study_automation(spec: dg.AssetSpec) -> dg.AssetSpec:
    """``spec`` with its condition from :data:`CONDITIONS` (for ``Definitions.map_asset_specs``)."""
    return spec.replace_attributes(automation_condition=CONDITIONS.get(spec.key.to_user_string()))
