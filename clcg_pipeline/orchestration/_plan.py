"""Planning a run before spending anything (what ``clcg plan`` prints)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from upath import UPath

from clcg_pipeline.analysis import PowerQuestion, power_from_pilot
from clcg_pipeline.calls import CallOptions
from clcg_pipeline.config import ProjectConfig, load_config
from clcg_pipeline.corpus import load_source, sample_articles
from clcg_pipeline.inference import plan_partition
from clcg_pipeline.items import validate_items
from clcg_pipeline.storage import call_spend, read_all_partitions, read_frame


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


def plan_power(*, config_dir: str, data_dir: str, question: PowerQuestion) -> dict[str, object]:
    """Articles a study needs for ``question``, from the scores already in ``data_dir`` (the pilot)."""
    config = load_config(config_dir)
    scores = read_all_partitions(data_dir, "scores")
    if scores.empty:
        raise ValueError(f"{data_dir}: no scores yet to plan from; run a pilot first (clcg run)")
    if question.models is not None:
        select_models(config, question.models)  # an unknown id is named before any work
    return power_from_pilot(scores, config, question)


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
    return _with_total(summary, numeric)[["model", "context_scope", *numeric, "tokenizer"]]


def _with_total(summary: pd.DataFrame, numeric: list[str], cost: str = "cost_usd") -> pd.DataFrame:
    """``summary`` and a ``TOTAL`` row summing its ``numeric`` columns (the others blank):
    the counts as integers, ``cost`` in dollars."""
    blank = {column: "" for column in summary.columns if column not in numeric}
    total = summary[numeric].sum().to_frame().T.assign(**blank | {"model": "TOTAL"})
    out = pd.concat([summary, total], ignore_index=True)
    return out.astype({column: "int64" for column in numeric if column != cost} | {cost: "float64"})


GRANULARITY_PLAN_COLUMNS = ["model", "task", "context", "calls", "cached_calls", "shared_calls"]
GRANULARITY_PLAN_COLUMNS += ["too_long_calls", "input_tokens", "input_tokens_per_call", "output_tokens"]
GRANULARITY_PLAN_COLUMNS += ["cost_usd", "tokenizer"]


def plan_granularity(
    *, config_dir: str, data_dir: str, models: Sequence[str] | None = None
) -> tuple[pd.DataFrame | None, list[str]]:
    """Granularity task calls per model x task x context, and notes; calls no model.

    Long documents make these prompts the costly ones, so each task's calls and their input
    tokens are shown. Uses the materialized documents and task bank when they exist; else
    builds them from the primary source as the pipeline would, where cloze confusions can be
    written only by an offline writer (a hosted one would be a paid call: cloze is then left
    out, and a note says so). ``(None, [reason])`` when the family is disabled.
    """
    config = load_config(config_dir)
    if not config.study.granularity.enabled:
        return None, ["granularity tasks: skipped (study.granularity.enabled is false)"]
    model_ids = select_models(config, models)
    notes: list[str] = []
    paragraphs, tasks = _granularity_inputs(config, data_dir, notes)
    if not len(tasks):
        return None, [
            *notes,
            "granularity tasks: no task (no long document fits a bucket; see long_documents)",
        ]
    too_long: list[Any] = []  # granularity.TooLong: requests that cannot fit a model's context window
    plan = _task_call_plan(config, data_dir, model_ids, paragraphs, tasks, too_long)
    numeric = ["calls", "cached_calls", "shared_calls", "too_long_calls"]
    numeric += ["input_tokens", "output_tokens", "cost_usd"]
    groups = plan.groupby(["model", "task", "context", "tokenizer"], as_index=False, sort=False)
    summary = groups[numeric].sum()
    out = _with_total(summary, numeric)
    sent = (out["calls"] - out["cached_calls"] - out["shared_calls"] - out["too_long_calls"]).clip(lower=1)
    out["input_tokens_per_call"] = (out["input_tokens"] / sent).round().astype("int64")
    notes.extend(_long_prompt_note(summary))
    notes.extend(_too_long_notes(config, too_long))
    notes.append("judge calls (paragraph filling, cloze errors) depend on the answers and are not counted")
    # The column shows only when a prompt cannot fit (the notes name them): the table stays 80 wide.
    shown = [c for c in GRANULARITY_PLAN_COLUMNS if c != "too_long_calls" or out[c].any()]
    return out[shown], notes


def _granularity_inputs(
    config: ProjectConfig, data_dir: str, notes: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(long paragraphs, task bank): the materialized ones, else built from the primary source.

    A hosted confusion writer would be a paid call: its cloze tasks are left out and ``notes``
    says so; a hosted word-question writer likewise (the rule-based word tasks are counted in
    their place). An offline writer writes into a cache that is thrown away.
    """
    import tempfile

    from clcg_pipeline.corpus import audit_corpus
    from clcg_pipeline.granularity import (
        WORD_QUESTION_TEMPLATE,
        BoundWriter,
        build_long_documents,
        build_tasks,
        judge_writer,
    )

    stored = {
        name: UPath(data_dir) / name / "data.parquet" for name in ("long_paragraphs", "granularity_tasks")
    }
    if all(path.exists() for path in stored.values()):
        return read_frame(stored["long_paragraphs"]), read_frame(stored["granularity_tasks"])
    gran = config.study.granularity
    reference = config.languages.reference
    tables = load_source(config.sources.primary, config.languages)
    audit = audit_corpus(
        tables.articles,
        tables.paragraphs,
        reference=reference,
        threshold=config.study.completeness_threshold,
    )
    docs = build_long_documents(
        gran,
        paragraphs=tables.paragraphs,
        audit=audit,
        languages=config.languages.isos,
        reference=reference,
        threshold=config.study.completeness_threshold,
        tokenizer=config.study.fertility.tokenizer,
    )
    writer = config.models.get(gran.confusion_writer) if gran.confusion_writer else None
    word_spec = config.models.get(gran.word_question_writer) if gran.word_question_writer else None
    offline_writer = writer if writer is not None and writer.provider == "offline" else None
    offline_word = word_spec if word_spec is not None and word_spec.provider == "offline" else None
    with tempfile.TemporaryDirectory() as scratch:  # an offline writer's cache, thrown away
        options = CallOptions(cache_dir=scratch)
        write = None if offline_writer is None else judge_writer(offline_writer, options)
        word_writer = (
            None
            if offline_word is None
            else BoundWriter(judge_writer(offline_word, options, WORD_QUESTION_TEMPLATE), offline_word.id)
        )
        bank = build_tasks(
            docs.documents,
            docs.paragraphs,
            gran,
            reference=reference,
            tokenizer=config.study.fertility.tokenizer,
            writer=write,
            writer_id=None if offline_writer is None else offline_writer.id,
            word_writer=word_writer,
        )
    if writer is not None and offline_writer is None:
        notes.append(
            f"cloze not counted: its confusions are written by {writer.id} (a paid call) when "
            "granularity_tasks is materialized; plan again after that"
        )
    if word_spec is not None and offline_word is None:
        notes.append(
            f"word tasks counted as the rule-based gap questions: {word_spec.id} writes them (paid "
            "calls, not counted here) when granularity_tasks is materialized; plan again after that"
        )
    return docs.paragraphs, bank.tasks


