"""Corpus sources (demo, canonical JSONL, FLORES-200/FLORES+, Belebele), audit, sampling, fertility."""

from clcg_pipeline.corpus._audit import AUDIT_COLUMNS, audit_corpus, incomplete_versions
from clcg_pipeline.corpus._belebele import MC_LEVEL, load_belebele
from clcg_pipeline.corpus._build import TRANSLATION_COLUMNS, CorpusTables
from clcg_pipeline.corpus._coverage import SourceCoverage, source_coverage, study_coverage
from clcg_pipeline.corpus._errors import CorpusError, CorpusWarning, empty_language_file, where
from clcg_pipeline.corpus._fertility import FERTILITY_COLUMNS, tokenizer_fertility
from clcg_pipeline.corpus._flores import flores_code_map, load_flores
from clcg_pipeline.corpus._io import filesystem, glob, join, layout_files, read_jsonl
from clcg_pipeline.corpus._jsonl import HUMAN_LEVEL, load_jsonl
from clcg_pipeline.corpus._records import (
    ArticleRecord,
    ItemRecord,
    ParagraphRecord,
    QuestionRecord,
    canonical_json_schema,
)
from clcg_pipeline.corpus._sampling import SAMPLE_COLUMNS, sample_articles
from clcg_pipeline.corpus._sources import load_source, load_source_cached, source_signature
from clcg_pipeline.corpus._tokens import count_tokens, get_encoding, offline_encodings

__all__ = [
    "AUDIT_COLUMNS",
    "FERTILITY_COLUMNS",
    "HUMAN_LEVEL",
    "MC_LEVEL",
    "SAMPLE_COLUMNS",
    "TRANSLATION_COLUMNS",
    "ArticleRecord",
    "CorpusError",
    "CorpusTables",
    "CorpusWarning",
    "ItemRecord",
    "ParagraphRecord",
    "QuestionRecord",
    "SourceCoverage",
    "audit_corpus",
    "canonical_json_schema",
    "count_tokens",
    "empty_language_file",
    "filesystem",
    "flores_code_map",
    "get_encoding",
    "glob",
    "incomplete_versions",
    "join",
    "layout_files",
    "load_belebele",
    "load_flores",
    "load_jsonl",
    "load_source",
    "load_source_cached",
    "offline_encodings",
    "read_jsonl",
    "sample_articles",
    "source_coverage",
    "source_signature",
    "study_coverage",
    "tokenizer_fertility",
    "where",
]
