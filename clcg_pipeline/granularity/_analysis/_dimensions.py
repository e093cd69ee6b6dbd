"""The analysis's extra dimensions (docs/GRANULARITY.md "Analysis dimensions"): gaps and the
middle-versus-edges contrasts by length bucket, the sentence-position curve within the
paragraph, and scores by key-sentence role.

Every estimate is the existing estimator (paired gap, cell mean, ``middle - mean(begin, end)``)
on the same document-cluster bootstrap, so the suite's identifiability rule (``study.min_articles``
documents) applies per cell; a dimension the rows do not carry is skipped with a note.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from clcg_pipeline.analysis import ClusterBootstrap, ClusterCells, FineTable
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis._estimates import STAT_KEYS, Estimates, records, too_few_documents
from clcg_pipeline.granularity._analysis._gaps import language_modes
from clcg_pipeline.granularity._analysis._position import contrast, gran_key, stats_of
from clcg_pipeline.granularity._analysis._rows import ALL, NO_POSITION, TARGETS

_GAP_DIMS = ["bucket", "granularity", "metric", "region", "position", "language"]


def _carried(frame: pd.DataFrame, column: str) -> bool:
    """Whether ``column`` is in the rows with at least one filled value."""
    return column in frame.columns and bool((frame[column].astype(str) != NO_POSITION).any())


def _skipped(column: str, what: str) -> str:
    return f"{what}: skipped, the task_scores rows carry no {column!r} values"


def by_length(
    boot: ClusterBootstrap, full: pd.DataFrame, paired: pd.DataFrame, config: ProjectConfig, est: Estimates
) -> dict[str, Any]:
    """Paired gaps (per language, group, pooled targets; all models) and the middle contrasts
    per length bucket, with the buckets below ``study.min_articles`` documents named once."""
    if not _carried(full, "bucket"):
        return {"gaps": [], "middle_vs_edges": [], "buckets": [], "note": _skipped("bucket", "by length")}
    gfine = boot.fine(paired, _GAP_DIMS, "d") if len(paired) else None
    gaps = _length_gaps(boot, gfine, config, est) if gfine is not None else []
    positioned = full.loc[full["primary"].to_numpy() & (full["region"] != NO_POSITION).to_numpy()]
    sfine = boot.fine(positioned, _GAP_DIMS[:-1], "y") if len(positioned) else None
    contrasts = _bucket_contrasts(sfine, gfine, config, est) if sfine is not None else []
    buckets = _bucket_counts(full, boot.ctx.min_articles)
    gaps.sort(
        key=lambda r: (bucket_key(r["bucket"]), *gran_key((r["granularity"], r["metric"])), r["language"])
    )
    return {"gaps": gaps, "middle_vs_edges": contrasts, "buckets": buckets, "note": _few_note(buckets)}


def _length_gaps(
    boot: ClusterBootstrap, gfine: FineTable, config: ProjectConfig, est: Estimates
) -> list[dict[str, Any]]:
    """The paired gap per length bucket, per language mode (language, group, pooled targets)."""
    gaps: list[dict[str, Any]] = []
    for where, relabel, constant in language_modes(config).values():
        keep = ["bucket", "granularity", "metric", *([] if constant else ["language"])]
        cells = gfine.cells(keep, where=where, relabel=relabel, constant={**constant, "model": ALL})
        if not len(cells.cells):
            continue
        table = boot.table(cells)
        est.add_frame("gap_by_length", table, extra=["bucket"])
        gaps += records(table.rename(columns={"estimate": "gap"}), [*keep[:3], "language", "gap", *STAT_KEYS])
    return gaps


def _bucket_contrasts(
    sfine: FineTable, gfine: FineTable | None, config: ProjectConfig, est: Estimates
) -> list[dict[str, Any]]:
    """``middle - mean(begin, end)`` of the score (all languages) and of the targets' gap, per
    bucket x granularity x metric, along the region and along the paragraph position."""
    targets = list(language_modes(config)[TARGETS][0]["language"])
    out: list[dict[str, Any]] = []
    for axis, other in (("region", "position"), ("position", "region")):
        keep = ["bucket", "granularity", "metric", axis]
        sc = sfine.cells(keep)
        gc = gfine.cells(keep, where={"language": targets}) if gfine is not None else None
        for b, g, m in sorted(
            set(zip(sc.cells["bucket"], sc.cells["granularity"], sc.cells["metric"], strict=True))
        ):
            where = {"bucket": b, "granularity": g, "metric": m}
            entry = {**where, "axis": axis, "pooled_over": other}
            entry["score_contrast"] = stats_of(sfine.boot, sc, contrast(sc, axis, **where))
            entry["gap_contrast"] = _gap_contrast(sfine.boot, gc, axis, where)
            out.append(entry)
            dims = {"granularity": g, "metric": m, axis: "middle-edges", "language": ALL, "model": ALL}
            est.add("middle_minus_edges_score_by_length", entry["score_contrast"], dims, {"bucket": b})
    return sorted(
        out, key=lambda e: (bucket_key(e["bucket"]), *gran_key((e["granularity"], e["metric"])), e["axis"])
    )


def _gap_contrast(
    boot: ClusterBootstrap, gc: ClusterCells | None, axis: str, where: dict[str, str]
) -> dict[str, Any] | None:
    if gc is None or not len(gc.where(**where)):
        return None
    return stats_of(boot, gc, contrast(gc, axis, **where))


def bucket_key(bucket: str) -> tuple[float, str]:
    """Buckets by their token size (``8K`` < ``32K`` < ``128K``), unparsable labels last."""
    head = bucket.rstrip("Kk")
    number = float(head) if head.replace(".", "", 1).isdigit() else float("inf")
    return (number * (1000 if bucket[-1:] in "Kk" else 1), bucket)


def _bucket_counts(full: pd.DataFrame, min_documents: int) -> list[dict[str, Any]]:
    """Documents per bucket in the scored rows, and whether the bucket reaches the rule."""
    counts = full.groupby(full["bucket"].astype(str), observed=True)["doc_id"].nunique()
    return [
        {
            "bucket": b,
            "n_documents": int(n),
            "identifiable": too_few_documents(int(n), min_documents) is None,
            "min_documents": min_documents,
        }
        for b, n in sorted(counts.items(), key=lambda bn: bucket_key(str(bn[0])))
        if b != NO_POSITION
    ]


def _few_note(buckets: list[dict[str, Any]]) -> str | None:
    """The buckets the rule withholds (``too_few_documents`` decided), with their documents, in one
    line. Named by bucket rather than by the rule's reason text: in the report that text is the
    flag of other rows with as many documents (a language group), said once in the section's note."""
    few = [b for b in buckets if not b["identifiable"]]
    if not few:
        return None
    named = ", ".join(
        f"{b['bucket']} ({b['n_documents']} document{'' if b['n_documents'] == 1 else 's'})" for b in few
    )
    floor = few[0]["min_documents"]
    return (
        "not identifiable (estimates descriptive, intervals withheld): length buckets below "
        f"study.min_articles = {floor} documents: {named}"
    )


