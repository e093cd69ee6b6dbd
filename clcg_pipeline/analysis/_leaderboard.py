"""The leaderboard: one row per model from ``study_results.json``, as CSV and JSON (issue 21)."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from clcg_pipeline.storage import (
    LeaderboardDocument,
    finite,
    jsonable,
    validate_model,
    write_bytes_atomic,
    write_json,
)

LEADERBOARD_FILES = ("leaderboard.csv", "leaderboard.json")

#: Columns in order: the model, its gaps with intervals, English score, ranks and tie group,
#: identifiability, and whether its answers are simulated.
LEADERBOARD_COLUMNS: list[str] = [
    "model",
    "h1_micro",
    "h1_micro_ci_low",
    "h1_micro_ci_high",
    "macro_net",
    "macro_net_ci_low",
    "macro_net_ci_high",
    "english_score",
    "rank",
    "rank_ci_low",
    "rank_ci_high",
    "tie_group",
    "rank_net",
    "rank_net_ci_low",
    "rank_net_ci_high",
    "n_models",
    "n_articles",
    "identifiable",
    "reason",
    "simulated",
]


def _mapping_at(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``parent[key]`` when it is a mapping, else an empty one (an older or partial document)."""
    value = parent.get(key)
    return value if isinstance(value, Mapping) else {}


def _simulated_models(results: Mapping[str, Any]) -> set[str]:
    """The ids of the models whose answers are simulated (``settings.models[].simulated``, the
    demo's reader): the leaderboard's ``simulated`` column, which the terminal marks as the report does."""
    models = _mapping_at(results, "settings").get("models")
    return {str(m.get("id")) for m in models or [] if isinstance(m, Mapping) and m.get("simulated")}


def _interval(prefix: str, block: object) -> dict[str, float | None]:
    entry = block if isinstance(block, Mapping) else {}
    return {
        prefix: finite(entry.get("estimate")),
        f"{prefix}_ci_low": finite(entry.get("ci_low")),
        f"{prefix}_ci_high": finite(entry.get("ci_high")),
    }


def _row(model: str, gaps: Mapping[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """One model's row; a missing piece (an older document) stays empty, never invented."""
    micro = _mapping_at(gaps, "h1_micro")
    ranks = block.get("ranks", {}).get(model, {})
    english = block.get("english_score", {}).get(model, {})
    row: dict[str, Any] = {"model": model}
    row |= _interval("h1_micro", micro)
    row |= _interval("macro_net", gaps.get("macro_net"))
    row["english_score"] = finite(english.get("estimate")) if isinstance(english, Mapping) else None
    row |= _interval("rank", ranks.get("h1_micro"))
    # Empty when the tie groups are withheld (their reason is in the JSON's ``tie_groups``).
    row["tie_group"] = _mapping_at(block, "tie_groups").get("by_model", {}).get(model)
    row |= _interval("rank_net", ranks.get("macro_net"))
    row["n_models"] = len(block.get("models", [])) or None
    row["n_articles"] = micro.get("n_articles")
    # The model's H1 micro decides: withheld below study.min_articles, as in the estimates.
    row["identifiable"] = bool(micro.get("identifiable", micro.get("estimate") is not None))
    row["reason"] = micro.get("reason") or (None if micro else "no H1 micro estimate for this model")
    return row


def _tie_summary(block: Mapping[str, Any]) -> dict[str, Any]:
    """The tie groups' rule, level and groups, or why there are none (said once, not per row)."""
    ties = _mapping_at(block, "tie_groups")
    if not ties:
        return {"groups": [], "reason": "no tie groups in the results (written before issue 37)"}
    return {key: ties.get(key) for key in ("gap", "level", "rule", "groups", "reason")}


def leaderboard(results: Mapping[str, Any]) -> pd.DataFrame:
    """One row per model with H1 by-model estimates, by rank (then model id); columns ``LEADERBOARD_COLUMNS``.

    Reads ``h1.by_model`` and ``model_contrasts`` (ranks and ``tie_groups``); a results document
    without models gives an empty frame with the columns.
    """
    by_model = _mapping_at(_mapping_at(results, "h1"), "by_model")
    block = _mapping_at(results, "model_contrasts")
    simulated = _simulated_models(results)
    rows = [
        _row(str(model), gaps if isinstance(gaps, Mapping) else {}, block)
        | {"simulated": str(model) in simulated}
        for model, gaps in by_model.items()
    ]
    frame = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    if len(frame):
        frame = frame.sort_values(["rank", "model"], na_position="last", kind="stable")
    frame["tie_group"] = pd.array(frame["tie_group"], dtype="Int64")
    frame["n_models"] = pd.array(frame["n_models"], dtype="Int64")
    frame["n_articles"] = pd.array(frame["n_articles"], dtype="Int64")
    frame["identifiable"] = frame["identifiable"].astype(bool)
    frame["simulated"] = frame["simulated"].astype(bool)
    return frame.reset_index(drop=True)


def write_leaderboard(results: Mapping[str, Any], folder: str | os.PathLike[str]) -> dict[str, str]:
    """Write ``leaderboard.csv`` and ``leaderboard.json`` into ``folder`` (atomically); return their paths.

    ``folder`` is where ``study_results.json`` lives (the data folder); it may be a URL.
    """
    from upath import UPath

    frame = leaderboard(results)
    root = UPath(folder)
    csv_path, json_path = (root / name for name in LEADERBOARD_FILES)
    block = _mapping_at(results, "model_contrasts")
    document = {
        "columns": LEADERBOARD_COLUMNS,
        "status": block.get("status", "no model_contrasts block in the results"),
        "ranking": block.get("ranking"),
        "tie_groups": _tie_summary(block),
        "models": jsonable(frame.astype(object).where(frame.notna(), None).to_dict(orient="records")),
    }
    # Checked against its shape before either file is written: a bad field fails here, naming
    # the file and the field, and the previous leaderboard stays as it was.
    validate_model(LeaderboardDocument, document, source=str(json_path))
    text = io.StringIO()
    frame.to_csv(text, index=False, lineterminator="\n")
    write_bytes_atomic(csv_path, text.getvalue().encode("utf-8"))
    write_json(json_path, document)
    return {"csv": str(csv_path), "json": str(json_path)}
