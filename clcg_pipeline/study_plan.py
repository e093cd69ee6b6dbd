"""Planning a run before spending anything (what ``clcg plan`` prints)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from upath import UPath

from clcg_pipeline.config import ProjectConfig, load_config
from clcg_pipeline.corpus import load_source, sample_articles
from clcg_pipeline.inference import plan_partition
from clcg_pipeline.items import validate_items
from clcg_pipeline.storage import read_frame


def select_models(config: ProjectConfig, models: Sequence[str] | None) -> list[str]:
    """The model ids to run (default: every model of models.yaml); an unknown id is named."""
    known = [m.id for m in config.models.evaluated]
    chosen = list(models) if models else known
    unknown = [model_id for model_id in chosen if model_id not in known]
    if unknown:
        raise ValueError(
            f"unknown model(s) {', '.join(unknown)}: models.yaml has {', '.join(known) or 'no models'}"
        )
    return chosen


def plan_study(*, config_dir: str, data_dir: str, models: Sequence[str] | None = None) -> pd.DataFrame:
    """Calls, estimated tokens and cost per model x condition.

    ``cached_calls`` are already paid for; ``shared_calls`` repeat a request planned in another
    language (closed-book prompts carry no passage) and are sent once. Neither adds cost.

    Uses the materialized sample and item bank when they exist, else derives them from the
    primary source the way the pipeline would.
    """
    config = load_config(config_dir)
    model_ids = select_models(config, models)
    tables = load_source(config.sources.primary, config.languages)
    reference = config.languages.reference
    sample_file = UPath(data_dir) / "study_sample" / "data.parquet"
    items_file = UPath(data_dir) / "items" / "data.parquet"
    if sample_file.exists():
        sample = read_frame(sample_file)
    else:
        english = tables.articles[tables.articles["language"] == reference]
        sample = sample_articles(
            english, config.study.sampling, reference=reference, repetitions=config.study.repetitions
        )
    if items_file.exists():
        items = read_frame(items_file)
    else:
        items, _ = validate_items(tables.items, tables.paragraphs[tables.paragraphs["language"] == reference])
    reps = dict(zip(sample["doc_id"], sample["n_reps"].astype(int), strict=True))
    items = items[items["doc_id"].isin(reps)]
    cache_dir = str(UPath(data_dir) / "cache" / "calls")
    frames = []
    planned: set[str] = set()  # identical requests across languages are sent once
    for model_id in model_ids:
        model = config.models.get(model_id)
        for iso in config.languages.isos:
            paragraphs = tables.paragraphs[
                (tables.paragraphs["language"] == iso) & tables.paragraphs["doc_id"].isin(reps)
            ]
            frames.append(
                plan_partition(
                    model=model,
                    language=iso,
                    paragraphs=paragraphs,
                    items=items,
                    reps=reps,
                    conditions=config.study.conditions,
                    cache_dir=cache_dir,
                    planned=planned,
                )
            )
    plan = pd.concat(frames, ignore_index=True)
    numeric = ["calls", "cached_calls", "shared_calls", "input_tokens", "output_tokens", "cost_usd"]
    summary = plan.groupby(["model", "context_scope", "tokenizer"], as_index=False)[numeric].sum()
    total = summary[numeric].sum().to_frame().T.assign(model="TOTAL", context_scope="", tokenizer="")
    plan = pd.concat([summary, total], ignore_index=True)[["model", "context_scope", *numeric, "tokenizer"]]
    counts = ["calls", "cached_calls", "shared_calls", "input_tokens", "output_tokens"]
    return plan.astype({column: "int64" for column in counts} | {"cost_usd": "float64"})
