"""The shapes of the sections of ``study_results.json``, defined once for the writers and the reader.

The analysis stage writes the estimates and merges the document; the validation stage writes
``error_taxonomy`` and ``human_validation``; the granularity stage writes ``granularity``; the
report reads them all. Field names are the JSON keys. Every class is ``total=False``: older or
partial documents lack keys, and a study that did not run writes its status and reason only.
A value is ``None`` where the writer had nothing to put there (a withheld interval, a skipped study).

Validated, not converted (issue 34): the shapes stay ``TypedDict`` classes, because every
producer builds plain dicts typed by them and the report reads those dicts; pydantic checks a
document against them (``_document_validation.validate_document``, a ``TypeAdapter`` under
``DOCUMENT_CONFIG``: unknown keys and wrong types refused) where it is written and read. Readers
that want attributes instead of ``.get()`` validate into the pydantic views of ``_result_models``.
Sections converted since are pydantic models of their own, checked by the same call:
``settings`` (and ``h1.settings``), ``h2``, ``h3``, ``context_gain`` and ``repetitions``
(``_analysis_sections``); ``equivalence``, ``parse_rule``, ``h4`` and ``mixed_effects``
(``_inference_sections``); ``nomological``, ``replication``, ``joshi_class`` and
``metric_sensitivity`` (``_validity_sections``); ``context_scope`` (``_context_sections``); read
by the report through the same models. No field is ``Any`` or an open mapping: the last ones
(``model_contrasts.pairs`` and ``multiplicity``, ``multiplicity``, ``new_model.differences``,
``warnings``, ``excluded_versions``, ``code_version``, the keypoint and consensus counts of
``human_validation``) have shapes of their own here or in ``_shared_shapes``. Only a
``settings.models`` or ``settings.sources`` entry takes keys beyond its declared, typed fields.
"""

from __future__ import annotations

from pydantic import with_config
from typing_extensions import TypedDict

from clcg_pipeline.storage._analysis_sections import (
    CodeVersion,
    ContextGainResults,
    H2Results,
    H3Results,
    LanguagesWithoutData,
    RepetitionsResults,
    StudySettings,
)
from clcg_pipeline.storage._context_sections import ContextScopeResults
from clcg_pipeline.storage._granularity_documents import GranularityResults
from clcg_pipeline.storage._inference_sections import (
    EquivalenceResults,
    H4Results,
    MixedEffectsResults,
    ParseRuleResults,
)
from clcg_pipeline.storage._shared_shapes import DOCUMENT_CONFIG, BhFamily, Estimate, Interval
from clcg_pipeline.storage._validity_sections import (
    JoshiClassResults,
    MetricSensitivityResults,
    NomologicalResults,
    ReplicationResults,
)

# ---------------------------------------------------------------------------------------------
# The analysis stage: the estimates and the merged document


class LanguageEntry(TypedDict, total=False):
    """One panel language of ``languages``."""

    iso: str
    name: str
    script: str
    joshi_class: int | None
    joshi_class_sensitivity: int | None
    role: str
    non_latin: bool
    isolate: str


class H1Results(TypedDict, total=False):
    """``h1``: the five summary estimands, per language, per model, and the row counts."""

    h1_micro: Estimate
    macro: Estimate
    pt_gap: Estimate
    macro_net: Estimate
    micro_net: Estimate
    by_language: dict[str, Estimate]
    by_model: dict[str, dict[str, Estimate]]
    n: dict[str, int]
    settings: StudySettings
    # Only when H1 has no band rows at all (e.g. an empty item bank): why, said once.
    identifiable: bool
    reason: str
    status: str


class ModelContrastsResults(TypedDict, total=False):
    """``model_contrasts``: paired differences per ``"A vs B"``, ranks and English score per model."""

    status: str
    models: list[str]
    contrast: str
    ranking: str
    pairs: dict[str, ModelPair]  # "A vs B" -> the pair
    ranks: dict[str, dict[str, Estimate]]
    english_score: dict[str, Estimate]
    multiplicity: dict[str, BhFamily]  # one family per gap (h1_micro, macro, macro_net)
    tie_groups: TieGroups
    # Issue 37: ``pairs`` holds the pairs a reader needs; this names the table with every pair.
    pairs_table: PairsTable


