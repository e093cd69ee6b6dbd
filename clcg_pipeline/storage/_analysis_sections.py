"""Sections of ``study_results.json`` as pydantic models (issue 34): ``settings``, ``h2``, ``h3``,
``context_gain`` and ``repetitions``.

One model per section, owned here: ``StudyResultsDocument`` (``_documents``) declares the
sections with them, so :func:`validate_document` checks them where the document is written
(results/assets.py) and read (the report, ``clcg`` commands); ``StudyResults``
(``_result_models``) reads them through the same models, so the report's sections read typed
fields. Closed (``extra="forbid"``: a renamed or misspelt key is refused, in a
``settings.sources`` entry too; only a ``settings.models`` entry stays open), strict (no
``"12"`` for an int, no ``True`` for a number), frozen. Every field may be absent: a section that could
not be computed says its status and reason only; ``model_fields_set`` is the keys it has.
The producers are analysis/_settings.py (``settings``, also under ``h1.settings``; the lists
of languages with and without data also at the top level of the document) and
analysis/sections/h2.py, h3.py, context.py and repetitions.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, with_config
from typing_extensions import TypedDict


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class EstimateRecord(_Section):
    """One bootstrapped estimate as the analysis writes it (the fields of ``Estimate``)."""

    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    p_value: float | None = None
    p_adj: float | None = None
    p_bound: bool | None = None
    n: int | None = None
    n_articles: int | None = None
    identifiable: bool | None = None
    reason: str | None = None
    valid_replicates: int | None = None
    flags: list[str] | str | None = None
    converged: bool | None = None
    status: str | None = None
    warnings: list[str] | str | None = None
    metric: str | None = None
    sided: str | None = None

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None

    def record(self) -> dict[str, object]:
        """The fields the document has, as the report's estimate rows take them."""
        return self.model_dump(exclude_unset=True)


class H2Contrast(_Section):
    """``h2.pooled`` or one model of ``h2.by_model``: the gap among memorizable and among new
    articles and their difference; or, when a group is missing, why (and each group's rows)."""

    memorizable: EstimateRecord | None = None
    new: EstimateRecord | None = None
    difference: EstimateRecord | None = None
    status: str | None = None
    identifiable: bool | None = None
    reason: str | None = None
    n_memorizable: int | None = None
    n_new: int | None = None


class H2ClassEstimate(EstimateRecord):
    """One Joshi class of ``h2.by_class_sensitivity``: its memorability difference and languages."""

    languages: list[str] | None = None


class H2Results(_Section):
    """``h2``: memorability (CLCG memorizable - CLCG new), pooled, per model and per class."""

    status: str | None = None
    identifiable: bool | None = None
    reason: str | None = None
    definition: str | None = None
    alternative: str | None = None
    rows_without_date_or_cutoff: int | None = None
    pooled: H2Contrast | None = None
    by_model: dict[str, H2Contrast] | None = None
    by_class_sensitivity: dict[str, H2ClassEstimate] | None = None


class ContextSelector(_Section):
    """``context_gain.selector``: which model's items, on which articles, by which rule."""

    model: str | None = None
    doc_ids: list[str] | None = None
    items: int | None = None
    rule: str | None = None


class ContextGainEntry(_Section):
    """One language (``by_language``) or Joshi class (``by_class``, with its languages)."""

    gain: float | None = None
    n: int | None = None
    n_pairs: int | None = None
    n_articles: int | None = None
    languages: list[str] | None = None


class ContextGainResults(_Section):
    """``context_gain``: full_body minus closed_book on the selector's items (descriptive)."""

    status: str | None = None
    selector: ContextSelector | None = None
    closed_book_mean: float | None = None
    matched_rows: int | None = None
    matched_pairs: int | None = None
    by_language: dict[str, ContextGainEntry] | None = None
    by_class: dict[str, ContextGainEntry] | None = None
    note: str | None = None


class H3Slope(EstimateRecord):
    """``h3.slope``: the slope of the standardized CLCG on the level number, over which levels."""

    alternative: str | None = None
    levels: list[str] | None = None


class LevelScale(_Section):
    """One level of ``h3.standardization``: the mean and SD its scores are standardized by."""

    mean: float | None = None
    sd: float | None = None


