"""How far the judges' errors overlap (issue 36, item 3; docs/HUMAN_VALIDATION.md).

Two judges that are wrong on the same responses give the confidence of one. On the responses
humans rated, each judge's error against the human consensus is an indicator (error-taxonomy
judges: the judge's collapsed label differs from the majority human label) or a difference
(granularity judges: the judge's 0-100 paragraph total minus the mean human total). For each
pair of judges of one family the Pearson correlation of their errors is taken (for indicators
that is the phi coefficient); the effective number of independent judges is

    n_eff = k / (1 + (k - 1) * mean pairwise error correlation)

the variance of the mean of ``k`` equicorrelated errors is ``sigma^2 (1 + (k-1) rho) / k``, so
the ``k`` judges are worth ``n_eff`` independent ones (Kish's design effect; docs explain).
Pooled, per language and per script, every estimate is resampled by article with the project's
cluster bootstrap (``analysis.ClusterBootstrap``) and qualified by its identifiability rule:
below ``study.min_articles`` articles the value is a description and its interval is withheld.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import (
    NO_ESTIMATE,
    ClusterBootstrap,
    ClusterCells,
    SuiteContext,
    ratio,
    withheld_caveat,
)
from clcg_pipeline.storage import finite

TAXONOMY = "error_taxonomy"
GRANULARITY = "granularity"
#: What a judge's error is, per family (the records say which).
ERROR_DEFINITIONS = {
    TAXONOMY: "1 where the judge's collapsed label differs from the majority human label, else 0",
    GRANULARITY: "the judge's paragraph total (0-100) minus the mean human total of the answer",
}
FORMULA = "n_eff = k / (1 + (k - 1) * mean pairwise error correlation)"
RULE_BASED = "rule-based offline judges (simulated stand-ins, not LLMs)"
UNKNOWN_SCRIPT = "unknown"
ERROR_COLUMNS = ["response", "doc_id", "language", "judge", "error"]


@dataclass(frozen=True)
class ErrorPanel:
    """One family's judge errors on the rated responses: ``ERROR_COLUMNS``, one row a judge x response."""

    family: str
    errors: pd.DataFrame
    dropped: int = 0  # rated responses without a human consensus (a tied vote)


@dataclass
class Overlap:
    """The error correlation of each judge pair and the effective number of judges, per group."""

    correlations: list[dict[str, Any]] = field(default_factory=list)
    effective: list[dict[str, Any]] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Each family's errors


def majority_label(labels: pd.Series) -> str | None:
    """The most frequent label, or None when two labels tie for it (no consensus)."""
    counts = labels.dropna().astype(str).value_counts()
    if counts.empty or (len(counts) > 1 and counts.iloc[0] == counts.iloc[1]):
        return None
    return str(counts.index[0])


def taxonomy_errors(rows: pd.DataFrame) -> ErrorPanel:
    """Error indicators of the error-taxonomy judges from ``_joins.judge_rows`` (one row a rating x judge).

    The human consensus of a response is the majority of its kept ratings' collapsed categories;
    a response whose vote ties has none and is left out (counted in ``dropped``).
    """
    if rows.empty:
        return ErrorPanel(TAXONOMY, pd.DataFrame(columns=ERROR_COLUMNS))
    rows = rows.assign(task_id=rows["task_id"].astype(str))
    ratings = rows.drop_duplicates("annotation_id")
    consensus = ratings.groupby("task_id")["human"].agg(majority_label)
    where = ratings.drop_duplicates("task_id").set_index("task_id")[["doc_id", "language"]]
    labels = rows.drop_duplicates(["task_id", "judge"]).set_index(["task_id", "judge"])["judge_label"]
    frame = labels.reset_index().join(where, on="task_id").join(consensus.rename("human"), on="task_id")
    agreed = frame[frame["human"].notna()]
    errors = (agreed["judge_label"].astype(str) != agreed["human"]).astype(float)
    out = agreed.assign(response=agreed["task_id"], error=errors)[ERROR_COLUMNS]
    return ErrorPanel(TAXONOMY, _typed(out), dropped=int(consensus.isna().sum()))