class ModelPair(TypedDict, total=False):
    """One pair of ``model_contrasts.pairs`` (analysis/sections/model_contrasts.py ``_pair``):
    model A minus model B on the items both answered, one estimate per gap."""

    model_a: str
    model_b: str
    n_common_items: int
    h1_micro: Estimate
    macro: Estimate
    macro_net: Estimate


class PairsTable(TypedDict, total=False):
    """``model_contrasts.pairs_table``: the table of every model pair beside the document (issue 37)."""

    table: str  # its name in the catalog (a view) and its folder
    path: str  # relative to the folder of study_results.json
    rows: int  # one per pair and gap
    pairs: int  # every pair, N(N-1)/2
    shown: int  # the pairs kept in ``pairs``
    significant: int  # the pairs significant after BH on any gap (at most 50 of them kept)
    query: str  # the named query that lists them
    rule: str  # which pairs are kept in the document


class EstimandsTable(TypedDict, total=False):
    """``estimands_table``: the estimates table beside the document, every estimand's row (issue 37)."""

    table: str  # its name in the catalog (a view) and its folder
    path: str  # relative to the folder of study_results.json
    rows: int  # every estimand and group
    indexed: int  # the entries kept in ``estimands``
    rule: str  # which entries ``estimands`` keeps


class TieGroups(TypedDict, total=False):
    """``model_contrasts.tie_groups``: runs of models whose ranks cannot be separated (docs/ESTIMANDS.md)."""

    gap: str
    level: float
    rule: str
    reason: str | None
    groups: list[list[str]]
    by_model: dict[str, int]


class NewModel(TypedDict, total=False):
    """``new_model``: the model added after all the others had answered (results/_new_model.py)."""

    model: str
    estimand: str
    clcg: Estimate | None
    rank: Estimate | None
    n_models: int
    differences: list[NewModelDifference]
    note: str


class NewModelDifference(Estimate, total=False):
    """One entry of ``new_model.differences``: a pair's gap read as the new model minus
    ``other`` (results/_new_model.py), the pair's estimate fields otherwise."""

    other: str | None


class ExcludedVersion(TypedDict, total=False):
    """One entry of ``excluded_versions``: an article x language version the corpus audit judged
    incomplete, left out of every estimate (results/_inputs.py ``drop_incomplete_versions``).
    The coverages are ``None`` for a document without a reference version (NaN in the audit);
    the counts are whole numbers (corpus/_audit.py fills them) and absent from an older audit."""

    doc_id: str
    language: str
    coverage: float | None
    usable_coverage: float | None
    n_invalid_utf8: int
    n_empty: int
    n_duplicated: int
    reason: str


class Definition(TypedDict, total=False):
    """One entry of ``definitions`` (docs/ESTIMANDS.md in data)."""

    definition: str
    direction: str
    sided: str
    metric: str
    n: str


class DrilldownItem(TypedDict, total=False):
    """One item of a language's drill-down panel: the question and both answers."""

    question: str | None
    gold: str | None
    options: list[str] | None  # a multiple-choice item's options; None for an open question
    en_answer: str | None
    target_answer: str | None
    en_score: float | None
    target_score: float | None
    difference: float | None
    model: str
    doc_id: str
    item_id: str
    level: str | None
    context_scope: str
    reps: int | list[int]


# ---------------------------------------------------------------------------------------------
# The error taxonomy (validation stage)


class TaxonomyJudge(TypedDict, total=False):
    judge: str
    family: str
    judgements: int
    ok: int
    excluded: dict[str, int]
    absent: int


class ExcludedJudgements(TypedDict, total=False):
    judge: str
    side: str
    status: str
    n: int


class LabelFrequency(TypedDict, total=False):
    judge: str
    side: str
    label: str
    n: int
    total: int
    share: float
    ci_low: float | None
    ci_high: float | None
    identifiable: bool
    reason: str | None
    n_articles: int


class LabelTransition(TypedDict, total=False):
    judge: str
    en_label: str
    target_label: str
    n: int
    share: float


class CrosslingualLoss(Interval, total=False):
    judge: str
    group: str  # "all", "joshi_class=2", "language=sw", "model=m"


class JudgeAgreement(Interval, total=False):
    level: str  # fine | collapsed | binary
    judge_a: str
    judge_b: str
    unit: str
    percent: float | None
    percent_ci_low: float | None
    percent_ci_high: float | None
    kappa: float | None


class DeltaTotal(Interval, total=False):
    judge: str


