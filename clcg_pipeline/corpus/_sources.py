"""``load_source``: one entry point for every source kind of ``sources.yaml``."""

from __future__ import annotations

import hashlib
import importlib.resources
from pathlib import Path

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


def source_signature(source: SourceSpec) -> str | None:
    """Size and mtime of every file of a local source (None for remote ones).

    Cheap to compute, and changes whenever a file of the source is edited, added or removed:
    used to reuse a parsed source within one process and to tell when results are stale.
    """
    if source.kind == "demo":
        with importlib.resources.as_file(importlib.resources.files(DEMO_PACKAGE) / DEMO_FOLDER) as path:
            root = Path(path)
    elif source.path is None or "://" in source.path:
        return None
    else:
        root = Path(source.path)
    if not root.exists():
        return None
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    digest = hashlib.sha256(source.model_dump_json().encode())
    for file in files:
        stat = file.stat()
        digest.update(f"{file.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


_PARSED: dict[tuple[str, str], CorpusTables] = {}


def load_source_cached(source: SourceSpec, languages: LanguagesConfig) -> CorpusTables:
    """``load_source``, reused while the source's files are unchanged (one entry per source).

    A study run loads the same source once per language partition in one process; parsing
    and token-counting a study-size corpus takes seconds each time.
    """
    signature = source_signature(source)
    if signature is None:
        return load_source(source, languages)
    key = (signature, languages.model_dump_json())
    if key not in _PARSED:
        for stale in [k for k in _PARSED if k[0] != signature]:
            del _PARSED[stale]
        _PARSED[key] = load_source(source, languages)
    return _PARSED[key]
