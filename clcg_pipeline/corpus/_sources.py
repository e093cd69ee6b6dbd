"""``load_source``: one entry point for every source kind of ``sources.yaml``."""

from __future__ import annotations

import importlib.resources

from clcg_pipeline.config import LanguagesConfig, SourceSpec
from clcg_pipeline.corpus._build import CorpusTables
from clcg_pipeline.corpus._errors import CorpusError
from clcg_pipeline.corpus._jsonl import load_jsonl

DEMO_PACKAGE = "clcg_pipeline.corpus"
DEMO_FOLDER = "demo_data"


def load_source(source: SourceSpec, languages: LanguagesConfig) -> CorpusTables:
    """Read a source into the canonical tables; languages outside the panel are dropped with a warning.

    Nothing is written: a source that fails to parse raises before any table exists, so a
    failed load never overwrites what an earlier run stored.
    """
    if source.kind == "demo":
        folder = importlib.resources.files(DEMO_PACKAGE) / DEMO_FOLDER
        with importlib.resources.as_file(folder) as path:
            return load_jsonl(str(path), source=source.name, languages=languages)
    if source.path is None:  # SourceSpec already enforces this; kept for the type checker
        raise CorpusError(f"source {source.name!r}: kind {source.kind!r} needs a path")
    if source.kind == "jsonl":
        return load_jsonl(source.path, source=source.name, languages=languages)
    if source.kind == "flores":
        from clcg_pipeline.corpus._flores import load_flores

        return load_flores(source.path, source=source.name, languages=languages, split=source.split)
    if source.kind == "belebele":
        from clcg_pipeline.corpus._belebele import load_belebele

        return load_belebele(source.path, source=source.name, languages=languages)
    raise CorpusError(f"source {source.name!r}: unknown kind {source.kind!r}")
