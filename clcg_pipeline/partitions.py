"""Every partitions definition of the project, defined once (DESIGN.md, "Partitions").

Corpus assets are partitioned by language; responses and scores by language x model. The
model dimension is dynamic so that adding a model to ``models.yaml`` adds its partitions
(``model_partitions_sensor``) without redeploying the code location.
"""

from __future__ import annotations

import dagster as dg

from clcg_pipeline.config import LanguagesConfig

MODEL_DIMENSION = "model"
LANGUAGE_DIMENSION = "language"

model_partitions = dg.DynamicPartitionsDefinition(name=MODEL_DIMENSION)


def language_partitions(languages: LanguagesConfig) -> dg.StaticPartitionsDefinition:
    return dg.StaticPartitionsDefinition(languages.isos)


def response_partitions(languages: LanguagesConfig) -> dg.MultiPartitionsDefinition:
    return dg.MultiPartitionsDefinition(
        {LANGUAGE_DIMENSION: language_partitions(languages), MODEL_DIMENSION: model_partitions}
    )


def response_key(language: str, model: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({LANGUAGE_DIMENSION: language, MODEL_DIMENSION: model})