class DeltaContribution(Interval, total=False):
    judge: str
    label: str
    frequency: float
    mean_loss: float | None
    mean_loss_ci_low: float | None
    mean_loss_ci_high: float | None
    contribution: float | None


class LanguageGroup(TypedDict, total=False):
    """A judge-validity breakdown row: one ``language`` (its ``script``) or one ``script`` (``languages``)."""

    language: str
    script: str
    languages: list[str]


class OrderBias(Interval, LanguageGroup, total=False):
    judge: str
    pairs: int
    flips: int
    flip_rate: float | None
    first_shown_preferred: float | None


class SelfPreference(Interval, LanguageGroup, total=False):
    judge: str
    judge_family: str
    n_own: int
    n_other: int
    own_rate: float | None
    other_rate: float | None
    difference: float | None
    excess: float | None
    excess_ci_low: float | None
    excess_ci_high: float | None


@with_config(DOCUMENT_CONFIG)
class ErrorTaxonomyResults(TypedDict, total=False):
    """``error_taxonomy`` (the ``error_taxonomy_results`` asset)."""

    status: str
    reason: str | None
    taxonomy: str | None
    judges: list[TaxonomyJudge]
    pairs: int
    articles: int
    candidate_loss_share_realised: float | None
    candidate_loss_share_target: float | None
    excluded: list[ExcludedJudgements]
    label_frequencies: list[LabelFrequency]
    transitions: list[LabelTransition]
    crosslingual_loss: list[CrosslingualLoss]
    agreement: list[JudgeAgreement]
    delta: list[DeltaTotal]
    delta_contribution: list[DeltaContribution]
    order_bias: list[OrderBias]
    self_preference: list[SelfPreference]
    order_bias_by_language: list[OrderBias]
    order_bias_by_script: list[OrderBias]
    self_preference_by_language: list[SelfPreference]
    self_preference_by_script: list[SelfPreference]
    decomposition: str
    caveats: list[str]


# ---------------------------------------------------------------------------------------------
# Human validation (validation stage)


class QcStep(TypedDict, total=False):
    step: str
    rule: str
    excluded_annotators: int
    excluded_ratings: int
    remaining_annotators: int
    remaining_ratings: int
    annotators_with_ratings: int


class AlphaRow(TypedDict, total=False):
    dimension: str
    level: str  # the level of measurement
    alpha: float | None
    ci_low: float | None
    ci_high: float | None
    items: int
    ratings: int
    valid_replicates: int
    status: str
    identifiable: bool
    reason: str | None


class SpearmanRow(TypedDict, total=False):
    metric: str
    human: str
    rho: float | None
    ci_low: float | None
    ci_high: float | None
    p: float | None
    n: int
    status: str
    identifiable: bool
    reason: str | None


class ClassAdequacy(TypedDict, total=False):
    joshi_class: int
    adequacy_mean: float
    adequacy_median: float
    clcg: float | None
    n: int
    responses: int
    languages: list[str]


class IncompleteKeypoints(TypedDict, total=False):
    """``human_validation.max_adequacy_incomplete_keypoints``: ratings of maximum adequacy whose
    keypoint recall is below 1 (validation/human/_estimands.py ``max_adequacy_incomplete``)."""

    ratings: int
    eligible_ratings: int  # ratings with both adequacy and keypoint recall
    share: float | None  # None without eligible ratings
    items: int
    eligible_items: int


class JudgeConsensus(TypedDict, total=False):
    """``human_validation.judge_consensus``: where every judge gave a response the same label,
    how often the human agreed (validation/human/_joins.py ``judge_consensus``)."""

    judges: int
    ratings: int
    judges_agree: int
    human_confirms: int
    share: float | None  # None when the judges never all agreed


class PreferenceModel(TypedDict, total=False):
    """The mixed model of the paired preference (crossed random intercepts)."""

    probability: float | None
    ci_low: float | None
    ci_high: float | None
    p_one_sided: float | None
    method: str
    status: str
    reason: str | None
    odds_ratio: float | None
    or_ci_low: float | None
    or_ci_high: float | None
    annotator_sd: float | None
    pair_sd: float | None


class PreferenceBootstrap(TypedDict, total=False):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_one_sided: float | None
    annotators: int
    identifiable: bool
    reason: str | None


