"""Power from pilot data: how many articles a study needs to detect a gap (``clcg plan --power``).

The uncertainty is the estimates' own: an article-cluster bootstrap of the primary-band H1
micro gap (or of the paired difference of two models' gaps, on the same article draws) on the
scores at hand. Its standard error scales as one over the square root of the article count,
which gives the articles needed in closed form; resampling that many articles from the pilot
(the effect put in place of the pilot's estimate) then checks the power the formula promised.
No library does power from a cluster bootstrap of a ratio-of-sums estimand, so it is here.

Two rules keep the plan one the pipeline will analyse: a difference between two models is planned
on the (language, article, item) units both models answered, as the model contrast pairs them;
and no plan recommends fewer articles than ``study.min_articles``, below which every interval is
withheld (the plan says when that minimum, not the power, sets the number).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import cluster_table, draw_multiplicities, replicate
from clcg_pipeline.analysis._gaps import GapPanel
from clcg_pipeline.analysis._h1 import band_rows, roles_of
from clcg_pipeline.config import ProjectConfig

#: What the model contrast pairs two models on (its units).
UNIT_COLUMNS = ["language", "doc_id", "item_id"]

Sided = Literal["one-sided", "two-sided"]


@dataclass(frozen=True)
class PowerQuestion:
    """What to detect: a gap of ``effect`` (H1 micro), or a difference of ``effect`` between two models."""

    effect: float
    alpha: float = 0.05
    power: float = 0.8
    models: tuple[str, str] | None = None
    simulations: int = 2000

    def __post_init__(self) -> None:
        if not self.effect > 0:
            raise ValueError(f"--effect must be a positive score difference, got {self.effect}")
        if not 0 < self.alpha < 1 or not 0 < self.power < 1:
            raise ValueError(f"--alpha and --power must lie in (0, 1), got {self.alpha} and {self.power}")

    @property
    def sided(self) -> Sided:
        # H1 is directional (English above the targets); which of two models is better is not.
        return "one-sided" if self.models is None else "two-sided"


def _gap(panel: GapPanel, models: tuple[str, str] | None) -> np.ndarray:
    if models is None:
        return panel.micro()
    return panel.micro(model=models[0]) - panel.micro(model=models[1])


def _panel(table: Any, weights: np.ndarray, config: ProjectConfig) -> GapPanel:
    return GapPanel(replicate(table, weights), roles_of(config.languages), table.counts)


def _resampled(n_pilot: int, n_articles: int, simulations: int, seed: int) -> np.ndarray:
    """``simulations x n_pilot`` multiplicities of ``n_articles`` draws from the pilot's articles."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_pilot, size=(simulations, n_articles))
    offsets = (np.arange(simulations, dtype=np.int64) * n_pilot)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=simulations * n_pilot)
    return counts.reshape(simulations, n_pilot).astype(np.float64)


def _simulated_power(
    table: Any, config: ProjectConfig, question: PowerQuestion, n_articles: int, pilot: float
) -> float:
    """Share of resampled studies of ``n_articles`` articles whose test rejects, the effect in place."""
    weights = _resampled(len(table.articles), n_articles, question.simulations, config.study.seed + 1)
    estimates = _gap(_panel(table, weights, config), question.models)[1:]
    estimates = estimates[np.isfinite(estimates)]
    if len(estimates) < 2:
        return float("nan")
    shifted = estimates - pilot + question.effect
    se = float(np.std(estimates, ddof=1))
    if se == 0:
        return 1.0
    z = shifted / se
    critical = _critical(question)
    rejects = z > critical if question.sided == "one-sided" else np.abs(z) > critical
    return float(rejects.mean())


def _critical(question: PowerQuestion) -> float:
    from scipy import stats  # imported here: ``import clcg_pipeline.analysis`` stays light

    tail = question.alpha if question.sided == "one-sided" else question.alpha / 2
    return float(stats.norm.ppf(1 - tail))


