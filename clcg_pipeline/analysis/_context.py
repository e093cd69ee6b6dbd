"""What every suite section shares: the run's settings and the long ``estimates`` rows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import percentile_ci, valid_replicates
from clcg_pipeline.analysis._gaps import GapPanel, Roles, build_panel, build_panels
from clcg_pipeline.analysis._prepare import KEY_COLUMNS, check_columns
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.storage import finite

# Replicate rule, stated once for every bootstrapped estimand (docs/ESTIMANDS.md).
REPLICATE_RULE = (
    "a replicate in which a group or language of the contrast has no row is dropped; the set of "
    "languages and groups is fixed by the full sample"
)


#: Fields that state an interval, a p value or a test's verdict: withheld with the estimand.
WITHHELD_FIELDS = ("ci_low", "ci_high", "ci_90", "p", "p_adj", "p_lower", "p_upper", "equivalent")
#: Why an estimand has no estimate at all.
NO_ESTIMATE = "no estimate: a group or language of the contrast has no scored rows"
#: Why a bootstrapped estimand with an estimate has no interval: every replicate was dropped.
NO_VALID_REPLICATE = (
    "no valid bootstrap replicate: every draw left a group or language of the contrast without rows"
)


def withheld_reason(
    estimate: float | None,
    n_articles: int | None,
    min_articles: int,
    valid_replicates: int | None = None,
    *,
    unit: str = "articles",
) -> str | None:
    """The identifiability rule, stated once: why an estimand's interval and p are withheld, or
    None when they may be shown.

    The suite while it computes (:meth:`SuiteContext.qualify`), ``results`` for the sections it
    restates and ``clcg compare`` for the numbers it computes or reads all ask this function, so a
    threshold or a reason cannot differ between them. Below ``study.min_articles`` articles a
    bootstrap interval is degenerate; with no valid replicate there is none. The point estimate
    stays in every case, as a description of the sample. ``unit`` names what a study resamples
    in the articles' place (documents, items, annotators), so its reason says so.
    """
    if estimate is None:
        return NO_ESTIMATE
    if n_articles is not None and n_articles < min_articles:
        return f"too few {unit}: {n_articles} < study.min_articles = {min_articles}"
    if valid_replicates == 0:
        return NO_VALID_REPLICATE
    return None


def withhold_fields(block: dict[str, Any]) -> None:
    """Set every interval, p value and test verdict of ``block`` (``WITHHELD_FIELDS``) to None."""
    for name in WITHHELD_FIELDS:
        if name in block:
            block[name] = None


def withheld_for_too_few(reason: object, unit: str = "articles") -> bool:
    """Whether ``reason`` (a record's, from :func:`withheld_reason`) withheld it for too few ``unit``."""
    return isinstance(reason, str) and reason.startswith(f"too few {unit}:")


def withheld_caveat(
    subject: str, records: Sequence[Mapping[str, Any]], min_articles: int, unit: str = "articles"
) -> str | None:
    """The one caveat line for the records of ``subject`` that :func:`withheld_reason` withheld for
    too few ``unit`` (counted from each record's ``reason``), or None when it withheld none.

    Every study that sums up its withheld breakdowns says it in these words, so a threshold or
    its consequence cannot be stated differently from one study to the next.
    """
    few = sum(withheld_for_too_few(r.get("reason"), unit) for r in records)
    if not few:
        return None
    return (
        f"{subject}: {few} of {len(records)} estimate(s) rest on fewer than study.min_articles = "
        f"{min_articles} {unit}; they are descriptions and their intervals and p values are withheld"
    )


def _min_p(valid: int, sided: str) -> float:
    return (2.0 if sided == "two-sided" else 1.0) / (valid + 1)


@dataclass
class SuiteContext:
    config: ProjectConfig
    roles: Roles
    replicates: int
    seed: int
    confidence: float
    min_articles: int = 10
    rows: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summ(
        self,
        vec: np.ndarray,
        *,
        n: int | None = None,
        n_articles: int | None = None,
        p: float | None = None,
        sided: str | None = "one-sided",
        unit: str = "articles",
    ) -> dict[str, Any]:
        """One bootstrapped estimand from a point-first vector, with its counts and caveats.

        ``sided=None``: p is not a bootstrap p (see :meth:`qualify`); ``unit``: what was resampled.
        """
        low, high = percentile_ci(vec[1:], self.confidence)
        out: dict[str, Any] = {"estimate": finite(vec[0]), "ci_low": finite(low), "ci_high": finite(high)}
        if p is not None:
            out["p"] = finite(p)
        if n is not None:
            out["n"] = int(n)
        if n_articles is not None:
            out["n_articles"] = int(n_articles)
        out["valid_replicates"] = valid_replicates(vec)
        return self.qualify(out, sided=sided, unit=unit)

    def stats(
        self,
        panel: GapPanel,
        vec: np.ndarray,
        languages: list[str],
        *,
        p: float | None = None,
        sided: str = "one-sided",
        **where: object,
    ) -> dict[str, Any]:
        """:meth:`summ` with ``n`` and ``n_articles`` counted over the cells of ``languages``.

        ``n`` is every scored row (full sample) whose cell mean enters the contrast: the
        reference rows and the rows of each language the contrast compares, under ``where``.
        """
        return self.summ(
            vec,
            n=panel.n(language=languages, **where),
            n_articles=panel.n_articles(language=languages, **where),
            p=p,
            sided=sided,
        )

    def qualify(
        self, out: dict[str, Any], *, sided: str | None = "one-sided", unit: str = "articles"
    ) -> dict[str, Any]:
        """Add ``identifiable``, ``reason``, ``p_bound`` and ``flags`` to a bootstrapped estimand.

        The rule is :func:`withheld_reason` (below ``study.min_articles`` articles the interval
        and p would be degenerate): a withheld estimand is marked not identifiable with its
        reason; the point estimate stays as a description. ``sided=None``: p is not a bootstrap
        p (no attainable bound to label). ``unit``: what ``n_articles`` counts (documents for a
        bootstrap over documents), named in the rule's reason.
        """
        flags: list[str] = list(out.get("flags", []))
        valid = out.get("valid_replicates")
        reason = withheld_reason(
            out.get("estimate"), out.get("n_articles"), self.min_articles, valid, unit=unit
        )
        if reason is not None:
            withhold_fields(out)
        if valid is not None and valid < self.replicates and reason is None:
            flags.append(f"{valid} of {self.replicates} bootstrap replicates valid ({REPLICATE_RULE})")
        p = out.get("p")
        out["p_bound"] = False
        if p is not None and valid and sided is not None:
            smallest = _min_p(valid, sided)
            if p <= smallest * (1 + 1e-12):
                out["p_bound"] = True
                flags.append(f"p is the smallest attainable with {valid} replicates: p <= {smallest:.3g}")
        est, low, high = out.get("estimate"), out.get("ci_low"), out.get("ci_high")
        if est is not None and low is not None and high is not None and not low <= est <= high:
            flags.append(
                "estimate outside its own percentile interval (skewed or discrete bootstrap "
                "distribution, e.g. rank ties among few units): read the interval with care"
            )
        out["identifiable"] = reason is None
        out["reason"] = reason
        out["flags"] = flags
        return out

    def add(self, estimand: str, group: str, s: dict[str, Any], *, n: int | None = None) -> None:
        """One row of the long ``estimates`` table."""
        status = s.get("status")
        if status is None:
            status = "estimated" if s.get("identifiable", True) else f"not identifiable: {s.get('reason')}"
        self.rows.append(
            {
                "estimand": estimand,
                "group": group,
                "estimate": s.get("estimate"),
                "ci_low": s.get("ci_low"),
                "ci_high": s.get("ci_high"),
                "p": s.get("p"),
                "p_adj": None,
                "n": s.get("n", n),
                "n_articles": s.get("n_articles"),
                "valid_replicates": s.get("valid_replicates"),
                "p_bound": s.get("p_bound"),
                "identifiable": s.get("identifiable"),
                "status": status,
                "flags": "; ".join(s.get("flags", [])) or None,
            }
        )

    def panels(
        self, rows: pd.DataFrame, cell_cols: list[str], values: list[np.ndarray]
    ) -> Iterator[GapPanel]:
        """The panels of suite rows with each of ``values`` as ``y``, in turn (``build_panels``)."""
        return build_panels(
            rows, self.roles, values, cell_cols=cell_cols, replicates=self.replicates, seed=self.seed
        )

    def panel(self, rows: pd.DataFrame, cell_cols: list[str]) -> tuple[GapPanel, np.ndarray]:
        """The panel of suite rows: always in the suite's canonical order (``cluster_table``'s presorted)."""
        return build_panel(
            rows, self.roles, cell_cols=cell_cols, replicates=self.replicates, seed=self.seed, presorted=True
        )


def class_map(ctx: SuiteContext, sensitivity: bool) -> dict[int, list[str]]:
    """Joshi class -> languages, for every class-level result.

    Portuguese (the baseline) belongs to its class like any language; unclassified languages
    (Ayacucho Quechua) are left out of the primary mapping and enter only the sensitivity one.
    """
    classes: dict[int, list[str]] = {}
    for iso in (ctx.roles.baseline, *ctx.roles.targets):
        lang = ctx.config.languages.get(iso)
        cls = lang.joshi_class
        if cls is None and sensitivity:
            cls = lang.joshi_class_sensitivity
        if cls is not None:
            classes.setdefault(int(cls), []).append(iso)
    return dict(sorted(classes.items()))


def usable(scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Validate columns; an empty frame (even one without columns) becomes an empty contract frame."""
    if len(scores) == 0:
        from clcg_pipeline.storage import empty_frame

        return empty_frame("scores")
    check_columns(scores, [*KEY_COLUMNS, metric])
    return scores
