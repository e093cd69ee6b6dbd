"""The shapes of the ``granularity`` section of ``study_results.json`` (the granularity stage).

Kept apart from ``_documents`` (the rest of the document) so each file stays one screenful of
shapes; the same rules hold: every class is ``total=False``, field names are the JSON keys.
"""

from __future__ import annotations

from pydantic import with_config
from typing_extensions import TypedDict

from clcg_pipeline.storage._shared_shapes import DOCUMENT_CONFIG, Interval

# ---------------------------------------------------------------------------------------------
# The granularity task family (granularity stage)


class DocumentBucket(TypedDict, total=False):
    bucket: str
    n_documents: int
    languages: list[str]


class NoReferenceRows(TypedDict, total=False):
    """Rows without a reference summary in their language: out of the means, counted here."""

    task: str
    language: str
    model: str
    context: str
    n_no_reference: int
    n_documents: int


class AlignedParagraph(TypedDict, total=False):
    """A paragraph missing in some language versions of a document, and what was done with it."""

    doc_id: str
    bucket: str
    pid: str
    missing_in: list[str]
    decision: str


class GranularityScore(Interval, total=False):
    task: str
    granularity: str
    metric: str
    region: str
    position: str
    language: str
    model: str
    n_no_reference: int


class GranularityGap(Interval, total=False):
    granularity: str
    metric: str
    tasks: list[str]
    region: str
    position: str
    language: str
    joshi_class: int | str | None
    model: str
    gap: float | None


class CurvePoint(Interval, total=False):
    language_group: str
    granularity: str
    metric: str
    region: str
    position: str
    score: float | None
    gap: float | None


class MiddleVsEdges(TypedDict, total=False):
    granularity: str
    metric: str
    axis: str
    pooled_over: str
    language_group: str
    score_contrast: Interval | None
    gap_contrast: Interval | None


class HeatmapCell(Interval, total=False):
    language_group: str
    granularity: str
    metric: str
    region: str
    gap: float | None


class NoContextDrop(Interval, total=False):
    task: str
    metric: str
    language: str
    model: str
    with_context: float | None
    without_context: float | None
    drop: float | None


class ClozeErrorShare(TypedDict, total=False):
    judge: str
    kind: str  # main | tag
    label: str
    n: int
    share: float


class ParagraphJudgeAgreement(TypedDict, total=False):
    alpha_ordinal: float | None
    alpha_ordinal_by_dimension: dict[str, float | None]
    icc: float | None
    icc_reason: str | None
    n: int
    judges: list[str]
    spread_mean: float | None
    spread_rule: str


class HumanJudgeCorrelation(TypedDict, total=False):
    pearson_r: float | None
    pearson_p: float | None
    spearman_rho: float | None
    spearman_p: float | None
    n: int
    n_ratings: int
    unit: str
    simulated: bool


class PromptTokens(TypedDict, total=False):
    task: str
    calls: int
    prompt_tokens_total: int
    prompt_tokens_mean: float
    prompt_tokens_max: int
    output_tokens_total: int
    cost_usd: float | None


class UnpairedRows(TypedDict, total=False):
    task: str
    language: str
    rows: int


class LengthGap(Interval, total=False):
    """A paired gap (all models) in one length bucket."""

    bucket: str
    granularity: str
    metric: str
    language: str
    gap: float | None


class LengthMiddleVsEdges(TypedDict, total=False):
    bucket: str
    granularity: str
    metric: str
    axis: str
    pooled_over: str
    score_contrast: Interval | None
    gap_contrast: Interval | None


class BucketDocuments(TypedDict, total=False):
    bucket: str
    n_documents: int
    identifiable: bool
    min_documents: int


class ByLength(TypedDict, total=False):
    """Gaps and middle contrasts per length bucket; ``note`` names the too-small buckets once."""

    gaps: list[LengthGap]
    middle_vs_edges: list[LengthMiddleVsEdges]
    buckets: list[BucketDocuments]
    note: str | None


class ModelRank(TypedDict, total=False):
    """A model's score (all languages) in one granularity and metric, and its rank (1 = best)."""

    granularity: str
    metric: str
    model: str
    score: float | None
    rank: int | None
    rank_low: int | None
    rank_high: int | None
    n_models: int
    n_documents: int
    identifiable: bool
    reason: str | None


class GapTrend(Interval, total=False):
    """Slope of the targets' gap over the granularity order (word 0 ... document 3)."""

    model: str
    granularities: list[str]


class SentencePositionScore(Interval, total=False):
    task: str
    granularity: str
    metric: str
    sentence_position: str
    language: str
    model: str
    score: float | None


class SentenceMiddleVsEdges(TypedDict, total=False):
    task: str
    granularity: str
    metric: str
    axis: str
    pooled_over: str
    score_contrast: Interval | None
    gap_contrast: Interval | None


class BySentencePosition(TypedDict, total=False):
    curve: list[SentencePositionScore]
    middle_vs_edges: list[SentenceMiddleVsEdges]
    note: str | None


class RoleScore(Interval, total=False):
    task: str
    granularity: str
    metric: str
    role: str
    language: str
    model: str
    score: float | None


class ByRole(TypedDict, total=False):
    scores: list[RoleScore]
    note: str | None


class GranularitySettings(TypedDict, total=False):
    """``granularity.settings``: how its estimates were computed (granularity/_analysis/_results.py)."""

    replicates: int
    seed: int
    confidence: float
    min_documents: int
    documents: int  # the documents the bootstrap resamples
    reference: str  # the reference language
    language_groups: dict[str, list[int]]  # high / mid / low -> their Joshi classes
    rows: int
    rows_no_reference: int
    paragraphs_left_out: int


@with_config(DOCUMENT_CONFIG)
class GranularityResults(TypedDict, total=False):
    """``granularity`` (the ``granularity_results`` asset)."""

    status: str
    reason: str | None
    documents: list[DocumentBucket]
    scores: list[GranularityScore]
    gaps: list[GranularityGap]
    position_curve: list[CurvePoint]
    middle_vs_edges: list[MiddleVsEdges]
    heatmap: list[HeatmapCell]
    no_context: list[NoContextDrop]
    cloze_errors: list[ClozeErrorShare]
    judge_agreement: ParagraphJudgeAgreement | None
    human_judge_correlation: HumanJudgeCorrelation | None
    human_judge_correlation_reason: str | None
    prompt_tokens_by_task: list[PromptTokens]
    unpaired: list[UnpairedRows]
    no_reference: list[NoReferenceRows]
    alignment: list[AlignedParagraph]
    length: ByLength
    model_ranks: list[ModelRank]
    gap_trends: list[GapTrend]
    sentence_position: BySentencePosition
    roles: ByRole
    settings: GranularitySettings
    caveats: list[str]
