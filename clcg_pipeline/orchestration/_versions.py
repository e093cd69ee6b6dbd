"""Code versions of the study's assets: package version, config and source files, by content.

Every asset gets a Dagster ``code_version`` derived from what its result depends on besides
its upstream assets. Dagster records it on each materialization (the ``dagster/code_version``
tag), whoever launched the run (``clcg run``, the UI, a backfill or the daemon), so the
up-to-date test of ``clcg run`` compares against that record instead of a tag only its own
runs carry. Versions are built from file *contents*, never modification times, so a wheel
install or a second checkout of the same code and data agrees with the first.
"""

from __future__ import annotations

import warnings

import dagster as dg

from clcg_pipeline.config import ProjectConfig, code_versions

# Corpus assets depend on the source, the panel and the study settings, not on the models:
# adding a model must not make every corpus partition stale.
CORPUS_ASSETS = frozenset({"articles", "paragraphs", "corpus_audit", "item_translations"})

__all__ = ["CORPUS_ASSETS", "code_versions", "version_for", "with_code_versions"]


def version_for(asset: str, versions: dict[str, str]) -> str:
    return versions["corpus"] if asset in CORPUS_ASSETS else versions["study"]


def with_code_versions(defs: dg.Definitions, config: ProjectConfig) -> dg.Definitions:
    """``defs`` with every asset's code version set from ``config`` (see the module docstring)."""
    versions = code_versions(config)

    def stamp(spec: dg.AssetSpec) -> dg.AssetSpec:
        return spec.replace_attributes(code_version=version_for(spec.key.to_user_string(), versions))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)  # preview, but the documented way to map specs
        return defs.map_asset_specs(func=stamp)