_FILL_KEYS = ["model", "language", "doc_id", "task_id", "context", "rep"]


def fill_errors(
    annotations: pd.DataFrame | None, sample: pd.DataFrame | None, judgements: pd.DataFrame | None
) -> ErrorPanel:
    """Differences of the granularity judges' paragraph totals from the mean human total.

    ``annotations`` are the imported ratings (kind ``fill`` with a ``fill_total`` are used),
    ``sample`` the annotation sample (a fill task names its answer by ``gran_task_id``,
    ``context`` and ``rep``), ``judgements`` the ``task_judgements`` (status ok, a ``total``).
    """
    empty = ErrorPanel(GRANULARITY, pd.DataFrame(columns=ERROR_COLUMNS))
    human = _human_fill_totals(annotations, sample)
    if human is None or judgements is None or judgements.empty or "total" not in judgements.columns:
        return empty
    judged = judgements[(judgements["status"].astype(str) == "ok") & judgements["total"].notna()]
    judged = _unit_keys(judged)
    judge_totals = judged.groupby([*_FILL_KEYS, "judge"], as_index=False)["total"].mean()
    human_totals = human.groupby(_FILL_KEYS)["total"].mean().rename("human")
    both = judge_totals.join(human_totals, on=_FILL_KEYS, how="inner")
    if both.empty:
        return empty
    response = both[_FILL_KEYS].astype(str).agg("|".join, axis=1)
    out = both.assign(response=response, error=both["total"].astype(float) - both["human"].astype(float))
    return ErrorPanel(GRANULARITY, _typed(out[ERROR_COLUMNS]))


def _human_fill_totals(annotations: pd.DataFrame | None, sample: pd.DataFrame | None) -> pd.DataFrame | None:
    """Each paragraph-filling rating's total beside the answer it rated (the unit keys)."""
    if annotations is None or annotations.empty or "fill_total" not in annotations.columns:
        return None
    rated = annotations[(annotations["kind"].astype(str) == "fill") & annotations["fill_total"].notna()]
    if rated.empty or sample is None or sample.empty or "gran_task_id" not in sample.columns:
        return None
    fill = sample[sample["kind"].astype(str) == "fill"]
    units = fill[["task_id", "model", "language", "doc_id", "context", "rep"]].assign(
        unit=fill["gran_task_id"]
    )
    frame = rated[["task_id", "fill_total"]].merge(units, on="task_id", how="inner")
    frame = frame.drop(columns=["task_id"]).rename(columns={"unit": "task_id", "fill_total": "total"})
    return _unit_keys(frame)


def _unit_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """The answer keys as strings and ``rep`` as an integer, so stored and sampled keys match."""
    keys = {k: frame[k].astype(str) for k in _FILL_KEYS if k != "rep"}
    return frame.assign(**keys, rep=frame["rep"].astype("int64"))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(
        response=frame["response"].astype(str),
        doc_id=frame["doc_id"].astype(str),
        language=frame["language"].astype(str),
        judge=frame["judge"].astype(str),
        error=frame["error"].astype(float),
    ).reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# The correlations and the effective number


def judge_error_overlap(
    panels: Sequence[ErrorPanel],
    ctx: SuiteContext,
    scripts: Mapping[str, str],
    rule_based: Collection[str] = (),
) -> Overlap:
    """Every family's pairwise error correlations and effective number, pooled, per language and
    per script, each with an article-cluster interval qualified by ``ctx``'s identifiability rule."""
    overlap = Overlap()
    for panel in panels:
        errors = panel.errors
        if errors.empty or errors["judge"].nunique() < 2:
            continue
        errors = errors.assign(script=errors["language"].map(lambda iso: scripts.get(iso, UNKNOWN_SCRIPT)))
        boot = ClusterBootstrap(errors["doc_id"].unique(), ctx)
        for head, group in _groups(errors):
            corr, eff = _group_overlap(panel.family, group, boot, set(rule_based))
            overlap.correlations += [{**head, **r} for r in corr]
            overlap.effective += [{**head, **eff}] if eff else []
        if panel.dropped:
            overlap.caveats.append(
                f"judge error overlap ({panel.family}): {panel.dropped} rated response(s) have no human "
                "consensus (tied vote) and are left out"
            )
    overlap.caveats += _caveats(overlap, ctx.min_articles, rule_based)
    return overlap


