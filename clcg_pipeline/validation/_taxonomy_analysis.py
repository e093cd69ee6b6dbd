"""Analysis of the automatic error taxonomy (STUDY.md section 7, study seed 0.4.11 and 0.5.9).

From the diagnostic sample and the two judges' labels: label frequencies per side, the
transition matrix EN label -> target label, the pair condition ``crosslingual_loss``,
agreement between the judges, each target label's contribution to the EN-target score delta,
and, beyond the study, order bias and self-preference of the judges.

Every interval is the project's article-cluster bootstrap (``analysis/_bootstrap.py``): one
matrix of article multiplicities is drawn for the whole analysis, so every estimand is
resampled with the same articles, and below ``study.min_articles`` articles the interval is
withheld by the suite's rule (``SuiteContext.qualify``). Unparseable, refused or missing
judgements are left out of every estimate and counted, never read as a label.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa

from clcg_pipeline.analysis import (
    Replicates,
    SuiteContext,
    cluster_table,
    draw_multiplicities,
    num,
    replicate,
    roles_of,
)
from clcg_pipeline.config import ModelSpec, ProjectConfig
from clcg_pipeline.validation._taxonomy import Taxonomy, load_taxonomy

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


@dataclass
class TaxonomyAnalysis:
    results: dict[str, Any]
    estimates: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ESTIMATE_COLUMNS))


def model_family(spec: ModelSpec, overrides: Mapping[str, str] | None = None) -> str:
    """A model's family: the override for its id, else the leading letters of its provider name.

    ``deepseek-v4-flash`` -> ``deepseek``, ``mistral-small-latest`` -> ``mistral``,
    ``meta-llama/Llama-3.1-8B`` -> ``llama``. A vendor with several name stems (``gpt-4o`` and
    ``o3``) needs ``study.error_taxonomy.families`` to be read as one family.
    """
    if overrides and spec.id in overrides:
        return overrides[spec.id]
    return _family_of_name(spec.model)


def _family_of_name(name: str) -> str:
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


def skipped(reason: str, taxonomy: Taxonomy | None = None, **extra: Any) -> TaxonomyAnalysis:
    """The results of a study that did not run, with the reason (never an empty success)."""
    doc: dict[str, Any] = {
        "status": "skipped",
        "reason": reason,
        "taxonomy": taxonomy.id if taxonomy else None,
        "judges": [],
        "pairs": 0,
        "candidate_loss_share_realised": None,
        **{key: [] for key in _LIST_KEYS},
        "caveats": [reason],
    }
    doc.update(extra)
    return TaxonomyAnalysis(doc)


_LIST_KEYS = (
    "excluded",
    "label_frequencies",
    "transitions",
    "crosslingual_loss",
    "agreement",
    "delta",
    "delta_contribution",
    "order_bias",
    "self_preference",
)


# --------------------------------------------------------------------------- input checks


def _require(frame: pd.DataFrame, table: str, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"table {table!r}: missing column(s) {missing}")


def _fail(table: str, frame: pd.DataFrame, position: int, column: str, what: str) -> None:
    row = frame.iloc[position]
    ident = {k: str(row[k]) for k in ("pair_id", "side", "judge", "order") if k in frame.columns}
    raise ValueError(f"table {table!r}, record {position} {ident}, field {column!r}: {what}")


def _check_inputs(
    sample: pd.DataFrame, judgements: pd.DataFrame, order_bias: pd.DataFrame, taxonomy: Taxonomy
) -> None:
    _require(sample, "diagnostic_sample", SAMPLE_COLUMNS)
    _require(judgements, "error_judgements", JUDGEMENT_COLUMNS)
    dup = sample["pair_id"].duplicated().to_numpy()
    if dup.any():
        _fail("diagnostic_sample", sample, int(np.flatnonzero(dup)[0]), "pair_id", "duplicated pair")
    for column in ("pair_id", "doc_id", "model", "language"):
        bad = sample[column].isna().to_numpy()
        if bad.any():
            _fail("diagnostic_sample", sample, int(np.flatnonzero(bad)[0]), column, "missing value")
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
            _fail("error_judgements", judgements, int(np.flatnonzero(bad)[0]), column, what)
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
                _fail("order_bias_judgements", order_bias, int(np.flatnonzero(bad)[0]), column, what)


# --------------------------------------------------------------------------- bootstrap helper


class _Boot:
    """One set of article multiplicities shared by every estimand, plus the suite's qualify rule."""

    def __init__(self, articles: np.ndarray, inputs: AnalysisInputs, ctx: SuiteContext) -> None:
        self.position = {str(a): i for i, a in enumerate(articles)}
        self.weights = draw_multiplicities(len(articles), inputs.replicates, inputs.seed)
        self.ctx = ctx

    def cells(self, frame: pd.DataFrame, cell_cols: list[str], value_col: str) -> _Cells:
        """Point-then-replicate sums and counts per cell of ``frame``, resampled by article."""
        table = cluster_table(frame, cell_cols, value_col=value_col, cluster_col="doc_id")
        cols = np.array([self.position[str(a)] for a in table.articles], dtype=np.int64)
        weights = self.weights[:, cols] if len(cols) else np.zeros((self.weights.shape[0], 0))
        return _Cells(replicate(table, weights), table.counts)

    def summ(self, vec: np.ndarray, *, n: int, n_articles: int) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self.ctx.summ(vec, n=n, n_articles=n_articles, sided=None)


