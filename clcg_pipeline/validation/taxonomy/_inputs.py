"""What the error-taxonomy analysis reads: the frames' columns, its settings, and their checks.

A broken frame is one error naming table, record and field, before any estimate is computed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from clcg_pipeline.config import ModelSpec, ProjectConfig
from clcg_pipeline.validation.taxonomy._label_set import Taxonomy

SAMPLE_COLUMNS = ("pair_id", "model", "doc_id", "language", "score_delta", "candidate_loss")
JUDGEMENT_COLUMNS = ("pair_id", "side", "judge", "label", "status")
ORDER_COLUMNS = ("pair_id", "judge", "order", "preferred", "status")
SIDES = ("en", "target")
CORRECT = "correct"  # the one label that is no error (every taxonomy file must have it)
ORDERS = ("en_first", "target_first")
ESTIMATE_COLUMNS = [
    "estimand",
    "judge",
    "group",
    "estimate",
    "ci_low",
    "ci_high",
    "n",
    "n_articles",
    "status",
    "flags",
]
# Agreement levels: the three of each response side, then the study's binary pair-level one
# (its 81.3% / kappa 0.419 is agreement on whether crosslingual_loss holds for the pair).
AGREEMENT_LEVELS = ("fine", "collapsed", "binary", "crosslingual_loss")


@dataclass(frozen=True)
class AnalysisInputs:
    """Everything besides the three frames: judges, families, Joshi classes, bootstrap settings."""

    judges: tuple[str, ...]
    families: Mapping[str, str]  # model id -> family, for judges and evaluated models alike
    joshi: Mapping[str, int | None]  # language -> Joshi class (None = unclassified)
    replicates: int
    seed: int
    confidence: float
    min_articles: int
    candidate_loss_target: float | None = None


def model_family(spec: ModelSpec, overrides: Mapping[str, str] | None = None) -> str:
    """A model's family: the override for its id, else the leading letters of its provider name.

    ``deepseek-v4-flash`` -> ``deepseek``, ``mistral-small-latest`` -> ``mistral``,
    ``meta-llama/Llama-3.1-8B`` -> ``llama``. A vendor with several name stems (``gpt-4o`` and
    ``o3``) needs ``study.error_taxonomy.families`` to be read as one family.
    """
    if overrides and spec.id in overrides:
        return overrides[spec.id]
    return family_of_name(spec.model)


def family_of_name(name: str) -> str:
    stem = name.rsplit("/", 1)[-1].lower()
    match = re.match(r"[a-z]+", stem)
    return match.group(0) if match else stem


def inputs_from_config(config: ProjectConfig, *, replicates: int | None = None) -> AnalysisInputs:
    settings = config.study.error_taxonomy
    overrides = dict(settings.families)
    return AnalysisInputs(
        judges=tuple(settings.judges),
        families={m.id: model_family(m, overrides) for m in config.models.models},
        joshi={lang.iso: lang.joshi_class for lang in config.languages.languages},
        replicates=int(replicates if replicates is not None else config.study.bootstrap_replicates),
        seed=int(settings.seed),
        confidence=float(config.study.confidence),
        min_articles=int(config.study.min_articles),
        candidate_loss_target=float(settings.candidate_loss_share),
    )


# --------------------------------------------------------------------------- input checks


def _require(frame: pd.DataFrame, table: str, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"table {table!r}: missing column(s) {missing}")


def fail_record(table: str, frame: pd.DataFrame, position: int, column: str, what: str) -> None:
    row = frame.iloc[position]
    ident = {k: str(row[k]) for k in ("pair_id", "side", "judge", "order") if k in frame.columns}
    raise ValueError(f"table {table!r}, record {position} {ident}, field {column!r}: {what}")


def check_inputs(
    sample: pd.DataFrame, judgements: pd.DataFrame, order_bias: pd.DataFrame, taxonomy: Taxonomy
) -> None:
    _require(sample, "diagnostic_sample", SAMPLE_COLUMNS)
    _require(judgements, "error_judgements", JUDGEMENT_COLUMNS)
    dup = sample["pair_id"].duplicated().to_numpy()
    if dup.any():
        fail_record("diagnostic_sample", sample, int(np.flatnonzero(dup)[0]), "pair_id", "duplicated pair")
    for column in ("pair_id", "doc_id", "model", "language"):
        bad = sample[column].isna().to_numpy()
        if bad.any():
            fail_record("diagnostic_sample", sample, int(np.flatnonzero(bad)[0]), column, "missing value")
    known = set(sample["pair_id"])
    checks: list[tuple[np.ndarray, str, str]] = [
        (~judgements["pair_id"].isin(known).to_numpy(), "pair_id", "not in diagnostic_sample"),
        (~judgements["side"].isin(SIDES).to_numpy(), "side", f"must be one of {SIDES}"),
        (
            ((judgements["status"] == "ok") & ~judgements["label"].isin(taxonomy.labels)).to_numpy(),
            "label",
            f"an ok judgement's label must be one of the {taxonomy.id} labels",
        ),
        (
            judgements.duplicated(["pair_id", "side", "judge"]).to_numpy(),
            "pair_id",
            "a second judgement of the same side by the same judge",
        ),
    ]
    for bad, column, what in checks:
        if bad.any():
            fail_record("error_judgements", judgements, int(np.flatnonzero(bad)[0]), column, what)
    if len(order_bias):
        _require(order_bias, "order_bias_judgements", ORDER_COLUMNS)
        for bad, column, what in (
            (~order_bias["pair_id"].isin(known).to_numpy(), "pair_id", "not in diagnostic_sample"),
            (~order_bias["order"].isin(ORDERS).to_numpy(), "order", f"must be one of {ORDERS}"),
            (
                order_bias.duplicated(["pair_id", "judge", "order"]).to_numpy(),
                "order",
                "a second judgement of the same pair, judge and order",
            ),
        ):
            if bad.any():
                fail_record("order_bias_judgements", order_bias, int(np.flatnonzero(bad)[0]), column, what)