class H3Results(_Section):
    """``h3``: the standardized and raw CLCG per level, the slope over levels, the scales used."""

    status: str | None = None
    identifiable: bool | None = None
    reason: str | None = None
    standardized: dict[str, EstimateRecord] | None = None
    raw_descriptive: dict[str, EstimateRecord] | None = None
    standardization: dict[str, LevelScale] | None = None
    slope: H3Slope | None = None
    note: str | None = None


class Band(_Section):
    """``settings.band``: the metric and the slice of items the headline estimates use."""

    metric: str | None = None
    levels: list[str] | None = None
    item_source: str | None = None
    context_scope: str | None = None


class ModelEntry(BaseModel):
    """One entry of ``settings.models``: the fields the report reads are typed; the entry stays an
    open mapping (a provider's own fields pass through, ``model_extra``)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    id: str | None = None
    provider: str | None = None
    model: str | None = None
    knowledge_cutoff: str | None = None  # None: the model has no knowledge cutoff
    simulated: str | None = None  # what is simulated about its answers (analysis/_settings.py)

    def record(self) -> dict[str, Any]:
        """The entry as its JSON object (declared and extra keys, only those it has)."""
        return self.model_dump(exclude_unset=True)


class LanguageWithoutData(_Section):
    """One entry of ``languages_without_data``: a panel language with no scored rows, and why."""

    iso: str | None = None
    name: str | None = None
    role: str | None = None
    reason: str | None = None


#: ``languages_without_data``: entries with the reason, or bare ISO codes (older documents).
LanguagesWithoutData = list[LanguageWithoutData | str]


@with_config(ConfigDict(extra="forbid", strict=True))
class SourceEntry(TypedDict, total=False):
    """One entry of ``settings.sources``: a corpus source as analysis/_settings.py writes it (a
    URL's credentials already removed there). Closed and strict: the config's ``SourceSpec``
    declares exactly these five fields, so any other key (an ``api_key`` from a document made
    elsewhere) is refused; the error names the field, never its value (``DocumentError``). A
    ``TypedDict``, not a model: the report describes each entry as the mapping it is in the
    document."""

    name: str | None
    kind: str | None
    role: str | None
    path: str | None  # None: the source has no path (a named data set)
    split: str | None  # a FLORES split (dev or devtest); None for other sources


class CodeVersion(_Section):
    """``settings.code_version``: the package version and, from a git checkout, its commit."""

    package: str | None = None  # None: the package is not installed
    git_commit: str | None = None  # None: not run from a git checkout


class StudySettings(_Section):
    """``settings`` (and ``h1.settings``): how the estimates were computed (never a credential)."""

    seed: int | None = None
    replicates: int | None = None
    bootstrap_replicates: int | None = None
    confidence: float | None = None
    min_articles: int | None = None
    band: Band | None = None
    rule: str | None = None
    replicate_rule: str | None = None
    config_hash: str | None = None
    bootstrap: str | None = None
    n_rows: int | None = None
    n_band_rows: int | None = None
    models: list[ModelEntry] | None = None
    sources: list[SourceEntry] | None = None
    languages_without_data: LanguagesWithoutData | None = None
    languages_with_data: list[str] | None = None
    generated_at: str | None = None
    # A string in documents written before the code version became package and commit.
    code_version: CodeVersion | str | None = None


class RepetitionSummary(_Section):
    """``repetitions.summary``: the spread of the per-repetition CLCG."""

    mean: float | None = None
    sd: float | None = None
    min: float | None = None
    max: float | None = None


class SpearmanResult(_Section):
    """One pair of ``repetitions.pairwise_spearman``: the model ranks of two repetitions compared."""

    rho: float | None = None
    p: float | None = None
    n: int | None = None


class RepetitionsResults(_Section):
    """``repetitions``: CLCG per repetition on the articles answered more than once, and how well
    the model rankings of the repetitions agree (analysis/sections/repetitions.py)."""

    status: str | None = None
    articles: int | None = None
    per_repetition: dict[str, EstimateRecord] | None = None
    summary: RepetitionSummary | None = None
    by_model: dict[str, dict[str, float | None]] | None = None  # model -> repetition -> CLCG
    kendalls_w: float | None = None
    pairwise_spearman: dict[str, SpearmanResult] | None = None  # "0-1" -> the pair's Spearman
    mean_pairwise_spearman: float | None = None