@dataclass(frozen=True)
class _Cells:
    rep: Replicates
    article_counts: np.ndarray  # articles x cells, full sample

    @property
    def cells(self) -> pd.DataFrame:
        return self.rep.cells

    def sums(self, idx: np.ndarray | list[int]) -> np.ndarray:
        return self.rep.sums[:, np.asarray(idx, dtype=np.int64)].sum(axis=1)

    def counts(self, idx: np.ndarray | list[int]) -> np.ndarray:
        return self.rep.counts[:, np.asarray(idx, dtype=np.int64)].sum(axis=1)

    def n_articles(self, idx: np.ndarray | list[int]) -> int:
        """Articles with a row in any of the cells ``idx``."""
        if self.article_counts.size == 0:
            return 0
        return int((self.article_counts[:, np.asarray(idx, dtype=np.int64)].sum(axis=1) > 0).sum())

    def where(self, **match: object) -> np.ndarray:
        mask = np.ones(len(self.cells), dtype=bool)
        for column, value in match.items():
            mask &= (self.cells[column].astype(str) == str(value)).to_numpy()
        return np.flatnonzero(mask)


def _ratio(num_: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num_ / np.where(den > 0, den, 1.0), np.nan)


# --------------------------------------------------------------------------- the analysis


def analyse_error_taxonomy(
    sample: pd.DataFrame,
    judgements: pd.DataFrame,
    order_bias: pd.DataFrame | None,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    config: ProjectConfig,
) -> TaxonomyAnalysis:
    """Every estimand of the error-taxonomy study, as the results dict and the long estimates table.

    ``config`` supplies the suite's identifiability rule (``SuiteContext.qualify``); the numbers
    themselves come from ``inputs``.
    """
    if not inputs.judges:
        return skipped("no judges configured (study.error_taxonomy.judges is empty)", taxonomy)
    if len(sample) == 0:
        return skipped("the diagnostic sample has no English/target pair", taxonomy)
    if len(judgements) == 0:
        return skipped(
            "no error judgements stored (error_judgements has no rows)", taxonomy, pairs=len(sample)
        )
    order_bias = order_bias if order_bias is not None else pd.DataFrame(columns=list(ORDER_COLUMNS))
    _check_inputs(sample, judgements, order_bias, taxonomy)
    sample = sample.assign(doc_id=sample["doc_id"].astype(str), pair_id=sample["pair_id"].astype(str))
    judgements = judgements.assign(pair_id=judgements["pair_id"].astype(str))
    judgements_all_judges = judgements["judge"].astype(str).unique()
    judgements = judgements[judgements["judge"].isin(inputs.judges)]

    ctx = SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=inputs.replicates,
        seed=inputs.seed,
        confidence=inputs.confidence,
        min_articles=inputs.min_articles,
    )
    articles = np.array(sorted(sample["doc_id"].unique()), dtype=object)
    boot = _Boot(articles, inputs, ctx)
    est: list[dict[str, Any]] = []
    caveats: list[str] = []

    ok = judgements[judgements["status"] == "ok"]
    excluded = (
        judgements[judgements["status"] != "ok"]
        .groupby(["judge", "side", "status"], as_index=False)
        .size()
        .rename(columns={"size": "n"})
    )
    judges_doc = _judges_doc(judgements, inputs, len(sample))
    if len(excluded):
        caveats.append(
            f"{int(excluded['n'].sum())} judgement(s) unparseable, refused or missing were left out of every "
            "estimate (see excluded); they are never read as a label"
        )
    idle = [j["judge"] for j in judges_doc if j["ok"] == 0]
    if idle:
        caveats.append(f"no usable judgement from {idle}: they enter no estimate")
    absent = sum(j["absent"] for j in judges_doc)
    if absent:
        caveats.append(f"{absent} response side(s) have no judgement row at all; they are counted as absent")
    n_art = len(articles)
    status, reason = "ok", None
    if ok.empty:
        return skipped(
            f"no usable judgement: all {len(judgements)} were unparseable, refused or missing",
            taxonomy,
            judges=judges_doc,
            pairs=len(sample),
            excluded=excluded.to_dict("records"),
        )
    if n_art < inputs.min_articles:
        status = "not_identifiable"
        reason = (
            f"too few articles: {n_art} < study.min_articles = {inputs.min_articles}; point estimates are "
            "descriptions and every interval is withheld"
        )
        caveats.append(reason)

    # The sample is the authority for a pair's model, language and article (judgement rows repeat them).
    facts = ["doc_id", "model", "language", "score_delta"]
    sides = ok.drop(columns=[c for c in facts if c in ok.columns]).merge(
        sample[["pair_id", *facts]], on="pair_id"
    )
    sides = sides.assign(
        collapsed=sides["label"].map(taxonomy.collapsed),
        semantic=sides["label"].isin(taxonomy.semantic_errors),
    )
    wide = _pairs_wide(sides, sample)

    doc: dict[str, Any] = {
        "status": status,
        "reason": reason,
        "taxonomy": taxonomy.id,
        "judges": judges_doc,
        "pairs": len(sample),
        "articles": n_art,
        "candidate_loss_share_realised": num(sample["candidate_loss"].astype(bool).mean()),
        "candidate_loss_share_target": inputs.candidate_loss_target,
        "excluded": excluded.to_dict("records"),
        "label_frequencies": _label_frequencies(sides, taxonomy, inputs.judges, boot, est),
        "transitions": _transitions(wide),
        "crosslingual_loss": _crosslingual_loss(wide, taxonomy, inputs, boot, est),
        "agreement": _agreement(sides, wide, taxonomy, inputs.judges, boot, est, caveats),
    }
    delta, contributions = _delta_contribution(sides, taxonomy, inputs.judges, boot, est, caveats)
    doc["delta"] = delta
    doc["delta_contribution"] = contributions
    doc["order_bias"] = _order_bias(order_bias, sample, inputs.judges, boot, est, caveats)
    doc["self_preference"] = _self_preference(sides, taxonomy, inputs, boot, est, caveats)
    doc["decomposition"] = (
        "For each judge, over the pairs whose target side it labelled: "
        "delta = mean(en_score - target_score) = sum over target labels l of frequency_l * mean_loss_l, "
        "where frequency_l = n_l / n and mean_loss_l = the mean delta of the n_l pairs labelled l; "
        "contribution_l = frequency_l * mean_loss_l = (sum of their deltas) / n, so the contributions "
        "sum to delta exactly (in every bootstrap replicate too)."
    )
    doc["caveats"] = [
        *caveats,
        "Frequencies describe the stratified diagnostic sample (candidate losses oversampled), not the "
        "prevalence of errors in the scored data; the labels are associative, not causal.",
        "Agreement between two LLM judges is coding consistency, not validity: neither judge is gold.",
        "Judges see the passage, so language is blinded only as metadata (model, language code and resource "
        "class are withheld), not in the text.",
    ]
    other = sorted(set(judgements_all_judges) - set(inputs.judges))
    if other:
        doc["caveats"].append(f"judgements by {other}, not among study.error_taxonomy.judges, were left out")
    estimates = pd.DataFrame(est, columns=ESTIMATE_COLUMNS)
    estimates = estimates.astype({"n": "Int64", "n_articles": "Int64"})
    return TaxonomyAnalysis(_jsonable(doc), estimates)


