"""Sections of ``study_results.json`` as pydantic models (issue 34): ``nomological``,
``replication``, ``joshi_class`` and ``metric_sensitivity``.

The conventions of ``_analysis_sections`` (whose ``_Section`` and ``EstimateRecord`` these build
on): one model per section, owned here; ``StudyResultsDocument`` (``_documents``) declares the
sections with them, so :func:`validate_document` checks them where the document is written
(results/assets.py) and read (the report, ``clcg`` commands); ``StudyResults``
(``_result_models``) reads them through the same models, so the report reads typed fields.
Closed (a renamed or misspelt key is refused), strict, frozen; every field may be absent, and
``model_fields_set`` is the keys a section has.

The producers: analysis/sections/nomological.py (``nomological``), replication.py
(``replication``), sensitivity.py (``metric_sensitivity``) and h1.py's ``joshi_classes``
(``joshi_class``).
"""

from __future__ import annotations

from pydantic import BaseModel

from clcg_pipeline.storage._analysis_sections import EstimateRecord, StudySettings, _Section

#: The H1 summary estimands, in the order a report shows them.
H1_SUMMARY_KEYS = ("h1_micro", "macro", "pt_gap", "macro_net", "micro_net")


class _SummaryEstimates(_Section):
    """The five H1 summary estimands (each an estimate), as several sections carry them."""

    h1_micro: EstimateRecord | None = None
    macro: EstimateRecord | None = None
    pt_gap: EstimateRecord | None = None
    macro_net: EstimateRecord | None = None
    micro_net: EstimateRecord | None = None

    def summary(self) -> dict[str, EstimateRecord]:
        """The summary estimands present, by key, in ``H1_SUMMARY_KEYS`` order."""
        found = {key: getattr(self, key) for key in H1_SUMMARY_KEYS}
        return {key: block for key, block in found.items() if block is not None}

    def estimate(self, key: str) -> EstimateRecord:
        """The estimand ``key`` (one of ``H1_SUMMARY_KEYS``); an empty record when absent."""
        return self.summary().get(key) or EstimateRecord()


# ---------------------------------------------------------------------------------------------
# nomological


class SpearmanEstimate(EstimateRecord):
    """A language-level Spearman as an estimand (``nomological.spearman`` entries, the
    replication's Spearman): ``rho`` is its ``estimate``, ``n`` counts languages, the interval
    comes from ``resamples`` language-level resamples of which ``valid_resamples`` were usable."""

    rho: float | None = None
    resamples: int | None = None
    valid_resamples: int | None = None


class SensitivitySpearman(SpearmanEstimate):
    """``nomological.spearman_joshi_sensitivity``: the Spearman with the sensitivity class mapping
    and the languages it covers."""

    languages: list[str] | None = None


class PartialSpearman(_Section):
    """One entry of ``nomological.partial_spearman_on_joshi``: a Spearman after rank
    residualization on the Joshi class (no bootstrap: its p is a t test's)."""

    rho: float | None = None
    p: float | None = None
    n: int | None = None
    control: str | None = None
    n_articles: int | None = None
    identifiable: bool | None = None
    reason: str | None = None


class StandardizedOls(_Section):
    """``nomological.standardized_ols``: the descriptive OLS of the language CLCG on z-scored
    predictors (``r2`` withheld below study.min_articles, the coefficients kept)."""

    n: int | None = None
    r2: float | None = None
    coefficients: dict[str, float] | None = None  # predictor -> standardized coefficient
    note: str | None = None
    n_articles: int | None = None
    identifiable: bool | None = None
    reason: str | None = None


class NomologicalResults(_Section):
    """``nomological``: language-level correlates of the CLCG (exploratory)."""

    languages: list[str] | None = None
    spearman: dict[str, SpearmanEstimate] | None = None  # predictor -> its Spearman with the CLCG
    spearman_joshi_sensitivity: SensitivitySpearman | None = None
    partial_spearman_on_joshi: dict[str, PartialSpearman] | None = None
    standardized_ols: StandardizedOls | None = None
    note: str | None = None


# ---------------------------------------------------------------------------------------------
# replication


class ReplicationBand(_Section):
    """``replication.band``: which rows of the replication corpus the estimators used, and why."""

    rule: str | None = None
    item_source: str | None = None
    levels: list[str] | None = None
    context_scope: str | None = None
    metric: str | None = None


class ReplicationH1(_SummaryEstimates):
    """``replication.h1``: the H1 estimators on the replication corpus (the shape of ``h1``)."""

    by_language: dict[str, EstimateRecord] | None = None
    by_model: dict[str, dict[str, EstimateRecord]] | None = None
    n: dict[str, int] | None = None
    settings: StudySettings | None = None
    # Only when the replication band has no rows at all: why, said once.
    identifiable: bool | None = None
    reason: str | None = None
    status: str | None = None


class ReplicationResults(_Section):
    """``replication``: H1 on a second corpus and the Spearman of the two language rankings; or,
    without replication scores, its status and reason only."""

    status: str | None = None
    identifiable: bool | None = None
    reason: str | None = None
    h1: ReplicationH1 | None = None
    band: ReplicationBand | None = None
    rows: str | None = None  # the band's rule, in words
    n_rows: int | None = None
    languages: list[str] | None = None  # the languages with an estimate in both corpora
    spearman: SpearmanEstimate | None = None


# ---------------------------------------------------------------------------------------------
# joshi_class


class ClassMean(_Section):
    """One class of a ``joshi_class`` mapping: its languages with data, the class mean of their
    CLCGs (``raw``) and of their net CLCGs (``net``)."""

    languages: list[str] | None = None
    raw: EstimateRecord | None = None
    net: EstimateRecord | None = None


class JoshiClassResults(_Section):
    """``joshi_class``: the class means under the primary and the sensitivity mapping."""

    unclassified: list[str] | None = None
    rule: str | None = None
    primary: dict[str, ClassMean] | None = None  # class ("0" ... "5") -> its mean
    sensitivity: dict[str, ClassMean] | None = None

    def mappings(self) -> dict[str, dict[str, ClassMean]]:
        """The class mappings present (``primary``, ``sensitivity``), by name."""
        found = {"primary": self.primary, "sensitivity": self.sensitivity}
        return {name: classes for name, classes in found.items() if classes is not None}


# ---------------------------------------------------------------------------------------------
# metric_sensitivity


class MetricSensitivityEntry(_SummaryEstimates):
    """One metric of ``metric_sensitivity.metrics``: the H1 summary estimands under it, or why
    they were not computed (``computed`` False, with the reason)."""

    status: str | None = None
    computed: bool | None = None
    reason: str | None = None


class MetricSensitivityResults(_Section):
    """``metric_sensitivity``: the H1 summary estimands under each metric, on the same band."""

    band_metric: str | None = None
    rule: str | None = None
    note: str | None = None
    metrics: dict[str, MetricSensitivityEntry] | None = None


#: The sections this module owns, by their key in ``study_results.json``.
VALIDITY_SECTIONS: dict[str, type[BaseModel]] = {
    "nomological": NomologicalResults,
    "replication": ReplicationResults,
    "joshi_class": JoshiClassResults,
    "metric_sensitivity": MetricSensitivityResults,
}

#: The section's name before it was a pydantic model (a ``TypedDict`` of ``_documents``).
MetricSensitivity = MetricSensitivityResults