def power_from_pilot(scores: pd.DataFrame, config: ProjectConfig, question: PowerQuestion) -> dict[str, Any]:
    """Articles needed for ``question`` from the pilot ``scores``, with the resampled check."""
    rows = band_rows(scores, config.study, "A")
    common: int | None = None
    if question.models is not None:
        rows, common = _common_units(rows, question.models, config)
    table = cluster_table(rows, ["model", "language"])
    n_pilot = len(table.articles)
    base: dict[str, Any] = {
        "estimand": "h1_micro" if question.models is None else "model_difference_micro",
        "models": list(question.models) if question.models else None,
        "effect": question.effect,
        "alpha": question.alpha,
        "power": question.power,
        "sided": question.sided,
        "pilot_articles": n_pilot,
        "pilot_common_items": common,
        "min_articles": config.study.min_articles,
    }
    if n_pilot < 2:
        return {**base, "status": f"not identifiable: {n_pilot} pilot article(s); resampling needs 2 or more"}
    weights = draw_multiplicities(n_pilot, config.study.bootstrap_replicates, config.study.seed)
    vector = _gap(_panel(table, weights, config), question.models)
    replicates = vector[1:][np.isfinite(vector[1:])]
    if not np.isfinite(vector[0]) or len(replicates) < 2:
        return {
            **base,
            "status": "not identifiable: the pilot has no estimate (a language or model is empty)",
        }
    se = float(np.std(replicates, ddof=1))
    if not se > _NO_VARIANCE:
        # With no spread there is no test to power: any effect would need 2 articles and reject
        # every time, which says nothing (two identical models, a pilot of one constant score).
        return {**base, "status": _no_variance_status(question, float(vector[0]))}
    from scipy import stats

    z = _critical(question) + float(stats.norm.ppf(question.power))
    for_power = max(2, math.ceil(n_pilot * (z * se / question.effect) ** 2))
    # Fewer articles than the analysis needs would be a study whose intervals are all withheld.
    needed = max(for_power, config.study.min_articles)
    caveat = (
        f"the pilot has {n_pilot} articles (< study.min_articles = {config.study.min_articles}): "
        "its standard error, and so the articles needed, are themselves rough"
        if n_pilot < config.study.min_articles
        else None
    )
    return {
        **base,
        "status": "ok",
        "caveat": caveat,
        "pilot_estimate": float(vector[0]),
        "pilot_se": se,
        "articles_needed": needed,
        "articles_for_power": for_power,
        "minimum_binds": needed > for_power,
        "note": _minimum_note(config.study.min_articles, for_power),
        "simulated_power": _simulated_power(table, config, question, needed, float(vector[0])),
        "method": f"article-cluster bootstrap SE ({len(replicates)} replicates) scaled by "
        f"sqrt(pilot articles / articles); checked by resampling {needed} articles "
        f"{question.simulations} times with the effect in place of the pilot estimate",
    }


#: A bootstrap SE at or below this is no variance (the float noise of equal sums), not a precise pilot.
_NO_VARIANCE = 1e-12


def _no_variance_status(question: PowerQuestion, estimate: float) -> str:
    """Why the power cannot be estimated from a pilot whose estimate does not vary."""
    what = "gap" if question.models is None else f"difference {question.models[0]} - {question.models[1]}"
    return (
        f"not estimable: the pilot {what} has no variance (every bootstrap replicate gives "
        f"{estimate:.4g}), so the power cannot be estimated from it; a pilot whose scores vary is needed"
        + (" (are the two models' answers identical?)" if question.models is not None else "")
    )


def _minimum_note(minimum: int, for_power: int) -> str | None:
    """Say that ``study.min_articles``, not the power asked for, sets the articles needed."""
    if for_power >= minimum:
        return None
    return (
        f"study.min_articles = {minimum} binds: the power asked for needs only {for_power} articles, "
        f"but below {minimum} articles the analysis withholds every interval; plan {minimum}"
    )


def _common_units(
    rows: pd.DataFrame, models: tuple[str, str], config: ProjectConfig
) -> tuple[pd.DataFrame, int]:
    """The two models' panel rows on the (language, article, item) units both answered, and their count.

    The model contrast compares two models on exactly these units (an item one model skipped or
    never got enters neither side), so the difference is planned from the same pairing.
    """
    present = set(rows["model"].astype(str))
    missing = [m for m in models if m not in present]
    if missing:
        raise ValueError(f"no primary-band scores for model(s) {missing}: cannot plan their difference")
    roles = roles_of(config.languages)
    panel = [roles.reference, roles.baseline, *roles.targets]
    rows = rows[rows["model"].astype(str).isin(models) & rows["language"].isin(panel)]
    answered_by = rows.groupby(UNIT_COLUMNS, observed=True, sort=False)["model"].transform("nunique")
    paired = rows[(answered_by == 2).to_numpy()]
    if paired.empty:
        raise ValueError(
            f"models {models[0]} and {models[1]} answered no item in common: no difference to plan"
        )
    return paired, len(paired[UNIT_COLUMNS].drop_duplicates())