def run_error_taxonomy_analysis(
    config: ProjectConfig,
    sample: pd.DataFrame,
    judgements: pd.DataFrame,
    order_bias: pd.DataFrame | None,
    *,
    replicates: int | None = None,
) -> TaxonomyAnalysis:
    """The analysis as the asset runs it: taxonomy, judges and bootstrap settings from ``config``."""
    taxonomy = load_taxonomy(config.study.error_taxonomy.taxonomy)
    inputs = inputs_from_config(config, replicates=replicates)
    return analyse_error_taxonomy(sample, judgements, order_bias, taxonomy, inputs, config)


def _jsonable(value: Any) -> Any:
    """Plain Python values for the JSON document: numpy scalars unboxed, NaN as None."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _judges_doc(judgements: pd.DataFrame, inputs: AnalysisInputs, pairs: int) -> list[dict[str, Any]]:
    """Per judge: family, judgements stored, usable, excluded by status, and sides never judged."""
    out = []
    for judge in inputs.judges:
        rows = judgements[judgements["judge"] == judge]
        counts = rows["status"].value_counts()
        out.append(
            {
                "judge": judge,
                "family": inputs.families.get(judge, _family_of_name(judge)),
                "judgements": len(rows),
                "ok": int(counts.get("ok", 0)),
                "excluded": {str(k): int(v) for k, v in counts.items() if k != "ok"},
                "absent": 2 * pairs - len(rows),
            }
        )
    return out


def _pairs_wide(sides: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """One row per (pair, judge) with both sides labelled: en_label, target_label and the pair's facts."""
    keep = ["pair_id", "judge", "label", "collapsed", "semantic"]
    en = sides.loc[sides["side"] == "en", keep]
    tg = sides.loc[sides["side"] == "target", keep]
    wide = en.merge(tg, on=["pair_id", "judge"], suffixes=("_en", "_target"))
    wide = wide.rename(columns={"label_en": "en_label", "label_target": "target_label"})
    return wide.merge(sample[["pair_id", "doc_id", "model", "language", "score_delta"]], on="pair_id")


