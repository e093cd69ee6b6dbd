"""The granularity section's extra dimensions (docs/GRANULARITY.md "Analysis dimensions"): gaps
and middle contrasts by length bucket, models ranked per granularity, each model's gap trend
across granularities, the sentence-position curve and scores by key-sentence role.

Said once: a dimension the analysis skipped, or that has nothing in it, takes one line (its
note); the length buckets below the identifiability rule are named once, in the note above
their table, not on every row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._format import MISSING, fmt_num
from clcg_pipeline.report._labels import granularity_row_key
from clcg_pipeline.report._page import Part
from clcg_pipeline.report._studies import ci_cell, col, record_table, records
from clcg_pipeline.storage import GranularityResults

_STATS = {"ci_low", "ci_high", "n", "n_documents"}


def _block(block: GranularityResults, key: str) -> Mapping[str, Any]:
    value = block.get(key)
    return value if isinstance(value, Mapping) else {}


def _one_line(title: str, note: object) -> list[Part]:
    """A dimension with nothing in it: its title and why, on one line."""
    return [Part("note", text=f"{title}: {note or 'nothing recorded'}.")]


def _contrast(entry: Mapping[str, Any], key: str) -> tuple[str, str]:
    block = entry.get(key)
    if not isinstance(block, Mapping):
        return MISSING, MISSING
    return fmt_num(block.get("estimate")), ci_cell(block)


def length_parts(block: GranularityResults) -> list[Part]:
    title = "By length bucket"
    length = _block(block, "length")
    gaps = records(length, "gaps")
    if not gaps:
        return _one_line(title, length.get("note"))
    parts = [Part("heading", text=f"{title}: the cross-lingual gap (all models) per document length")]
    if length.get("note"):
        parts.append(Part("note", text=str(length["note"])))
    parts += record_table(
        gaps,
        [
            col("length bucket", "bucket"),
            ("granularity \u00b7 metric", granularity_row_key, False),
            col("language", "language"),
            col("gap", "gap", "num"),
            ("interval", lambda r: ci_cell(r, "gap"), True),
            col("documents", "n_documents", "int"),
        ],
        value_key="gap",
        known={"bucket", "granularity", "metric", "language", "gap", *_STATS},
    )
    contrasts = records(length, "middle_vs_edges")
    if contrasts:
        parts.append(Part("heading", text="By length bucket: middle minus the mean of begin and end"))
        parts += record_table(
            contrasts,
            [
                col("length bucket", "bucket"),
                ("granularity \u00b7 metric", granularity_row_key, False),
                col("along", "axis", "words"),
                ("score contrast", lambda r: _contrast(r, "score_contrast")[0], True),
                ("interval", lambda r: _contrast(r, "score_contrast")[1], True),
                ("targets' gap contrast", lambda r: _contrast(r, "gap_contrast")[0], True),
                ("gap interval", lambda r: _contrast(r, "gap_contrast")[1], True),
            ],
            known={
                "bucket",
                "granularity",
                "metric",
                "axis",
                "pooled_over",
                "score_contrast",
                "gap_contrast",
            },
        )
    return parts


def _rank_cell(row: Mapping[str, Any]) -> str:
    if row.get("rank_low") is None:
        return "withheld"
    return f"[{row['rank_low']}, {row['rank_high']}]"


def ranks_parts(block: GranularityResults) -> list[Part]:
    title = "Models ranked per granularity"
    ranks = sorted(
        records(block, "model_ranks"),
        key=lambda r: (granularity_row_key(r), r.get("rank") or 0, str(r.get("model"))),
    )
    if not ranks:
        return _one_line(title, "no model scores")
    parts = [Part("heading", text=f"{title} (score over all languages; rank 1 = highest)")]
    parts += record_table(
        ranks,
        [
            ("granularity \u00b7 metric", granularity_row_key, False),
            col("model", "model"),
            col("score", "score", "num"),
            col("rank", "rank", "int"),
            ("rank interval", _rank_cell, True),
            col("of models", "n_models", "int"),
        ],
        value_key="score",
        known={
            "granularity",
            "metric",
            "model",
            "score",
            "rank",
            "rank_low",
            "rank_high",
            "n_models",
            "n_documents",
        },
    )
    return parts


def trend_parts(block: GranularityResults) -> list[Part]:
    title = "Trend of the gap across granularities"
    trends = records(block, "gap_trends")
    if not trends:
        return _one_line(title, "fewer than two granularities with a gap")
    parts = [Part("heading", text=f"{title} (targets' gap per step from word to document)")]
    parts += record_table(
        trends,
        [
            col("model", "model"),
            col("granularities", "granularities"),
            col("slope", "estimate", "num"),
            ("interval", ci_cell, True),
        ],
        known={"model", "granularities", "estimate", *_STATS},
    )
    parts.append(
        Part(
            "note",
            text="Each granularity's gap is in its own tasks' metrics: read the slope's sign (a positive "
            "slope: the gap widens toward the document level), not its size.",
        )
    )
    return parts


def sentence_parts(block: GranularityResults) -> list[Part]:
    title = "Sentence position within the paragraph"
    sentence = _block(block, "sentence_position")
    contrasts = records(sentence, "middle_vs_edges")
    if not contrasts:
        return _one_line(title, sentence.get("note"))
    parts = [Part("heading", text=f"{title}: middle sentence minus the mean of first and last")]
    parts += record_table(
        contrasts,
        [
            col("task", "task", "words"),
            ("granularity \u00b7 metric", granularity_row_key, False),
            ("score contrast", lambda r: _contrast(r, "score_contrast")[0], True),
            ("interval", lambda r: _contrast(r, "score_contrast")[1], True),
            ("targets' gap contrast", lambda r: _contrast(r, "gap_contrast")[0], True),
            ("gap interval", lambda r: _contrast(r, "gap_contrast")[1], True),
        ],
        known={"task", "granularity", "metric", "axis", "pooled_over", "score_contrast", "gap_contrast"},
    )
    parts += record_table(
        records(sentence, "curve"),
        [
            col("task", "task", "words"),
            col("sentence", "sentence_position"),
            col("score", "score", "num"),
            ("interval", lambda r: ci_cell(r, "score"), True),
        ],
        value_key="score",
        known={"task", "granularity", "metric", "sentence_position", "language", "model", "score", *_STATS},
    )
    return parts


def role_parts(block: GranularityResults) -> list[Part]:
    title = "Score by key-sentence role"
    roles = _block(block, "roles")
    scores = records(roles, "scores")
    if not scores:
        return _one_line(title, roles.get("note"))
    parts = [Part("heading", text=f"{title} (core, transitional, summary; all models)")]
    parts += record_table(
        scores,
        [
            col("task", "task", "words"),
            col("role", "role"),
            col("language", "language"),
            col("score", "score", "num"),
            ("interval", lambda r: ci_cell(r, "score"), True),
        ],
        value_key="score",
        known={"task", "granularity", "metric", "role", "language", "model", "score", *_STATS},
    )
    return parts


def dimension_parts(block: GranularityResults) -> list[Part]:
    """Every extra dimension, in the order docs/GRANULARITY.md describes them."""
    return [
        *length_parts(block),
        *ranks_parts(block),
        *trend_parts(block),
        *sentence_parts(block),
        *role_parts(block),
    ]
