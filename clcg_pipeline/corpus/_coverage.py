"""Which panel languages a source covers, from its file names alone.

Cheap enough for definitions load: the source's files are listed, never parsed. Every source
kind names one file per language (``articles/<iso>.jsonl``, ``<split>/<flores_code>.<split>``,
FLORES+ ``<flores_code>.parquet``, Belebele ``<flores_code>.jsonl``); a file that turns out
empty or mislabelled is still refused by the full load, which reads the records.
"""

from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

from clcg_pipeline.config import ASSEMBLED_SOURCE, LanguagesConfig, ProjectConfig, SourceSpec
from clcg_pipeline.corpus._flores import flores_code_map
from clcg_pipeline.corpus._io import LAYOUTS, filesystem, layout_files
from clcg_pipeline.corpus._sources import DEMO_FOLDER, DEMO_PACKAGE

# The demo is a JSONL source.
_LAYOUT_OF = {"demo": "jsonl"}
# A file stem that names a language: an ISO code (``pt``, ``quy``), a FLORES code
# (``por_Latn``) or a tag with a region or script (``pt-BR``, ``zh-Hans``).
_LANGUAGE_NAME = re.compile(r"[a-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*")


@dataclass(frozen=True)
class SourceCoverage:
    """The panel split by whether the source has a file for the language (panel order)."""

    covered: tuple[str, ...]
    uncovered: tuple[str, ...]


def source_coverage(source: SourceSpec, languages: LanguagesConfig) -> SourceCoverage:
    """Panel languages with a file in ``source``; the whole panel when names cannot tell.

    A source that cannot be listed here (missing folder, unreachable URL) is left to the full
    load to refuse with its own error, so coverage never hides that failure. So is one whose
    files are not all named by language, or whose names miss the reference language: the
    loaders take a version's language from its records, so names are trusted only when they
    plainly are language names.
    """
    labels = _file_labels(source)
    codes = flores_code_map(languages)
    isos = {codes.get(label, label) for label in labels or ()}
    if languages.reference not in isos:
        # Names that do not even give the reference language are not language names (a
        # FLORES+ shard, ``articles/part1.jsonl``): the records say which languages are there,
        # and only the full load reads them.
        return _split(languages, set(languages.isos))
    return _split(languages, isos)


def study_coverage(config: ProjectConfig) -> SourceCoverage:
    """The panel split by whether any source the study reads has a file for the language.

    The corpus source, and the granularity tasks' own long-document corpus when they read one
    (its languages get tasks, hence partitions, even where the corpus has no article). A
    language neither covers has no partition: nothing to load, ask or score there, and an
    empty partition shown as "Materialized" in the UI would claim otherwise (issue 18).
    """
    covered = set(source_coverage(config.sources.primary, config.languages).covered)
    granularity = config.study.granularity
    if granularity.enabled and granularity.source != ASSEMBLED_SOURCE:
        # The long-document corpus has the canonical JSONL layout (articles/<iso>.jsonl).
        long_documents = SourceSpec(name="long_documents", kind="jsonl", path=granularity.source)
        covered |= set(source_coverage(long_documents, config.languages).covered)
    return _split(config.languages, covered)


def _split(languages: LanguagesConfig, covered: set[str]) -> SourceCoverage:
    return SourceCoverage(
        covered=tuple(iso for iso in languages.isos if iso in covered),
        uncovered=tuple(iso for iso in languages.isos if iso not in covered),
    )


def _source_root(source: SourceSpec) -> str | None:
    if source.kind == "demo":
        with importlib.resources.as_file(importlib.resources.files(DEMO_PACKAGE) / DEMO_FOLDER) as path:
            return str(Path(path))
    return source.path


def _file_labels(source: SourceSpec) -> set[str] | None:
    """The language labels (file-name stems) of the source's per-language files, else None."""
    root_path = _source_root(source)
    if root_path is None:
        return None
    try:
        fs, root = filesystem(root_path)
        if fs.isfile(root):
            return None  # a single-file source: its languages are inside, not in names
        kind = _LAYOUT_OF.get(source.kind, source.kind)
        files = layout_files(fs, root, kind) if kind in LAYOUTS else []
    except OSError:
        return None
    stems = {f.rsplit("/", 1)[-1].split(".", 1)[0] for f in files}
    if stems and all(_LANGUAGE_NAME.fullmatch(stem) for stem in stems):
        return stems
    return None  # no file, or some file not named by language: its records decide
