"""Belebele: one JSONL file per language variant; passages become articles, questions MC items.

Every language is asked the English question with the English options (the study's design
keeps question and gold answer fixed and varies only the evidence language); each row's own
question and options are kept in ``item_translations``. Passages align across languages
through ``link`` (plus the passage's rank under that link, should a link carry several).
A passage has no paragraph structure, so it is one paragraph, pid ``p1``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from clcg_pipeline.config import LanguagesConfig
from clcg_pipeline.corpus._build import (
    TRANSLATION_COLUMNS,
    CorpusTables,
    Version,
    build_tables,
    items_frame,
    keep_panel,
)
from clcg_pipeline.corpus._errors import CorpusError, empty_language_file, language_file, where
from clcg_pipeline.corpus._flores import file_language, flores_code_map
from clcg_pipeline.corpus._io import file_size, filesystem, layout_files, read_jsonl

FIELDS = (
    "link",
    "question_number",
    "flores_passage",
    "question",
    "mc_answer1",
    "mc_answer2",
    "mc_answer3",
    "mc_answer4",
    "correct_answer_num",
    "dialect",
)
# Belebele items test reading the passage for one fact; they are scored by accuracy, outside
# the L0-L5 gradient, so they get their own level label.
MC_LEVEL = "MC"
PID = "p1"
# The passage is paragraph text: bad bytes there are kept for the audit to count.
RAW_FIELDS = frozenset({"flores_passage"})
# Fields that must be strings (a number or object here would reach Parquet as a mixed column).
TEXT_FIELDS = ("link", "flores_passage", "question", "mc_answer1", "mc_answer2", "mc_answer3", "mc_answer4")
# (line number, record) per line of a JSONL file.
Rows = list[tuple[int, dict[str, Any]]]


def _rows(fs: Any, file: str, found: list[str]) -> list[tuple[int, dict[str, Any]]]:
    rows = list(read_jsonl(fs, file, found=found, raw=RAW_FIELDS))
    for line, rec in rows:
        missing = [f for f in FIELDS if f not in rec]
        if missing:
            raise CorpusError(f"{where(file, line, missing[0])}: missing (record lacks {missing})")
        for name in (*TEXT_FIELDS, "dialect"):
            if not isinstance(rec[name], str):
                raise CorpusError(
                    f"{where(file, line, name)}: must be a string, got {type(rec[name]).__name__}"
                )
        try:
            answer = int(rec["correct_answer_num"])
        except (TypeError, ValueError):
            answer = 0
        if not 1 <= answer <= 4:
            raise CorpusError(
                f"{where(file, line, 'correct_answer_num')}: must be 1-4, got {rec['correct_answer_num']!r}"
            )
        rec["correct_answer_num"] = answer
        try:
            rec["question_number"] = int(rec["question_number"])
        except (TypeError, ValueError):
            raise CorpusError(f"{where(file, line, 'question_number')}: not an integer") from None
    return rows


def _passage_keys(file: str, rows: list[tuple[int, dict[str, Any]]]) -> list[tuple[str, int]]:
    """(link, rank of the passage under that link) per row, in file order."""
    ranks: dict[str, list[str]] = {}
    keys: list[tuple[str, int]] = []
    for _, rec in rows:
        passages = ranks.setdefault(rec["link"], [])
        if rec["flores_passage"] not in passages:
            passages.append(rec["flores_passage"])
        keys.append((rec["link"], passages.index(rec["flores_passage"]) + 1))
    return keys


def _files(fs: Any, root: str, path: str) -> list[str]:
    """``root`` itself when it is a file, else its ``*.jsonl`` files (or those one folder down)."""
    files = [root] if fs.isfile(root) else layout_files(fs, root, "belebele")
    if not files:
        raise CorpusError(f"{path}: no Belebele *.jsonl files")
    return files


def _language_rows(fs: Any, file: str, codes: dict[str, str]) -> tuple[str, Rows, list[str]]:
    """(the file's language, its rows, its undecodable-field locations); one dialect per file."""
    label = file_language(file, codes)
    found: list[str] = []
    with language_file(label, file):
        rows = _rows(fs, file, found)
        if not rows:
            raise empty_language_file(file, label, file_size(fs, file))
    dialect = rows[0][1]["dialect"]
    iso = codes.get(dialect, dialect)
    with language_file(iso, file):
        for line, rec in rows:
            if rec["dialect"] != dialect:
                raise CorpusError(
                    f"{where(file, line, 'dialect')}: {rec['dialect']!r} in a file of {dialect!r}"
                )
    return iso, rows, found


def _check_languages(path: str, per_file: list[tuple[str, str, Rows]], languages: LanguagesConfig) -> None:
    """The reference language has a file, and no language has several."""
    reference = languages.reference
    isos = [iso for _, iso, _ in per_file]
    if reference not in isos:
        raise CorpusError(
            f"{path}: no file for the reference language {reference!r} "
            f"({languages.get(reference).flores_code}); Belebele items need the English questions",
            language=reference,
        )
    for iso in sorted({i for i in isos if isos.count(i) > 1}):
        raise CorpusError(
            f"language {iso!r}: {path}: several files: {[f for f, i, _ in per_file if i == iso]}",
            language=iso,
        )


def _reference_items(
    ref_file: str, ref_rows: Rows, *, reference: str, source: str
) -> tuple[dict[tuple[str, int], str], dict[str, dict[str, Any]], dict[str, int]]:
    """(doc id per passage key, item per item id, gold option number per item id) of the English file."""
    # Doc ids follow the English file's order; passages only in other languages come after.
    doc_ids: dict[tuple[str, int], str] = {}
    for key in _passage_keys(ref_file, ref_rows):
        doc_ids.setdefault(key, f"belebele-{len(doc_ids) + 1:04d}")
    items: dict[str, dict[str, Any]] = {}
    ref_answer: dict[str, int] = {}
    for (line, rec), key in zip(ref_rows, _passage_keys(ref_file, ref_rows), strict=True):
        item_id = f"{doc_ids[key]}-q{rec['question_number']}"
        if item_id in items:
            raise CorpusError(
                f"language {reference!r}: {where(ref_file, line, 'question_number')}: question repeats "
                f"for {rec['link']}",
                language=reference,
                file=ref_file,
            )
        options = [str(rec[f"mc_answer{i}"]) for i in range(1, 5)]
        ref_answer[item_id] = rec["correct_answer_num"]
        items[item_id] = {
            "item_id": item_id,
            "doc_id": doc_ids[key],
            "item_source": "belebele",
            "level": MC_LEVEL,
            "question": rec["question"],
            "gold_answer": options[rec["correct_answer_num"] - 1],
            "answer_format": "mc",
            "options": options,
            "target_pids": [PID],
            "supporting_pids": [PID],
            "gold_answerable": True,
            "generator": f"source:{source}",
            "prompt_hash": None,
            "level_label_validated": False,
        }
    return doc_ids, items, ref_answer


def load_belebele(path: str, *, source: str, languages: LanguagesConfig) -> CorpusTables:
    """Read every ``*.jsonl`` under ``path`` (a folder, or one file); the reference language is required."""
    fs, root = filesystem(path)
    files = _files(fs, root, path)
    codes = flores_code_map(languages)
    reference = languages.reference
    per_file: list[tuple[str, str, Rows]] = []
    invalid: list[tuple[str, str]] = []
    for file in files:
        iso, rows, found = _language_rows(fs, file, codes)
        invalid.extend((iso, location) for location in found)
        per_file.append((file, iso, rows))
    _check_languages(path, per_file, languages)

    ref_file, _, ref_rows = next(entry for entry in per_file if entry[1] == reference)
    doc_ids, items, ref_answer = _reference_items(ref_file, ref_rows, reference=reference, source=source)

    versions: list[Version] = []
    translations: list[dict[str, Any]] = []
    for file, iso, rows in per_file:
        with language_file(iso, file):
            translations.extend(_versions(file, iso, rows, doc_ids, items, ref_answer, versions))
    kept, dropped = keep_panel(versions, languages)
    panel = set(languages.isos)
    frame = pd.DataFrame(translations, columns=TRANSLATION_COLUMNS)
    frame = frame[frame["language"].isin(panel)].sort_values(["item_id", "language"], kind="stable")
    return build_tables(
        kept,
        source=source,
        reference=reference,
        items=items_frame([items[k] for k in sorted(items)]),
        item_translations=frame,
        dropped_languages=dropped,
        invalid_utf8=invalid,
    )


def _versions(
    file: str,
    iso: str,
    rows: list[tuple[int, dict[str, Any]]],
    doc_ids: dict[tuple[str, int], str],
    items: dict[str, dict[str, Any]],
    ref_answer: dict[str, int],
    versions: list[Version],
) -> list[dict[str, Any]]:
    """Append one file's passages to ``versions``; return its questions in its own language."""
    translations: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for (line, rec), key in zip(rows, _passage_keys(file, rows), strict=True):
        doc_id = doc_ids.setdefault(key, f"belebele-{len(doc_ids) + 1:04d}")
        if key not in seen:
            seen.add(key)
            versions.append(
                Version(
                    doc_id=doc_id,
                    language=iso,
                    paragraphs=[(PID, rec["flores_passage"])],
                    extra={"url": rec["link"]},
                    origin=where(file, line),
                )
            )
        item_id = f"{doc_id}-q{rec['question_number']}"
        if item_id in items:
            if rec["correct_answer_num"] != ref_answer[item_id]:
                raise CorpusError(
                    f"{where(file, line, 'correct_answer_num')}: {rec['correct_answer_num']} differs "
                    f"from the English file's answer for {item_id}"
                )
            translations.append(
                {
                    "item_id": item_id,
                    "doc_id": doc_id,
                    "language": iso,
                    "question_original": rec["question"],
                    "options_original": [str(rec[f"mc_answer{i}"]) for i in range(1, 5)],
                }
            )
    return translations
