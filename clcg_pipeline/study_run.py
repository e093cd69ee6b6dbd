"""Running a whole study through Dagster on the persistent instance (what ``clcg run`` does).

Each job runs in process against ``DAGSTER_HOME``'s instance, so every run, materialization
and asset check shows in the UI (``make dev``) exactly as if launched from there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from clcg_pipeline.config import ProjectConfig, load_config
from clcg_pipeline.corpus import source_signature
from clcg_pipeline.definitions import build_definitions
from clcg_pipeline.inference import check_credentials
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.partitions import response_key
from clcg_pipeline.storage import partition_dir, read_frame

PROJECT_ROOT = Path(__file__).resolve().parents[1]
FINGERPRINT_TAG = "clcg/fingerprint"
# The CLI prints its own progress and one root-cause line per failure; every event (stack
# traces included) is still stored on the instance and shown in the UI.
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


class StudyRunError(RuntimeError):
    """A job of the study failed; the message names the job and partition."""


@dataclass
class RunSummary:
    runs: int = 0
    skipped: int = 0
    new_cost_usd: float = 0.0
    new_calls: int = 0
    budget_exhausted: bool = False


def ensure_dagster_home(project_root: Path = PROJECT_ROOT) -> Path:
    """Point ``DAGSTER_HOME`` at a persistent folder (default ``.dagster_home``).

    Without it Dagster uses a temporary instance and dynamic partitions vanish (DESIGN.md).
    The project's dagster.yaml is copied there only when the folder has none: a
    ``DAGSTER_HOME`` set by the user keeps its own settings (e.g. PostgreSQL storage).
    """
    home = Path(os.environ.get("DAGSTER_HOME") or project_root / ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    settings = home / "dagster.yaml"
    template = project_root / "dagster.yaml"
    if template.exists() and not settings.exists():
        shutil.copyfile(template, settings)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def fingerprint(config: ProjectConfig, *parts: str) -> str:
    """What a partition's result depends on besides its upstream: config, code, source files."""
    from clcg_pipeline import __version__

    digest = hashlib.sha256(f"{config.config_hash}|{__version__}|{'|'.join(parts)}".encode())
    for source in config.sources.sources:
        digest.update(f"{source.name}={source_signature(source)}".encode())
    return digest.hexdigest()[:16]


def _up_to_date(instance: dg.DagsterInstance, asset: str, partition: str | None, stamp: str) -> bool:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
        ),
        limit=1,
    ).records
    if not records:
        return False
    run = instance.get_run_by_id(records[0].event_log_entry.run_id)
    return run is not None and run.tags.get(FINGERPRINT_TAG) == stamp


def _root_cause(result: dg.ExecuteInProcessResult) -> str:
    """The innermost error message of the first failed step (what a user can act on)."""
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None) if event.is_failure else None
        if error is None:
            continue
        while error.cause is not None:
            error = error.cause
        message = error.message.strip()
        return message if error.cls_name in message.split(":", 1)[0] else f"{error.cls_name}: {message}"
    return "see the run in the Dagster UI (make dev)"


def run_study(
    *,
    config_dir: str,
    data_dir: str,
    models: Sequence[str] | None = None,
    languages: Sequence[str] | None = None,
    budget_usd: float | None = None,
    mode: str = "online",
    force: bool = False,
    regenerate_items: bool = False,
    on_step: Callable[[str, int, int], None] | None = None,
) -> RunSummary:
    """Materialize the whole graph: corpus, study inputs, responses, analysis.

    Partitions whose last materialization was made with the same fingerprint are skipped
    (``force`` re-runs them); model calls are never repeated either way, thanks to the cache.
    """
    config = load_config(config_dir)
    model_ids = list(models) if models else [m.id for m in config.models.models]
    for model_id in model_ids:
        config.models.get(model_id)  # an unknown id fails here, naming it
    isos = list(languages) if languages else config.languages.isos
    unknown = sorted(set(isos) - set(config.languages.isos))
    if unknown:
        raise StudyRunError(f"languages not in the panel: {unknown}")

    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        return _run_jobs(
            instance,
            config,
            config_dir=config_dir,
            data_dir=data_dir,
            model_ids=model_ids,
            isos=isos,
            budget_usd=budget_usd,
            mode=mode,
            force=force,
            regenerate_items=regenerate_items,
            on_step=on_step,
        )


def _run_jobs(
    instance: dg.DagsterInstance,
    config: ProjectConfig,
    *,
    config_dir: str,
    data_dir: str,
    model_ids: list[str],
    isos: list[str],
    budget_usd: float | None,
    mode: str,
    force: bool,
    regenerate_items: bool,
    on_step: Callable[[str, int, int], None] | None,
) -> RunSummary:
    defs = build_definitions(config_dir, data_dir)
    sync_model_partitions(instance, config)
    stamp = fingerprint(config, data_dir)
    for model_id in model_ids:
        # A missing key fails before anything runs, but only for models with work left: a
        # fully materialized model (re-scoring, re-estimating) needs no key at all.
        pending = force or not all(
            _up_to_date(instance, "scores", str(response_key(iso, model_id)), stamp) for iso in isos
        )
        if pending:
            check_credentials(config.models.get(model_id))
    summary = RunSummary()
    total = len(isos) + 1 + len(isos) * len(model_ids) + 1
    step = 0

    def execute(
        job: str, label: str, partition: str | None, check_asset: str | None, run_config: dict[str, Any]
    ) -> bool:
        """Run one job partition unless it is up to date; True when it ran."""
        nonlocal step
        step += 1
        if on_step:
            on_step(label, step, total)
        if check_asset and not force and _up_to_date(instance, check_asset, partition, stamp):
            summary.skipped += 1
            return False
        result = defs.resolve_job_def(job).execute_in_process(
            instance=instance,
            partition_key=partition,
            run_config={**_QUIET, **run_config},
            tags={FINGERPRINT_TAG: stamp},
            raise_on_error=False,
        )
        summary.runs += 1
        if not result.success:
            raise StudyRunError(f"{job} [{partition or 'unpartitioned'}] failed: {_root_cause(result)}")
        return True

    for iso in isos:
        execute("corpus_job", f"corpus {iso}", iso, "paragraphs", {})
    items_config = {"ops": {"item_bank": {"config": {"regenerate": regenerate_items}}}}
    execute("study_inputs_job", "sample, items, fertility", None, "items", items_config)
    remaining = budget_usd
    for model_id in model_ids:
        for iso in isos:
            key = response_key(iso, model_id)
            if remaining is not None and remaining <= 0:
                summary.budget_exhausted = True
                step += 1
                continue
            run_config = {"ops": {"responses": {"config": {"budget_usd": remaining, "mode": mode}}}}
            if not execute("responses_job", f"{model_id} / {iso}", str(key), "scores", run_config):
                continue
            calls_file = (
                partition_dir(data_dir, "calls", {"language": iso, "model": model_id}) / "data.parquet"
            )
            if calls_file.exists():
                calls = read_frame(calls_file)
                fresh = calls[~calls["cached"].astype(bool)] if len(calls) else calls
                summary.new_calls += len(fresh)
                spent = float(fresh["cost_usd"].sum()) if len(fresh) else 0.0
                summary.new_cost_usd += spent
                if remaining is not None:
                    remaining -= spent
                    if (calls["outcome"] == "skipped_budget").any():
                        remaining = 0.0
    # The analysis always re-runs: it reads every partition, including other sessions' models.
    execute("analysis_job", "estimates and report", None, None, {})
    return summary
