"""Sections of ``study_results.json`` as pydantic models (issue 34): ``equivalence``,
``parse_rule``, ``h4`` and ``mixed_effects``, the inference checks beside H1-H3.

The conventions are ``_analysis_sections``': one model per section, owned here and declared in
``StudyResultsDocument`` (``_documents``), so :func:`validate_document` checks them where the
document is written (results/assets.py) and read (the report, ``clcg`` commands). Closed (a
renamed or misspelt key is refused), strict (no ``"12"`` for an int, no ``True`` for a number),
frozen; every field may be absent (a section that could not be computed says its status and
reason only; ``model_fields_set`` is the keys it has). The producers are analysis/sections/h1.py
(``equivalence``, ``parse_rule``), h4.py and mixed.py (with analysis/_mixed.py, the fits and
analysis/_stats.py, the TOSTs); results/_identifiability.py adds ``identifiable`` and ``reason``
to the blocks it withholds (Rule B's gaps, the equivalence tests).
"""

from __future__ import annotations

from clcg_pipeline.storage._analysis_sections import EstimateRecord, _Section

# ---------------------------------------------------------------------------------------------
# equivalence: the EN-PT TOST


class BootstrapTost(_Section):
    """``equivalence.bootstrap``: TOST on the bootstrap distribution of the PT gap
    (analysis/_stats.py ``bootstrap_tost``); ``ci_90`` is the ``1 - 2 alpha`` percentile interval."""

    bounds: list[float] | None = None
    p_lower: float | None = None
    p_upper: float | None = None
    p: float | None = None
    ci_90: list[float] | None = None
    equivalent: bool | None = None
    # Set when the estimates table withholds ``tost_en_pt`` (results/_identifiability.py).
    identifiable: bool | None = None
    reason: str | None = None


class PairedTost(_Section):
    """``equivalence.paired_article_means``: statsmodels' paired TOST on per-article means
    (``paired_tost``; only ``p`` and ``n`` below three articles)."""

    p: float | None = None
    p_lower: float | None = None
    p_upper: float | None = None
    n: int | None = None
    identifiable: bool | None = None
    reason: str | None = None


class EquivalenceResults(_Section):
    """``equivalence``: is the EN - PT gap inside the equivalence bounds (two TOST variants)?"""

    contrast: str | None = None
    estimate: float | None = None
    bootstrap: BootstrapTost | None = None
    paired_article_means: PairedTost | None = None
    equivalent: bool | None = None
    note: str | None = None
    n: int | None = None
    n_articles: int | None = None
    identifiable: bool | None = None
    reason: str | None = None


# ---------------------------------------------------------------------------------------------
# parse_rule: the H1 family under rule A and rule B


class RuleCounts(_Section):
    """``parse_rule.<rule>.n``: the rows and articles under one rule (analysis/_h1.py ``n``)."""

    english: int | None = None
    target: int | None = None
    baseline: int | None = None
    articles: int | None = None


class RuleEstimates(_Section):
    """``parse_rule.A`` or ``parse_rule.B``: the five H1 summary estimands and the row counts."""

    h1_micro: EstimateRecord | None = None
    macro: EstimateRecord | None = None
    pt_gap: EstimateRecord | None = None
    macro_net: EstimateRecord | None = None
    micro_net: EstimateRecord | None = None
    n: RuleCounts | None = None


class ParseRuleResults(_Section):
    """``parse_rule``: rule A (a failed answer scores 0) against rule B (failed answers dropped);
    ``difference_h1_micro`` only when both rules keep the same articles."""

    A: RuleEstimates | None = None
    B: RuleEstimates | None = None
    difference_h1_micro: EstimateRecord | None = None


# ---------------------------------------------------------------------------------------------
# h4: item source


class H4Results(_Section):
    """``h4``: CLCG on human items minus CLCG on the primary (llm) band, two-sided; or, when a
    group has no rows, why (``status``, ``identifiable``, ``reason`` only)."""

    status: str | None = None
    identifiable: bool | None = None
    reason: str | None = None
    human: EstimateRecord | None = None
    llm: EstimateRecord | None = None
    difference: EstimateRecord | None = None
    alternative: str | None = None
    note: str | None = None


# ---------------------------------------------------------------------------------------------
# mixed_effects: the convergent checks of H1 and H2


class MixedFit(EstimateRecord):
    """``mixed_effects.h1`` or ``.h2``: one crossed-intercepts REML fit of its term
    (analysis/_mixed.py), with the estimate fields the suite adds (analysis/sections/mixed.py).
    A fit not run (too few articles or cells) has the estimate fields and its status only."""

    formula: str | None = None
    term: str | None = None
    random: str | None = None
    aggregation: str | None = None
    n_cells: int | None = None
    n_models: int | None = None
    se: float | None = None
    p_sided: str | None = None
    p_one_sided_less: float | None = None  # H2's directional test (memorizable narrows the gap)
    variance_components: dict[str, float] | None = None  # "article", "model" -> variance
    residual_variance: float | None = None
    method: str | None = None


class MixedEffectsResults(_Section):
    """``mixed_effects``: how cells are aggregated, and the H1 and H2 fits."""

    aggregation: str | None = None
    h1: MixedFit | None = None
    h2: MixedFit | None = None

    def fit(self, name: str) -> MixedFit | None:
        """The fit called ``name`` (``h1``, ``h2``; the estimates table's ``mixed_<name>``)."""
        return {"h1": self.h1, "h2": self.h2}.get(name)