def _est_row(
    est: list[dict[str, Any]], estimand: str, judge: str, group: str, s: dict[str, Any]
) -> dict[str, Any]:
    status = "estimated" if s.get("identifiable", True) else f"not identifiable: {s.get('reason')}"
    est.append(
        {
            "estimand": estimand,
            "judge": judge,
            "group": group,
            "estimate": s.get("estimate"),
            "ci_low": s.get("ci_low"),
            "ci_high": s.get("ci_high"),
            "n": s.get("n"),
            "n_articles": s.get("n_articles"),
            "status": status,
            "flags": "; ".join(s.get("flags", [])) or None,
        }
    )
    return s


def _out(s: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A results-dict entry: the caller's fields, then estimate, interval and counts of ``s``."""
    return {
        **extra,
        "estimate": s["estimate"],
        "ci_low": s["ci_low"],
        "ci_high": s["ci_high"],
        "n": s.get("n"),
        "n_articles": s.get("n_articles"),
        "identifiable": s["identifiable"],
    }


def _label_frequencies(
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    judges: Sequence[str],
    boot: _Boot,
    est: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Share of each label among one judge's usable labels of one side; every label listed, zeros too."""
    frame = sides[["doc_id", "judge", "side", "label"]].assign(one=1.0)
    cells = boot.cells(frame, ["judge", "side", "label"], "one")
    out = []
    for judge in judges:
        for side in SIDES:
            group = cells.where(judge=judge, side=side)
            if len(group) == 0:
                continue
            total = cells.counts(group)
            n_articles = cells.n_articles(group)
            for label in taxonomy.labels:
                count = cells.counts(cells.where(judge=judge, side=side, label=label))
                s = boot.summ(_ratio(count, total), n=int(total[0]), n_articles=n_articles)
                _est_row(est, "label_share", judge, f"side={side}|label={label}", s)
                out.append(
                    {
                        "judge": judge,
                        "side": side,
                        "label": label,
                        "n": int(count[0]),
                        "total": int(total[0]),
                        "share": s["estimate"],
                        "ci_low": s["ci_low"],
                        "ci_high": s["ci_high"],
                    }
                )
    return out


def _transitions(wide: pd.DataFrame) -> list[dict[str, Any]]:
    """EN label -> target label counts per judge, over the pairs it labelled on both sides."""
    if wide.empty:
        return []
    counts = wide.groupby(["judge", "en_label", "target_label"], as_index=False).size()
    totals = counts.groupby("judge")["size"].transform("sum")
    counts = counts.assign(share=counts["size"] / totals).rename(columns={"size": "n"})
    counts = counts.sort_values(
        ["judge", "n", "en_label", "target_label"], ascending=[True, False, True, True]
    )
    return [
        {
            "judge": r.judge,
            "en_label": r.en_label,
            "target_label": r.target_label,
            "n": int(r.n),
            "share": r.share,
        }
        for r in counts.itertuples(index=False)
    ]


def _loss_flag(wide: pd.DataFrame, taxonomy: Taxonomy) -> pd.Series:
    """The pair condition: EN side ``correct`` and target side a semantic error (not a label)."""
    return (wide["en_label"] == CORRECT) & wide["target_label"].isin(taxonomy.semantic_errors)


def _crosslingual_loss(
    wide: pd.DataFrame,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    boot: _Boot,
    est: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Share of a judge's doubly labelled pairs meeting the pair condition: overall, per Joshi class,
    language and model (the denominator includes pairs whose EN side is not correct)."""
    if wide.empty:
        return []
    base = wide[["doc_id", "judge", "language", "model"]].assign(y=_loss_flag(wide, taxonomy).astype(float))
    joshi = base["language"].map(lambda iso: inputs.joshi.get(str(iso)))
    parts = [
        base.assign(group="all"),
        base.assign(
            group=["joshi_class=" + ("unclassified" if c is None or c != c else str(int(c))) for c in joshi]
        ),
        base.assign(group="language=" + base["language"].astype(str)),
        base.assign(group="model=" + base["model"].astype(str)),
    ]
    long = pd.concat(parts, ignore_index=True)
    cells = boot.cells(long, ["judge", "group"], "y")
    groups = list(dict.fromkeys(g for part in parts for g in sorted(part["group"].unique())))
    out = []
    for judge in inputs.judges:
        for group in groups:
            idx = cells.where(judge=judge, group=group)
            if len(idx) == 0:
                continue
            s = boot.summ(
                _ratio(cells.sums(idx), cells.counts(idx)),
                n=int(cells.counts(idx)[0]),
                n_articles=cells.n_articles(idx),
            )
            _est_row(est, "crosslingual_loss", judge, group, s)
            out.append(_out(s, judge=judge, group=group))
    return out


def _kappa_rows(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Percent agreement and Cohen's kappa of every ``K x K`` table in ``tables`` (replicates x K x K).

    Vectorised over the bootstrap replicates (statsmodels takes one table per call and computes
    variances we do not use); the full-sample kappa is taken from statsmodels by the caller and
    the two agree (tested). Kappa is NaN where chance agreement is 1 (one category only).
    """
    n = tables.sum(axis=(1, 2))
    safe = np.where(n > 0, n, 1.0)
    po = np.trace(tables, axis1=1, axis2=2) / safe
    pe = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1) / safe**2
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where((n > 0) & (pe < 1 - 1e-12), (po - pe) / (1 - pe), np.nan)
    return np.where(n > 0, po, np.nan), kappa


def _agreement(
    sides: pd.DataFrame,
    wide: pd.DataFrame,
    taxonomy: Taxonomy,
    judges: Sequence[str],
    boot: _Boot,
    est: list[dict[str, Any]],
    caveats: list[str],
) -> list[dict[str, Any]]:
    """Percent agreement and Cohen's kappa of every two judges, per level, with bootstrap intervals."""
    if len(judges) < 2:
        caveats.append("judge agreement needs two judges; one is configured")
        return []
    loss = wide.assign(loss=_loss_flag(wide, taxonomy))
    out: list[dict[str, Any]] = []
    for a, b in combinations(judges, 2):
        both = sides[sides["judge"] == a].merge(
            sides[sides["judge"] == b], on=["pair_id", "side", "doc_id"], suffixes=("_a", "_b")
        )
        pairs = loss[loss["judge"] == a].merge(
            loss[loss["judge"] == b], on=["pair_id", "doc_id"], suffixes=("_a", "_b")
        )
        levels: dict[str, tuple[pd.DataFrame, str, tuple[Any, ...]]] = {
            "fine": (both, "label", taxonomy.labels),
            "collapsed": (both, "collapsed", taxonomy.collapsed_labels),
            "binary": (both, "semantic", (False, True)),
            "crosslingual_loss": (pairs, "loss", (False, True)),
        }
        for level, (frame, column, categories) in levels.items():
            entry = _agreement_one(frame, column, categories, boot)
            if entry is None:
                continue
            pct, kap, n, n_art = entry
            judge = f"{a}|{b}"
            sp = _est_row(est, "agreement_percent", judge, level, boot.summ(pct, n=n, n_articles=n_art))
            sk = _est_row(est, "agreement_kappa", judge, level, boot.summ(kap, n=n, n_articles=n_art))
            if sk["estimate"] is None:
                caveats.append(f"kappa of {judge} at level {level} is undefined: one category only")
            out.append(
                {
                    "level": level,
                    "judge_a": a,
                    "judge_b": b,
                    "unit": "pair" if level == "crosslingual_loss" else "response side",
                    "percent": sp["estimate"],
                    "percent_ci_low": sp["ci_low"],
                    "percent_ci_high": sp["ci_high"],
                    "kappa": sk["estimate"],
                    "ci_low": sk["ci_low"],
                    "ci_high": sk["ci_high"],
                    "n": n,
                    "n_articles": n_art,
                    "identifiable": sk["identifiable"],
                }
            )
    return out


def _agreement_one(
    frame: pd.DataFrame, column: str, categories: tuple[Any, ...], boot: _Boot
) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    if frame.empty:
        return None
    k = len(categories)
    code = {c: i for i, c in enumerate(categories)}
    ca = frame[f"{column}_a"].map(code).to_numpy(dtype=np.int64)
    cb = frame[f"{column}_b"].map(code).to_numpy(dtype=np.int64)
    cells = boot.cells(frame[["doc_id"]].assign(cell=ca * k + cb, one=1.0), ["cell"], "one")
    tables = np.zeros((cells.rep.counts.shape[0], k * k))
    tables[:, cells.cells["cell"].to_numpy(dtype=np.int64)] = cells.rep.counts
    tables = tables.reshape(-1, k, k)
    pct, kap = _kappa_rows(tables)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        point = float(cohens_kappa(tables[0], return_results=False))
    kap[0] = point if np.isfinite(point) else np.nan
    return pct, kap, int(tables[0].sum()), cells.n_articles(np.arange(len(cells.cells)))


def _delta_contribution(
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    judges: Sequence[str],
    boot: _Boot,
    est: list[dict[str, Any]],
    caveats: list[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each target label's frequency x mean loss; the contributions sum to the judge's delta."""
    target = sides[sides["side"] == "target"]
    missing = target["score_delta"].isna()
    if missing.any():
        caveats.append(
            f"{int(missing.sum())} labelled target side(s) without a score delta left out of the delta"
        )
    target = target[~missing]
    if target.empty:
        return [], []
    cells = boot.cells(target[["doc_id", "judge", "label", "score_delta"]], ["judge", "label"], "score_delta")
    deltas, contributions = [], []
    for judge in judges:
        every = cells.where(judge=judge)
        if len(every) == 0:
            continue
        total_n, total_s = cells.counts(every), cells.sums(every)
        n_art = cells.n_articles(every)
        s = _est_row(
            est,
            "score_delta",
            judge,
            "all",
            boot.summ(_ratio(total_s, total_n), n=int(total_n[0]), n_articles=n_art),
        )
        deltas.append(_out(s, judge=judge))
        for label in taxonomy.labels:
            idx = cells.where(judge=judge, label=label)
            n_l, s_l = cells.counts(idx), cells.sums(idx)
            freq = boot.summ(_ratio(n_l, total_n), n=int(total_n[0]), n_articles=n_art)
            mean = boot.summ(_ratio(s_l, n_l), n=int(n_l[0]), n_articles=cells.n_articles(idx))
            contrib = boot.summ(_ratio(s_l, total_n), n=int(total_n[0]), n_articles=n_art)
            _est_row(est, "label_frequency_target", judge, f"label={label}", freq)
            _est_row(est, "label_mean_loss", judge, f"label={label}", mean)
            _est_row(est, "label_contribution", judge, f"label={label}", contrib)
            contributions.append(
                {
                    "judge": judge,
                    "label": label,
                    "n": int(n_l[0]),
                    "frequency": freq["estimate"],
                    "mean_loss": mean["estimate"],
                    "mean_loss_ci_low": mean["ci_low"],
                    "mean_loss_ci_high": mean["ci_high"],
                    "contribution": contrib["estimate"],
                    "ci_low": contrib["ci_low"],
                    "ci_high": contrib["ci_high"],
                }
            )
    return deltas, contributions


# ``preferred`` may name the response (en / target) or the position it was shown in; both are read
# as the response so that a flip means the judge changed its mind, not merely its position.
_POSITION = {"a": 0, "first": 0, "1": 0, "b": 1, "second": 1, "2": 1}
_NO_PREFERENCE = {"tie", "none", "neither", "equal", "both"}


def _preferred_response(order: str, preferred: object) -> str:
    value = str(preferred).strip().lower()
    if value in SIDES:
        return value
    if value in _NO_PREFERENCE:
        return "tie"
    if value in _POSITION:
        shown = ("en", "target") if order == "en_first" else ("target", "en")
        return shown[_POSITION[value]]
    raise ValueError(value)


def _order_bias(
    order_bias: pd.DataFrame,
    sample: pd.DataFrame,
    judges: Sequence[str],
    boot: _Boot,
    est: list[dict[str, Any]],
    caveats: list[str],
) -> list[dict[str, Any]]:
    """Flip rate per judge: the share of pairs shown both ways round whose preferred response changes."""
    if order_bias.empty:
        caveats.append("no order-bias judgements: the flip rate is not measured")
        return []
    ok = order_bias[order_bias["status"] == "ok"].reset_index(drop=True)
    left_out = len(order_bias) - len(ok)
    if left_out:
        caveats.append(f"{left_out} order-bias judgement(s) unparseable, refused or missing were left out")
    responses = []
    for position, row in enumerate(ok[["order", "preferred"]].itertuples(index=False)):
        try:
            responses.append(_preferred_response(str(row.order), row.preferred))
        except ValueError:
            _fail("order_bias_judgements", ok, position, "preferred", f"unknown value {row.preferred!r}")
    ok = ok.assign(response=responses, pair_id=ok["pair_id"].astype(str))
    wide = ok.pivot_table(index=["pair_id", "judge"], columns="order", values="response", aggfunc="first")
    wide = wide.dropna(subset=[o for o in ORDERS if o in wide.columns]).reset_index()
    out = []
    for judge in judges:
        rows = wide[wide["judge"] == judge] if set(ORDERS) <= set(wide.columns) else wide.iloc[0:0]
        if rows.empty:
            out.append(
                {
                    "judge": judge,
                    "pairs": 0,
                    "flip_rate": None,
                    "ci_low": None,
                    "ci_high": None,
                    "reason": "no pair judged both ways round with both judgements usable",
                }
            )
            continue
        rows = rows.merge(sample[["pair_id", "doc_id"]], on="pair_id")
        flips = (rows["en_first"] != rows["target_first"]).astype(float)
        # Position bias: the response shown first preferred, over all usable single judgements.
        one = ok[ok["judge"] == judge]
        first = np.mean(
            [
                r == ("en" if o == "en_first" else "target")
                for o, r in zip(one["order"], one["response"], strict=True)
            ]
        )
        cells = boot.cells(rows[["doc_id"]].assign(judge=judge, y=flips.to_numpy()), ["judge"], "y")
        idx = np.arange(len(cells.cells))
        s = _est_row(
            est,
            "order_bias_flip_rate",
            judge,
            "all",
            boot.summ(
                _ratio(cells.sums(idx), cells.counts(idx)), n=len(rows), n_articles=cells.n_articles(idx)
            ),
        )
        out.append(
            {
                "judge": judge,
                "pairs": len(rows),
                "flips": int(flips.sum()),
                "flip_rate": s["estimate"],
                "ci_low": s["ci_low"],
                "ci_high": s["ci_high"],
                "n_articles": s["n_articles"],
                "first_shown_preferred": num(first),
                "identifiable": s["identifiable"],
            }
        )
    return out


def _self_preference(
    sides: pd.DataFrame,
    taxonomy: Taxonomy,
    inputs: AnalysisInputs,
    boot: _Boot,
    est: list[dict[str, Any]],
    caveats: list[str],
) -> list[dict[str, Any]]:
    """Rate of ``correct`` a judge gives its own family's responses minus the rate it gives others'.

    Own-family models may simply answer better, so ``excess`` subtracts the same contrast as
    rated by the other judges on their own labels of those responses (a difference in differences).
    """
    family_of = sides["model"].astype(str).map(lambda m: inputs.families.get(m, _family_of_name(m)))
    base = sides[["doc_id", "judge"]].assign(y=(sides["label"] == CORRECT).astype(float))
    out = []
    for judge in inputs.judges:
        fam = inputs.families.get(judge, _family_of_name(judge))
        own = (family_of == fam).to_numpy()
        mine = (base["judge"] == judge).to_numpy()
        entry: dict[str, Any] = {"judge": judge, "judge_family": fam}
        if not mine.any():
            continue
        if not own[mine].any() or own[mine].all():
            why = (
                f"no evaluated model of the judge's family {fam!r}"
                if not own[mine].any()
                else f"every evaluated model is of the judge's family {fam!r}"
            )
            out.append(
                {
                    **entry,
                    "own_rate": None,
                    "other_rate": None,
                    "difference": None,
                    "ci_low": None,
                    "ci_high": None,
                    "n": int(mine.sum()),
                    "identifiable": False,
                    "reason": f"not identifiable: {why}",
                }
            )
            _est_row(
                est,
                "self_preference",
                judge,
                "difference",
                {"estimate": None, "identifiable": False, "reason": why, "n": int(mine.sum())},
            )
            continue
        frame = base.assign(own=np.where(own, "own", "other"))
        cells = boot.cells(frame, ["judge", "own"], "y")

        def rate(j: str, side: str, cells: _Cells = cells) -> np.ndarray:
            idx = cells.where(judge=j, own=side)
            return _ratio(cells.sums(idx), cells.counts(idx))

        diff = rate(judge, "own") - rate(judge, "other")
        mine_idx = cells.where(judge=judge)
        n, n_art = int(cells.counts(mine_idx)[0]), cells.n_articles(mine_idx)
        s_own = boot.summ(rate(judge, "own"), n=n, n_articles=n_art)
        s_other = boot.summ(rate(judge, "other"), n=n, n_articles=n_art)
        s = _est_row(est, "self_preference", judge, "difference", boot.summ(diff, n=n, n_articles=n_art))
        entry.update(
            n_own=int(cells.counts(cells.where(judge=judge, own="own"))[0]),
            n_other=int(cells.counts(cells.where(judge=judge, own="other"))[0]),
            own_rate=s_own["estimate"],
            other_rate=s_other["estimate"],
            difference=s["estimate"],
            ci_low=s["ci_low"],
            ci_high=s["ci_high"],
            n=n,
            identifiable=s["identifiable"],
            reason=s["reason"],
        )
        others = [j for j in inputs.judges if j != judge and len(cells.where(judge=j))]
        if others:
            other_diff = (
                np.nanmean(np.column_stack([rate(j, "own") - rate(j, "other") for j in others]), axis=1)
                if len(others) > 1
                else rate(others[0], "own") - rate(others[0], "other")
            )
            sx = _est_row(
                est,
                "self_preference_excess",
                judge,
                "difference_in_differences",
                boot.summ(diff - other_diff, n=n, n_articles=n_art),
            )
            entry.update(excess=sx["estimate"], excess_ci_low=sx["ci_low"], excess_ci_high=sx["ci_high"])
        out.append(entry)
    if out and not any(e.get("identifiable") for e in out):
        caveats.append("self-preference not identifiable: no evaluated model shares a judge's family")
    return out


def synthetic_frames(
    n_pairs: int,
    n_articles: int,
    *,
    judges: Sequence[str] = ("judge-a", "judge-b"),
    labels: Sequence[str],
    languages: Mapping[str, int | None],
    models: Sequence[str] = ("model-x", "model-y"),
    order_pairs: int = 0,
    agreement: float = 0.8,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Synthetic ``diagnostic_sample``, ``error_judgements`` and ``order_bias_judgements`` (bench, tests).

    ``labels[0]`` is the correct label; the first judge labels EN mostly correct and target sides
    worse, the other judges copy its label with probability ``agreement`` and otherwise draw one.
    """
    rng = np.random.default_rng(seed)
    langs = list(languages)
    pair_ids = [f"p{i:06d}" for i in range(n_pairs)]
    target_p = np.array([0.6, 0.2, 0.08] + [0.12 / (len(labels) - 3)] * (len(labels) - 3))
    loss_of = np.linspace(0.0, 0.6, len(labels))
    en_l = np.where(rng.random(n_pairs) < 0.85, 0, rng.integers(1, len(labels), n_pairs))
    tg_l = rng.choice(len(labels), size=n_pairs, p=target_p / target_p.sum())
    sample = pd.DataFrame(
        {
            "pair_id": pair_ids,
            "model": rng.choice(list(models), n_pairs),
            "doc_id": [f"a{i:04d}" for i in rng.integers(0, n_articles, n_pairs)],
            "item_id": [f"i{i}" for i in range(n_pairs)],
            "rep": 0,
            "context_scope": "full_body",
            "language": rng.choice(langs, n_pairs),
            "level": "L3",
            "item_source": "llm",
            "en_score": 0.8,
            "metric": "token_f1",
        }
    )
    delta = loss_of[tg_l] + rng.normal(0, 0.05, n_pairs)
    sample = sample.assign(target_score=0.8 - delta, score_delta=delta, candidate_loss=delta > 0.15)
    rows = []
    for j, judge in enumerate(judges):
        for side, base in (("en", en_l), ("target", tg_l)):
            keep = rng.random(n_pairs) < agreement if j else np.ones(n_pairs, dtype=bool)
            lab = np.where(keep, base, rng.integers(0, len(labels), n_pairs))
            status = np.where(rng.random(n_pairs) < 0.01, "unparseable", "ok")
            rows.append(
                pd.DataFrame(
                    {
                        "pair_id": pair_ids,
                        "side": side,
                        "judge": judge,
                        "label": [labels[k] if s == "ok" else None for k, s in zip(lab, status, strict=True)],
                        "status": status,
                    }
                )
            )
    judgements = pd.concat(rows, ignore_index=True).merge(
        sample[["pair_id", "model", "language", "doc_id", "item_id"]], on="pair_id"
    )
    chosen = rng.choice(n_pairs, size=min(order_pairs, n_pairs), replace=False)
    order_rows = []
    for judge in judges:
        prefer = np.where(rng.random(len(chosen)) < 0.7, "en", "target")
        flip = rng.random(len(chosen)) < 0.15
        for order in ORDERS:
            pref = (
                prefer
                if order == "en_first"
                else np.where(flip, np.where(prefer == "en", "target", "en"), prefer)
            )
            order_rows.append(
                pd.DataFrame(
                    {
                        "pair_id": [pair_ids[i] for i in chosen],
                        "judge": judge,
                        "order": order,
                        "preferred": pref,
                        "status": "ok",
                    }
                )
            )
    order_bias = (
        pd.concat(order_rows, ignore_index=True) if order_rows else pd.DataFrame(columns=list(ORDER_COLUMNS))
    )
    return sample, judgements, order_bias
