"""Typed views of ``study_results.json`` for its readers: pydantic models with attribute access.

The shapes of the document are the ``TypedDict`` classes of ``_documents`` (what the producers
build and what :func:`validate_document` checks, unknown keys and wrong types refused). A reader
that wants typed fields instead of ``.get()`` chains validates the document into the models here:
``StudyResults.model_validate(document)``. Each model declares the fields of its ``TypedDict``
that a reader uses, under the same name and type (``None`` when absent); keys it does not name
are left to the full shape (``extra="ignore"``), so a view never refuses what the shape allows.
``clcg_pipeline_tests/storage/test_document_validation.py`` holds every field to its shape.

The report (issue 34) reads the document once through ``study_results_view`` and hands each
section its view: ``StudyResults.human_validation`` is a ``HumanValidationView``, and so on. A
view whose docstring says it names every key of its shape can tell an empty entry (``{}``) from
a filled one by ``model_fields_set``; the others ignore the keys they do not name.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from clcg_pipeline.storage._analysis_sections import (
    Band,
    CodeVersion,
    ContextGainResults,
    EstimateRecord,
    H2Results,
    H3Results,
    LanguagesWithoutData,
    ModelEntry,
    RepetitionsResults,
    StudySettings,
)
from clcg_pipeline.storage._documents import NewModelDifference
from clcg_pipeline.storage._granularity_documents import GranularitySettings
from clcg_pipeline.storage._inference_sections import (
    EquivalenceResults,
    H4Results,
    MixedEffectsResults,
    ParseRuleResults,
)
from clcg_pipeline.storage._validity_sections import (
    JoshiClassResults,
    MetricSensitivityEntry,
    MetricSensitivityResults,
    NomologicalResults,
    ReplicationResults,
)


class _View(BaseModel):
    # Strict like the shapes (no "0.1" for a number); frozen: a reader never edits the document.
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class EstimateModel(EstimateRecord):
    """An ``Estimate`` as the report reads it: the fields of ``EstimateRecord`` (their one owner),
    read like every view, so a record with more (a new model's difference names its ``other``)
    reads as its estimate."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


# The settings section is its own pydantic model (``_analysis_sections``, closed like ``h2``):
# the shape validated on write and read is the view the report reads, under the old names too.
ModelSetting = ModelEntry
BandView = Band
SettingsModel = StudySettings


class H1Model(_View):
    """``h1``: the five summary estimands, per language and per model."""

    h1_micro: EstimateModel | None = None
    macro: EstimateModel | None = None
    pt_gap: EstimateModel | None = None
    macro_net: EstimateModel | None = None
    micro_net: EstimateModel | None = None
    by_language: dict[str, EstimateModel] | None = None
    by_model: dict[str, dict[str, EstimateModel]] | None = None
    n: dict[str, int] | None = None
    settings: SettingsModel | None = None

    def summary(self) -> dict[str, EstimateModel]:
        """The summary estimands present, by key (``h1_micro`` ... ``micro_net``)."""
        found = {
            "h1_micro": self.h1_micro,
            "macro": self.macro,
            "pt_gap": self.pt_gap,
            "macro_net": self.macro_net,
            "micro_net": self.micro_net,
        }
        return {key: block for key, block in found.items() if block is not None}


class TieGroupsModel(_View):
    """``model_contrasts.tie_groups``: runs of models whose ranks cannot be separated.

    Names every key of its shape: ``model_fields_set`` is the keys the document has.
    """

    gap: str | None = None
    level: float | None = None
    rule: str | None = None
    reason: str | None = None
    groups: list[list[str]] | None = None
    by_model: dict[str, int] | None = None


class PairsTableView(_View):
    """``model_contrasts.pairs_table``: the table of every model pair beside the document.

    Names every key of its shape: ``model_fields_set`` is the keys the document has.
    """

    table: str | None = None
    path: str | None = None
    rows: int | None = None
    pairs: int | None = None
    shown: int | None = None
    significant: int | None = None
    query: str | None = None
    rule: str | None = None


class ModelContrastsModel(_View):
    """``model_contrasts``: the ranks, tie groups and English scores (the pairs stay records)."""

    status: str | None = None
    contrast: str | None = None
    ranking: str | None = None
    ranks: dict[str, dict[str, EstimateModel]] | None = None
    english_score: dict[str, EstimateModel] | None = None
    tie_groups: TieGroupsModel | None = None
    pairs_table: PairsTableView | None = None


class NewModelView(_View):
    """``new_model``: the model added after all the others had answered."""

    model: str | None = None
    estimand: str | None = None
    clcg: EstimateModel | None = None
    rank: EstimateModel | None = None
    n_models: int | None = None
    differences: list[NewModelDifference] | None = None  # rows of estimate fields and ``other``
    note: str | None = None


class StudyView(_View):
    """What every study section (``error_taxonomy``, ``human_validation``, ``granularity``) opens with."""

    status: str | None = None
    reason: str | None = None
    caveats: list[str] | None = None


class LabelFrequencyView(_View):
    """One row of ``error_taxonomy.label_frequencies``: a label's share on one side, per judge."""

    judge: str | None = None
    side: str | None = None
    label: str | None = None
    share: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class CrosslingualLossView(_View):
    """One row of ``error_taxonomy.crosslingual_loss``: the loss share of one judge and group."""

    judge: str | None = None
    group: str | None = None
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class TransitionView(_View):
    """One cell of ``error_taxonomy.transitions``: pairs whose label went from one to another."""

    judge: str | None = None
    en_label: str | None = None
    target_label: str | None = None
    n: int | None = None
    share: float | None = None


class ErrorTaxonomyView(StudyView):
    """``error_taxonomy``: the scalar facts its section heads with (its tables stay records)."""

    taxonomy: str | None = None
    pairs: int | None = None
    articles: int | None = None
    candidate_loss_share_realised: float | None = None
    candidate_loss_share_target: float | None = None
    decomposition: str | None = None
    label_frequencies: list[LabelFrequencyView] | None = None
    transitions: list[TransitionView] | None = None
    crosslingual_loss: list[CrosslingualLossView] | None = None


class QcStepView(_View):
    """One row of ``human_validation.qc_funnel``."""

    step: str | None = None
    remaining_annotators: int | None = None
    remaining_ratings: int | None = None
    annotators_with_ratings: int | None = None


class AlphaRowView(_View):
    """One row of ``human_validation.alpha``."""

    dimension: str | None = None
    level: str | None = None
    alpha: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class MixedPreferenceView(_View):
    """``human_validation.preference.mixed``: the mixed model of the paired preference.

    This view and the three below name every key of their shape, so ``model_fields_set`` is the
    keys the document has (an empty entry, ``{}``, is no result).
    """

    probability: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_one_sided: float | None = None
    method: str | None = None
    status: str | None = None
    reason: str | None = None
    odds_ratio: float | None = None
    or_ci_low: float | None = None
    or_ci_high: float | None = None
    annotator_sd: float | None = None
    pair_sd: float | None = None


class PreferenceBootstrapView(_View):
    """``human_validation.preference.bootstrap``: the annotator-cluster bootstrap."""

    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_one_sided: float | None = None
    annotators: int | None = None
    identifiable: bool | None = None
    reason: str | None = None


class PreferenceView(_View):
    """``human_validation.preference``: the paired preference, raw, mixed model and bootstrap."""

    decisive: int | None = None
    higher_preferred: int | None = None
    proportion: float | None = None
    exact_ci_low: float | None = None
    exact_ci_high: float | None = None
    p_one_sided: float | None = None
    judgments: int | None = None
    non_decisive: int | None = None
    mixed: MixedPreferenceView | None = None
    bootstrap: PreferenceBootstrapView | None = None


class CeilingView(_View):
    """``human_validation.ceiling``: the ceiling rule's verdict and its numbers."""

    triggered: bool | None = None
    min_class_adequacy_median: float | None = None
    high_low_difference: float | None = None
    high_mean: float | None = None
    low_mean: float | None = None
    rule: str | None = None
    reason: str | None = None


class HumanValidationView(StudyView):
    """``human_validation``: the facts, funnel, alpha, preference and ceiling its section reads."""

    simulated: bool | None = None
    annotators: int | None = None
    ratings: int | None = None
    items: int | None = None
    qc_funnel: list[QcStepView] | None = None
    alpha: list[AlphaRowView] | None = None
    preference: PreferenceView | None = None
    ceiling: CeilingView | None = None

    @property
    def is_simulated(self) -> bool:
        return self.simulated is True


class CurvePointView(_View):
    """One point of ``granularity.position_curve``: a group's score and gap at one place."""

    language_group: str | None = None
    granularity: str | None = None
    metric: str | None = None
    region: str | None = None
    position: str | None = None
    score: float | None = None
    gap: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class HeatmapCellView(_View):
    """One cell of ``granularity.heatmap``: a group's gap in one region at one granularity."""

    language_group: str | None = None
    granularity: str | None = None
    metric: str | None = None
    region: str | None = None
    gap: float | None = None
    n: int | None = None


class ParagraphJudgeAgreementView(_View):
    """``granularity.judge_agreement``: how far the paragraph-filling judges agree.

    Names every key of its shape: ``model_fields_set`` is the keys the document has.
    """

    alpha_ordinal: float | None = None
    alpha_ordinal_by_dimension: dict[str, float | None] | None = None
    icc: float | None = None
    icc_reason: str | None = None
    n: int | None = None
    judges: list[str] | None = None
    spread_mean: float | None = None
    spread_rule: str | None = None


class HumanJudgeCorrelationView(_View):
    """``granularity.human_judge_correlation``: human ratings against the judges' totals.

    Names every key of its shape: ``model_fields_set`` is the keys the document has.
    """

    pearson_r: float | None = None
    pearson_p: float | None = None
    spearman_rho: float | None = None
    spearman_p: float | None = None
    n: int | None = None
    n_ratings: int | None = None
    unit: str | None = None
    simulated: bool | None = None


class GranularityView(StudyView):
    """``granularity``: the parts its section reads outside its record tables."""

    heatmap: list[HeatmapCellView] | None = None
    position_curve: list[CurvePointView] | None = None
    settings: GranularitySettings | None = None
    judge_agreement: ParagraphJudgeAgreementView | None = None
    human_judge_correlation: HumanJudgeCorrelationView | None = None
    human_judge_correlation_reason: str | None = None


class DrilldownItemView(_View):
    """One item of a language's drill-down panel (``drilldown``): the question and both answers."""

    question: str | None = None
    gold: str | None = None
    options: list[str] | None = None
    en_answer: str | None = None
    target_answer: str | None = None
    en_score: float | None = None
    target_score: float | None = None
    difference: float | None = None
    model: str | None = None
    doc_id: str | None = None
    item_id: str | None = None
    level: str | None = None
    context_scope: str | None = None
    reps: int | list[int] | None = None


# ``metric_sensitivity`` is its own pydantic model (``_validity_sections``, closed like ``h2``):
# the shape validated on write and read is the view the report reads, under the old names too.
MetricSensitivityEntryView = MetricSensitivityEntry
MetricSensitivityView = MetricSensitivityResults


class DefinitionView(_View):
    """One entry of ``definitions``: what an estimand means, its direction, sidedness and metric."""

    definition: str | None = None
    direction: str | None = None
    sided: str | None = None
    metric: str | None = None
    n: str | None = None


#: ``definitions`` as the report reads them: an entry, or a definition in plain words.
Definitions = dict[str, DefinitionView | str]


class StudyResults(_View):
    """``study_results.json`` as the report reads it (report/_decision.py and the sections)."""

    h1: H1Model | None = None
    language_net: dict[str, EstimateModel] | None = None
    model_contrasts: ModelContrastsModel | None = None
    settings: SettingsModel | None = None
    languages_with_data: list[str] | None = None
    languages_without_data: LanguagesWithoutData | None = None
    new_model: NewModelView | None = None
    error_taxonomy: ErrorTaxonomyView | None = None
    human_validation: HumanValidationView | None = None
    granularity: GranularityView | None = None
    drilldown: dict[str, list[DrilldownItemView]] | None = None
    definitions: dict[str, DefinitionView | str] | None = None
    # Sections whose shape is their pydantic model (closed: the view and the shape are one; so is
    # ``settings`` above).
    h2: H2Results | None = None
    h3: H3Results | None = None
    context_gain: ContextGainResults | None = None
    repetitions: RepetitionsResults | None = None
    nomological: NomologicalResults | None = None
    replication: ReplicationResults | None = None
    joshi_class: JoshiClassResults | None = None
    metric_sensitivity: MetricSensitivityResults | None = None
    h4: H4Results | None = None
    parse_rule: ParseRuleResults | None = None
    equivalence: EquivalenceResults | None = None
    mixed_effects: MixedEffectsResults | None = None
    # The flat index of every estimand, keyed ``"<estimand>/<group>"`` as the suite writes it
    # (analysis/_index.py ``estimand_index``), each entry an ``Estimate``.
    estimands: dict[str, EstimateModel] | None = None
    # Older documents put these beside ``settings`` instead of in it.
    config_hash: str | None = None
    generated_at: str | None = None
    code_version: CodeVersion | str | None = None

    def merged_settings(self) -> SettingsModel:
        """``h1.settings`` with ``settings`` over it, key by key (the top-level settings win); the
        document's own ``config_hash``, ``generated_at`` and a text ``code_version`` where neither
        has them (older documents)."""
        merged: dict[str, Any] = {}
        for source in (self.h1.settings if self.h1 else None, self.settings):
            if source is not None:
                merged.update({key: getattr(source, key) for key in source.model_fields_set})
        for key in ("config_hash", "generated_at", "code_version"):
            if isinstance(value := getattr(self, key), str):
                merged.setdefault(key, value)
        # Every value was validated above: built without validating again.
        return SettingsModel.model_construct(_fields_set=set(merged), **merged)

    def models(self) -> list[ModelSetting]:
        """``settings.models``, else ``h1.settings.models`` (the top-level settings win)."""
        for settings in (self.settings, self.h1.settings if self.h1 else None):
            if settings is not None and settings.models is not None:
                return settings.models
        return []
