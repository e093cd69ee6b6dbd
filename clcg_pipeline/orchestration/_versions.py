"""Code versions of the study's assets: package version, config and source files, by content.

Every asset gets a Dagster ``code_version`` from what its result depends on besides its
upstream assets, recorded on each materialization whoever launched the run. Versions are built
from file *contents*, never modification times, so a second checkout of the same code agrees.

Which version an asset takes follows from the graph (``version_kinds``), so that adding a
model reruns only what reads it:

- the corpus assets: ``corpus`` (not the models at all);
- the per-model family (language x model assets, ``model_calls``): ``inputs`` as the asset's
  code version, and per partition its model's version (``model:<id>``), which the IO manager
  writes into the partition's record (the spec's ``MODEL_VERSIONS`` metadata) and
  ``Freshness`` compares: one model's edit makes only its partitions stale;
- assets that read the family, directly or not (the analysis): ``study``, every model;
- the rest (the study inputs: sample, items, fertility, granularity tasks): ``inputs``, all but
  the list of evaluated models. Had they taken ``study``, a new model would rewrite them and,
  being newer than every partition that reads them, make every model's partitions stale.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping

import dagster as dg

from clcg_pipeline.config import ProjectConfig, code_versions, model_version_key
from clcg_pipeline.orchestration._jobs import CORPUS_ASSETS
from clcg_pipeline.partitions import MODEL_DIMENSION, model_of_partition
from clcg_pipeline.storage import MODEL_VERSIONS

CORPUS, INPUTS, FAMILY, STUDY = "corpus", "inputs", "family", "study"


def _per_model(partitions_def: dg.PartitionsDefinition | None) -> bool:
    """Partitioned by model (language x model, or model alone)."""
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return MODEL_DIMENSION in partitions_def.partition_dimension_names
    return (
        isinstance(partitions_def, dg.DynamicPartitionsDefinition) and partitions_def.name == MODEL_DIMENSION
    )


def _specs(defs: dg.Definitions) -> Iterator[dg.AssetSpec]:
    """The asset specs of ``defs`` as written (resolving the whole repository costs far more)."""
    for item in defs.assets or ():
        if isinstance(item, dg.AssetsDefinition):
            yield from item.specs
        elif isinstance(item, dg.AssetSpec):
            yield item


def version_kinds(defs: dg.Definitions) -> dict[str, str]:
    """Each asset's kind of version (module docstring): ``corpus``, ``family``, ``study`` or ``inputs``."""
    specs = list(_specs(defs))
    parents = {s.key.to_user_string(): {d.asset_key.to_user_string() for d in s.deps} for s in specs}
    family = {s.key.to_user_string() for s in specs if _per_model(s.partitions_def)}
    reads_models = set(family)
    grown = True
    while grown:  # everything downstream of the family, to a fixed point (the graph is small)
        more = {name for name, read in parents.items() if name not in reads_models and read & reads_models}
        reads_models |= more
        grown = bool(more)
    kinds: dict[str, str] = {}
    for name in parents:
        if name in CORPUS_ASSETS:
            # The source, the panel and the study settings, not the models: adding a model
            # must not make every corpus partition stale.
            kinds[name] = CORPUS
        elif name in family:
            kinds[name] = FAMILY
        else:
            kinds[name] = STUDY if name in reads_models else INPUTS
    return kinds


def version_for(asset: str, versions: Mapping[str, str], kinds: Mapping[str, str]) -> str:
    """The asset's code version (Dagster's, per asset); ``kinds`` from ``version_kinds``."""
    kind = kinds.get(asset, STUDY)
    return versions[INPUTS] if kind == FAMILY else versions[kind]


def partition_version(
    asset: str, partition: str | None, versions: Mapping[str, str], kinds: Mapping[str, str]
) -> str | None:
    """The version ``asset[partition]``'s record must carry to be current: its model's for the
    family (None for a model not in the config: never current), else the asset's."""
    if kinds.get(asset) != FAMILY or partition is None:
        return version_for(asset, versions, kinds)
    model = model_of_partition(partition) or partition  # model_calls is keyed by the model alone
    return versions.get(model_version_key(model))


def _model_versions(versions: Mapping[str, str]) -> dict[str, str]:
    prefix = model_version_key("")
    return {key[len(prefix) :]: value for key, value in versions.items() if key.startswith(prefix)}


def with_code_versions(defs: dg.Definitions, config: ProjectConfig) -> dg.Definitions:
    """``defs`` with every asset's code version set from ``config`` (see the module docstring)."""
    versions = code_versions(config)
    kinds = version_kinds(defs)
    per_model = dg.MetadataValue.json(_model_versions(versions))

    def stamp(spec: dg.AssetSpec) -> dg.AssetSpec:
        name = spec.key.to_user_string()
        version = version_for(name, versions, kinds)
        if kinds.get(name) != FAMILY:
            return spec.replace_attributes(code_version=version)
        # Dagster versions an asset, not a partition: each model's version rides on the spec,
        # where the IO manager finds it for the partition's record (storage.partition_record_version).
        return spec.replace_attributes(
            code_version=version, metadata={**spec.metadata, MODEL_VERSIONS: per_model}
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)  # preview, but the documented way to map specs
        return defs.map_asset_specs(func=stamp)
