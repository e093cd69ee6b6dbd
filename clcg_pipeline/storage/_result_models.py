"""Typed views of ``study_results.json`` for its readers: pydantic models with attribute access.

The shapes of the document are the ``TypedDict`` classes of ``_documents`` (what the producers
build and what :func:`validate_document` checks, unknown keys and wrong types refused). A reader
that wants typed fields instead of ``.get()`` chains validates the document into the models here:
``StudyResults.model_validate(document)``. Each model declares the fields of its ``TypedDict``
that a reader uses, under the same name and type (``None`` when absent); keys it does not name
are left to the full shape (``extra="ignore"``), so a view never refuses what the shape allows.
``clcg_pipeline_tests/storage/test_document_validation.py`` holds every field to its shape.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _View(BaseModel):
    # Strict like the shapes (no "0.1" for a number); frozen: a reader never edits the document.
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class EstimateModel(_View):
    """An ``Estimate``: a value, its interval and why it may not be trusted."""

    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    identifiable: bool | None = None  # None: not said (neither withheld nor vouched for)
    reason: str | None = None
    status: str | None = None

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None


class ModelSetting(_View):
    """One entry of ``settings.models``: the model and, for the demo's offline reader, its note."""

    id: str | None = None
    simulated: str | None = None  # what is simulated about its answers (analysis/_settings.py)


class SettingsModel(_View):
    """``settings`` (and ``h1.settings``): the parts a reader uses."""

    models: list[ModelSetting] | None = None


class H1Model(_View):
    """``h1``: the five summary estimands, per language and per model."""

    h1_micro: EstimateModel | None = None
    macro: EstimateModel | None = None
    pt_gap: EstimateModel | None = None
    macro_net: EstimateModel | None = None
    micro_net: EstimateModel | None = None
    by_language: dict[str, EstimateModel] | None = None
    by_model: dict[str, dict[str, EstimateModel]] | None = None
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
    """``model_contrasts.tie_groups``: runs of models whose ranks cannot be separated."""

    gap: str | None = None
    level: float | None = None
    rule: str | None = None
    reason: str | None = None
    groups: list[list[str]] | None = None
    by_model: dict[str, int] | None = None


class ModelContrastsModel(_View):
    """``model_contrasts``: the parts the first screen reads (ranks, tie groups)."""

    ranks: dict[str, dict[str, EstimateModel]] | None = None
    tie_groups: TieGroupsModel | None = None


class StudyResults(_View):
    """``study_results.json`` as its first screen reads it (report/_decision.py)."""

    h1: H1Model | None = None
    model_contrasts: ModelContrastsModel | None = None
    settings: SettingsModel | None = None

    def models(self) -> list[ModelSetting]:
        """``settings.models``, else ``h1.settings.models`` (the top-level settings win)."""
        for settings in (self.settings, self.h1.settings if self.h1 else None):
            if settings is not None and settings.models is not None:
                return settings.models
        return []