def _groups(errors: pd.DataFrame) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """The pooled rows, each language's (with its script) and each script's (with its languages)."""
    out: list[tuple[dict[str, Any], pd.DataFrame]] = [({"by": "all"}, errors)]
    for language, g in errors.groupby("language", sort=True):
        out.append(({"by": "language", "language": str(language), "script": str(g["script"].iloc[0])}, g))
    for script, g in errors.groupby("script", sort=True):
        languages = sorted(str(x) for x in g["language"].unique())
        out.append(({"by": "script", "script": str(script), "languages": languages}, g))
    return out


def _group_overlap(
    family: str, errors: pd.DataFrame, boot: ClusterBootstrap, rule_based: set[str]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One group's pair correlations and its effective number (None with fewer than two judges)."""
    wide = errors.pivot_table(index=["response", "doc_id"], columns="judge", values="error", aggfunc="mean")
    judges = sorted(str(j) for j in wide.columns)
    pairs = [(a, b) for a, b in combinations(judges, 2) if len(wide[[a, b]].dropna())]
    if not pairs:
        return [], None
    cells = boot.cells(_moments(wide, pairs), ["pair", "moment"], "value")
    vectors, correlations = [], []
    for a, b in pairs:
        both = wide[[a, b]].dropna()
        vec = _pearson(cells, f"{a}~{b}")
        vectors.append(vec)
        n_articles = both.index.get_level_values("doc_id").nunique()
        entry = boot.summary(vec, n=len(both), n_clusters=n_articles)
        correlations.append(
            {
                "family": family,
                "judge_a": a,
                "judge_b": b,
                "rule_based": bool({a, b} & rule_based),
                "error_definition": ERROR_DEFINITIONS[family],
                "correlation": entry.pop("estimate"),
                "mean_error_a": finite(both[a].mean()),
                "mean_error_b": finite(both[b].mean()),
                **_undefined(entry, both, a, b),
            }
        )
    k = len(judges)
    mean_r = np.column_stack(vectors).mean(axis=1)  # NaN in a replicate missing any pair
    judged = wide[wide.notna().sum(axis=1) >= 2]
    n_articles = judged.index.get_level_values("doc_id").nunique()
    entry = boot.summary(
        ratio(np.full_like(mean_r, k), 1.0 + (k - 1) * mean_r), n=len(judged), n_clusters=n_articles
    )
    effective = {
        "family": family,
        "judges": judges,
        "k": k,
        "rule_based": bool(set(judges) & rule_based),
        "mean_correlation": finite(mean_r[0]),
        "effective_judges": entry.pop("estimate"),
        **entry,
    }
    if effective["effective_judges"] is None and effective["mean_correlation"] is not None:
        effective["reason"] = "undefined: the mean error correlation is at or below -1 / (k - 1)"
    elif effective["mean_correlation"] is None:
        effective["reason"] = "undefined: a pair's error correlation is undefined (see its row)"
    return correlations, effective


def _moments(wide: pd.DataFrame, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """Per pair, the rows both judges have as the five moments of a Pearson correlation."""
    parts = []
    for a, b in pairs:
        both = wide[[a, b]].dropna()
        # Centred on the full sample's means (r does not change under a shift): the replicates'
        # E[x^2] - E[x]^2 then loses no precision to a large common offset (totals near 70).
        x, y = both[a].to_numpy(float), both[b].to_numpy(float)
        x, y = x - x.mean(), y - y.mean()
        docs = both.index.get_level_values("doc_id").astype(str)
        for moment, value in (("x", x), ("y", y), ("xx", x * x), ("yy", y * y), ("xy", x * y)):
            parts.append(pd.DataFrame({"doc_id": docs, "pair": f"{a}~{b}", "moment": moment, "value": value}))
    return pd.concat(parts, ignore_index=True)


def _pearson(cells: ClusterCells, pair: str) -> np.ndarray:
    """Pearson r from the cell means of the five moments, for the point and every replicate."""
    means = {m: cells.means[:, cells.column(pair=pair, moment=m)] for m in ("x", "y", "xx", "yy", "xy")}
    var_x = means["xx"] - means["x"] ** 2
    var_y = means["yy"] - means["y"] ** 2
    cov = means["xy"] - means["x"] * means["y"]
    # A judge whose error does not vary (never or always wrong) has no correlation: NaN, not 0.
    denominator = np.sqrt(np.clip(var_x, 0.0, None) * np.clip(var_y, 0.0, None))
    varies = denominator > 1e-9 * np.sqrt(np.abs(means["xx"] * means["yy"])) + 1e-300
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(varies, cov / np.where(varies, denominator, 1.0), np.nan)
    return np.clip(r, -1.0, 1.0)


def _undefined(entry: dict[str, Any], both: pd.DataFrame, a: str, b: str) -> dict[str, Any]:
    """The qualified entry, its reason naming the judge whose error never varies when r is undefined."""
    constant = [j for j in (a, b) if both[j].nunique() < 2]
    if constant and entry.get("reason") == NO_ESTIMATE:
        entry["reason"] = (
            f"undefined: the error of {', '.join(constant)} does not vary on these "
            f"{len(both)} response(s) (always or never wrong)"
        )
    return entry


def _caveats(overlap: Overlap, min_articles: int, rule_based: Collection[str]) -> list[str]:
    out = []
    records = [*overlap.correlations, *overlap.effective]
    # Which records the rule withheld, and the words for it, are the rule's own (analysis).
    few = withheld_caveat("judge error overlap", records, min_articles)
    if few is not None:
        out.append(few)
    named = {j for r in records for j in (r.get("judges") or [r.get("judge_a"), r.get("judge_b")])}
    offline = sorted(named & set(rule_based))
    if offline:
        out.append(f"judge error overlap: the judges include {RULE_BASED}: {', '.join(offline)}")
    if records:
        out.append(
            "judge error overlap: errors are measured against the human consensus, so the humans' own "
            "mistakes are shared by every judge and raise the error correlation"
        )
    return out


def estimate_rows(overlap: Overlap) -> list[dict[str, Any]]:
    """The overlap as rows of ``human_validation_estimates``.

    ``group`` is ``family|judges|breakdown`` (judges joined by ``~``; breakdown ``all``,
    ``language=sw`` or ``script=Geor``); ``flags`` names rule-based judges.
    """
    rows = []
    for r in overlap.correlations:
        rows.append(_row("judge_error_correlation", f"{r['judge_a']}~{r['judge_b']}", r, r["correlation"]))
    for r in overlap.effective:
        rows.append(_row("judge_effective_number", "~".join(r["judges"]), r, r["effective_judges"]))
    return rows


def _row(estimand: str, judges: str, r: Mapping[str, Any], estimate: Any) -> dict[str, Any]:
    by = r["by"] if r["by"] == "all" else f"{r['by']}={r[r['by']]}"
    identifiable = r.get("identifiable", True)
    status = "estimated" if identifiable else f"not identifiable: {r.get('reason')}"
    flags = [r.get("reason"), *(r.get("flags") or []), RULE_BASED if r.get("rule_based") else None]
    return {
        "estimand": estimand,
        "group": f"{r['family']}|{judges}|{by}",
        "estimate": finite(estimate),
        "ci_low": finite(r.get("ci_low")),
        "ci_high": finite(r.get("ci_high")),
        "p": None,
        "n": r.get("n"),
        "n_clusters": r.get("n_articles"),
        "status": status,
        "flags": "; ".join(str(f) for f in flags if f) or None,
    }