def _task_call_plan(
    config: ProjectConfig,
    data_dir: str,
    model_ids: Sequence[str],
    paragraphs: pd.DataFrame,
    tasks: pd.DataFrame,
    too_long: list[Any],
) -> pd.DataFrame:
    """Every model x language's planned task calls, one row per call group; ``too_long`` collects
    the requests that cannot fit a model's context window."""
    from clcg_pipeline.granularity import plan_task_calls

    reference = config.languages.reference
    names = {lang.iso: lang.name for lang in config.languages.languages}
    cache_dir = str(UPath(data_dir) / "cache" / "calls")
    planned: set[str] = set()
    frames = [
        plan_task_calls(
            model=config.models.get(model_id),
            language=iso,
            paragraphs=paragraphs[paragraphs["language"].isin([iso, reference])],
            tasks=tasks,
            settings=config.study.granularity,
            cache_dir=cache_dir,
            reference=reference,
            language_name=names.get(iso),
            planned=planned,
            too_long=too_long,
        )
        for model_id in model_ids
        for iso in config.languages.isos
    ]
    # Languages without a long document plan nothing (and would only add empty frames).
    return pd.concat([f for f in frames if len(f)], ignore_index=True)


def _too_long_notes(config: ProjectConfig, too_long: Sequence[Any]) -> list[str]:
    """Per model and task: which languages' and buckets' prompts cannot fit its context window."""
    by_model_task: dict[tuple[str, str], list[Any]] = {}
    for refusal in too_long:
        by_model_task.setdefault((refusal.model, refusal.task), []).append(refusal)
    notes: list[str] = []
    for (model_id, task), refused in by_model_task.items():
        languages = sorted({r.language for r in refused})
        buckets = sorted({r.bucket for r in refused})
        largest = max(refused, key=lambda r: r.size.input_tokens)
        notes.append(
            f"cannot run on {model_id} (context_window {config.models.get(model_id).context_window:,} "
            f"tokens): {task}, {len(refused)} request(s) in {', '.join(languages)} (bucket(s) "
            f"{', '.join(buckets)}); the largest, document {largest.doc_id} in {largest.language}, needs "
            f"about {largest.size.input_tokens:,} prompt + {largest.size.output_cap:,} output tokens; "
            "they are not sent (status too_long)"
        )
    return notes


def _long_prompt_note(summary: pd.DataFrame) -> list[str]:
    """Say in words what the per-call column shows: the document-bearing prompts carry the cost."""
    columns = ["input_tokens", "calls", "cached_calls", "shared_calls", "too_long_calls"]
    by_context = summary.groupby("context")[columns].sum()
    total_in = int(by_context["input_tokens"].sum())
    if not total_in or "full" not in by_context.index:
        return []
    full = by_context.loc["full"]
    sent_full = max(
        int(full["calls"] - full["cached_calls"] - full["shared_calls"] - full["too_long_calls"]), 1
    )
    share = full["input_tokens"] / total_in
    return [
        f"{'long prompts dominate' if share >= 0.5 else 'input tokens'}: calls with the document "
        f"carry {share:.0%} of "
        f"the {total_in:,} input tokens still to send ({full['input_tokens'] / sent_full:,.0f} per call)"
    ]


def plan_spent(*, data_dir: str, models: Sequence[str] | None = None) -> pd.DataFrame:
    """What was already paid, per model and step (``storage.call_spend``), with a ``TOTAL`` row;
    empty when nothing was paid yet. ``models`` narrows the responses and granularity tasks to
    theirs; the judges and writers, listed under their own model, serve every model and stay.
    """
    rows = call_spend(data_dir)
    paid = rows[rows["paid"].astype(bool)] if len(rows) else rows
    if models is not None and len(paid):
        theirs = paid["step"].isin(["responses", "granularity tasks"])
        paid = paid[~theirs | paid["model"].isin(list(models))]
    if not len(paid):
        return pd.DataFrame(columns=["model", "step", "paid_calls", "paid_usd"])
    spent = paid.groupby(["model", "step"], as_index=False).agg(
        paid_calls=("paid", "size"), paid_usd=("paid_usd", "sum")
    )
    return _with_total(spent, ["paid_calls", "paid_usd"], cost="paid_usd")
