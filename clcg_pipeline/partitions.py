"""Every partitions definition of the project, defined once (DESIGN.md, "Partitions").

Corpus assets are partitioned by language; responses and scores by language x model. The
model dimension is dynamic so that adding a model to ``models.yaml`` adds its partitions
(``model_partitions_sensor``) without redeploying the code location.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

MODEL_DIMENSION = "model"
LANGUAGE_DIMENSION = "language"

model_partitions = dg.DynamicPartitionsDefinition(name=MODEL_DIMENSION)


def language_partitions(isos: Sequence[str]) -> dg.StaticPartitionsDefinition:
    """One partition per language of ``isos``: the panel languages a source covers
    (``corpus.study_coverage``), so a language with nothing to load has no partition."""
    return dg.StaticPartitionsDefinition(list(isos))


def response_partitions(isos: Sequence[str]) -> dg.MultiPartitionsDefinition:
    return dg.MultiPartitionsDefinition(
        {LANGUAGE_DIMENSION: language_partitions(isos), MODEL_DIMENSION: model_partitions}
    )


def response_key(language: str, model: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({LANGUAGE_DIMENSION: language, MODEL_DIMENSION: model})


def model_of_partition(partition_key: str | None) -> str | None:
    """The model of a language x model key given as text (``"en|gpt-4o"``), else None.

    Keys arrive as text from run tags, ``dagster job launch`` and backfills; a multi-partition
    key's dimensions are joined in sorted dimension-name order (language, then model).
    """
    if not partition_key:
        return None
    parts = partition_key.split("|")  # Dagster's multi-partition delimiter
    if len(parts) != 2:
        return None
    return dict(zip(sorted((LANGUAGE_DIMENSION, MODEL_DIMENSION)), parts, strict=True))[MODEL_DIMENSION]