def sentence_positions(
    boot: ClusterBootstrap, full: pd.DataFrame, paired: pd.DataFrame, config: ProjectConfig, est: Estimates
) -> dict[str, Any]:
    """Score (all languages and models) and the targets' gap by a sentence's position in its
    paragraph, per task, and ``middle - mean(begin, end)`` of each."""
    if not _carried(full, "sentence_position"):
        return {
            "curve": [],
            "middle_vs_edges": [],
            "note": _skipped("sentence_position", "sentence position"),
        }
    keep = ["task", "granularity", "metric", "sentence_position"]
    prim = full.loc[full["primary"].to_numpy() & (full["sentence_position"] != NO_POSITION).to_numpy()]
    sc = boot.cells(prim, keep, "y")
    in_targets = paired["language"].isin(list(language_modes(config)[TARGETS][0]["language"]))
    targets = paired.loc[(paired["sentence_position"] != NO_POSITION).to_numpy() & in_targets.to_numpy()]
    gc = boot.cells(targets, keep, "d") if len(targets) else None
    score = boot.table(sc).rename(columns={"estimate": "score"})
    est.add_frame(
        "score_by_sentence_position",
        score.rename(columns={"score": "estimate"}),
        {"model": ALL},
        ["sentence_position"],
    )
    curve = records(score.assign(language=ALL, model=ALL), [*keep, "language", "model", "score", *STAT_KEYS])
    contrasts = []
    for task, g, m in sorted(
        set(zip(sc.cells["task"], sc.cells["granularity"], sc.cells["metric"], strict=True))
    ):
        where = {"task": task, "granularity": g, "metric": m}
        entry = {**where, "axis": "sentence_position", "pooled_over": "paragraph position"}
        entry["score_contrast"] = stats_of(boot, sc, contrast(sc, "sentence_position", **where))
        entry["gap_contrast"] = _gap_contrast(boot, gc, "sentence_position", where)
        est.add(
            "middle_minus_edges_sentence_score",
            entry["score_contrast"],
            {**where, "language": ALL, "model": ALL},
        )
        contrasts.append(entry)
    return {"curve": curve, "middle_vs_edges": contrasts, "note": None}