class Preference(TypedDict, total=False):
    decisive: int
    higher_preferred: int
    proportion: float | None
    exact_ci_low: float | None
    exact_ci_high: float | None
    p_one_sided: float | None
    judgments: int
    non_decisive: int
    mixed: PreferenceModel
    bootstrap: PreferenceBootstrap


class Ceiling(TypedDict, total=False):
    triggered: bool | None
    min_class_adequacy_median: float | None
    high_low_difference: float | None
    high_mean: float | None
    low_mean: float | None
    rule: str
    reason: str | None


class HumanJudgeAgreement(Interval, LanguageGroup, total=False):
    judge: str
    percent: float | None
    kappa: float | None
    clusters: int  # the items (rated responses) the bootstrap resamples


class JudgeErrorCorrelation(Interval, LanguageGroup, total=False):
    """One pair of judges' error correlation against the human consensus (issue 36): pooled
    (``by`` ``all``), per ``language`` or per ``script``; ``rule_based``: an offline stand-in judge."""

    by: str
    family: str  # error_taxonomy | granularity
    judge_a: str
    judge_b: str
    rule_based: bool
    error_definition: str
    correlation: float | None
    mean_error_a: float | None
    mean_error_b: float | None


class EffectiveJudges(Interval, LanguageGroup, total=False):
    """The effective number of independent judges of one family (issue 36), in ``effective_judges``."""

    by: str
    family: str
    judges: list[str]
    k: int
    rule_based: bool
    mean_correlation: float | None
    effective_judges: float | None


@with_config(DOCUMENT_CONFIG)
class HumanValidationResults(TypedDict, total=False):
    """``human_validation`` (the ``human_validation_results`` asset)."""

    status: str
    reason: str | None
    simulated: bool
    methods: dict[str, str]
    qc_funnel: list[QcStep]
    annotators: int
    ratings: int
    items: int
    articles: int
    alpha: list[AlphaRow]
    spearman: list[SpearmanRow]
    class_adequacy: list[ClassAdequacy]
    max_adequacy_incomplete_keypoints: IncompleteKeypoints | None
    preference: Preference | None
    ceiling: Ceiling | None
    judge_agreement: list[HumanJudgeAgreement]
    judge_kappa_by_language: list[HumanJudgeAgreement]
    judge_kappa_by_script: list[HumanJudgeAgreement]
    judge_consensus: JudgeConsensus | None
    judge_error_correlation: list[JudgeErrorCorrelation]
    judge_effective_number: list[EffectiveJudges]
    caveats: list[str]


# ---------------------------------------------------------------------------------------------
# The whole document


@with_config(DOCUMENT_CONFIG)
class StudyResultsDocument(TypedDict, total=False):
    """``study_results.json``: the analysis sections, the three studies and the metadata.

    The analysis sections beyond ``h1`` are nested estimates whose inner keys vary by section
    (per language, per class, per level ...); they are typed as mappings here.
    """

    settings: StudySettings
    h1: H1Results
    languages: list[LanguageEntry]
    languages_without_data: LanguagesWithoutData
    languages_with_data: list[str]
    warnings: list[str]
    definitions: dict[str, Definition | str]
    estimands: dict[str, Estimate]
    # Issue 37: ``estimands`` leaves out the entries of one model or pair; this names the table with all.
    estimands_table: EstimandsTable
    drilldown: dict[str, list[DrilldownItem]] | None
    excluded_versions: list[ExcludedVersion]
    language_net: dict[str, Estimate]
    model_contrasts: ModelContrastsResults
    new_model: NewModel
    joshi_class: JoshiClassResults
    h2: H2Results
    h3: H3Results
    h4: H4Results
    parse_rule: ParseRuleResults
    equivalence: EquivalenceResults
    mixed_effects: MixedEffectsResults
    multiplicity: BhFamily
    repetitions: RepetitionsResults
    context_gain: ContextGainResults
    nomological: NomologicalResults
    context_scope: ContextScopeResults
    replication: ReplicationResults
    metric_sensitivity: MetricSensitivityResults
    error_taxonomy: ErrorTaxonomyResults
    human_validation: HumanValidationResults
    granularity: GranularityResults
    config_hash: str
    generated_at: str
    code_version: CodeVersion | str
    title: str


def document_keys(shape: type) -> frozenset[str]:
    """The JSON keys a document shape (one of the TypedDicts above) declares."""
    return frozenset(shape.__required_keys__ | shape.__optional_keys__)  # type: ignore[attr-defined]
