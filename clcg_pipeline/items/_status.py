"""Why an item bank is empty (or has nothing in the primary band), said where the bank is made.

A source that yields no items (a FLORES primary with no ``item_generator``) used to flow through
the graph as zero predictions and an empty H1 table with no explanation. The items asset
reports the cause here, as metadata and as a WARN asset check, so it is visible at its source.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from clcg_pipeline.config import StudyConfig


@dataclass(frozen=True)
class ItemBankStatus:
    """What the items asset says about its bank: ``ok`` is false when the study can score nothing."""

    ok: bool
    status: str  # one line: "ok: ..." or "empty: <why>; <what to configure>"
    n_items: int
    n_in_band: int


def item_bank_status(
    valid: pd.DataFrame,
    *,
    source: str,
    source_kind: str,
    n_source_items: int,
    n_sampled_articles: int,
    n_rejected: int,
    study: StudyConfig,
) -> ItemBankStatus:
    """Describe the validated bank against the study's primary band (``study.band``)."""
    band = study.band
    band_text = f"item_source {band.item_source!r}, levels {list(band.levels)}"
    n_items = len(valid)
    in_band = (
        int((valid["item_source"].eq(band.item_source) & valid["level"].isin(band.levels)).sum())
        if n_items
        else 0
    )
    if n_sampled_articles == 0:
        return ItemBankStatus(
            False,
            f"empty: the sample has no articles (source {source!r} gave no reference-language "
            "articles); nothing can be asked",
            n_items,
            in_band,
        )
    if n_items == 0:
        if study.item_generator is None:
            why = (
                f"source {source!r} ({source_kind}) has no items for the {n_sampled_articles} sampled "
                "article(s) and study.item_generator is null"
            )
            if n_source_items:
                why += f" ({n_source_items} source item(s) belong to articles outside the sample)"
            todo = (
                "set study.item_generator in study.yaml to a model id from models.yaml to generate a "
                "bank, or use a source with a frozen bank (items.jsonl, or Belebele questions)"
            )
        else:
            why = f"all {n_rejected} item(s) from {study.item_generator} failed validation"
            todo = "see item_rejections (by rule) and the generator model's output"
        return ItemBankStatus(False, f"empty: {why}; {todo}. Every prediction and score will be empty", 0, 0)
    if in_band == 0:
        present = sorted({f"{s}/{lvl}" for s, lvl in zip(valid["item_source"], valid["level"], strict=True)})
        return ItemBankStatus(
            False,
            f"no item in the primary band ({band_text}): the {n_items} item(s) are {present}, so the "
            "primary (H1) estimates will be empty; set study.band to match the bank, or set "
            "study.item_generator to generate L0-L5 items",
            n_items,
            0,
        )
    return ItemBankStatus(
        True, f"ok: {n_items} item(s), {in_band} in the primary band ({band_text})", n_items, in_band
    )