def by_role(boot: ClusterBootstrap, full: pd.DataFrame, est: Estimates) -> dict[str, Any]:
    """Score by task x key-sentence role (core / transitional / summary), pooled and per language."""
    if not _carried(full, "role"):
        return {"scores": [], "note": _skipped("role", "accuracy by role")}
    prim = full.loc[full["primary"].to_numpy() & (full["role"] != NO_POSITION).to_numpy()]
    fine = boot.fine(prim, ["task", "granularity", "metric", "role", "language"], "y")
    out: list[dict[str, Any]] = []
    for keep in (
        ["task", "granularity", "metric", "role"],
        ["task", "granularity", "metric", "role", "language"],
    ):
        fixed = {"model": ALL} | ({} if "language" in keep else {"language": ALL})
        table = boot.table(fine.cells(keep, constant=fixed))
        est.add_frame("score_by_role", table, extra=["role"])
        out += records(
            table.rename(columns={"estimate": "score"}), [*keep[:4], "language", "model", "score", *STAT_KEYS]
        )
    return {"scores": out, "note": None}


def floor_caveat(scores: list[dict[str, Any]], reference: str) -> str | None:
    """Said once when a granularity scores above 0 in the reference but exactly 0 in every other
    language (issue 21: the demo's word level), with what that does and does not mean."""
    best: dict[str, dict[str, float]] = {}
    for rec in scores:
        if rec.get("estimate") is None or rec.get("position") not in ("all", NO_POSITION):
            continue
        langs = best.setdefault(str(rec["granularity"]), {})
        langs[rec["language"]] = max(langs.get(rec["language"], 0.0), float(rec["estimate"]))
    floored = [
        g
        for g, langs in best.items()
        if langs.get(reference, 0.0) > 0
        and len(langs) > 1
        and all(v == 0 for k, v in langs.items() if k != reference)
    ]
    if not floored:
        return None
    return (
        f"{', '.join(sorted(floored, key=lambda g: gran_key((g,))))} level: every answer outside "
        f"{reference!r} scored 0. The gold answers are not English-only (a word task is built only "
        "when its answer occurs in every language version of the document), so a 0 here is the "
        "reader's: an English-centric reader (the demo's offline lexical-overlap-v1 matches the "
        "question's English sentence to the document by English word overlap) finds no matching "
        "sentence in another language and answers 'unknown'"
    )
