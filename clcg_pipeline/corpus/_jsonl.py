"""Reader of the canonical JSONL folder (and of the bundled demo, which is one)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from clcg_pipeline.config import LanguagesConfig
from clcg_pipeline.corpus._build import CorpusTables, Version, build_tables, items_frame, keep_panel
from clcg_pipeline.corpus._errors import CorpusError, empty_language_file, language_file, where
from clcg_pipeline.corpus._io import file_size, filesystem, join, layout_files, read_jsonl
from clcg_pipeline.corpus._records import ArticleRecord, ItemRecord, QuestionRecord

# Human questions carry no L-level unless the source gives one; "H" keeps them out of every
# L0-L5 band while still being a plain level string (analyses separate them by item_source).
HUMAN_LEVEL = "H"
# Paragraph text keeps undecodable bytes for the audit to count (build_tables flags them).
RAW_FIELDS = frozenset({"paragraphs[].text"})


def _validate(model: type[BaseModel], obj: dict[str, Any], path: str, line: int) -> Any:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "<record>"
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise CorpusError(f"{where(path, line, loc)}: {err['msg']}{more}") from None


def load_jsonl(path: str, *, source: str, languages: LanguagesConfig) -> CorpusTables:
    """Read ``<path>/articles/*.jsonl`` (else ``<path>/*.jsonl`` except items.jsonl) and ``items.jsonl``."""
    fs, root = filesystem(path)
    if not fs.isdir(root):
        raise CorpusError(f"{path}: source folder not found")
    files = layout_files(fs, root, "jsonl")
    if not files:
        raise CorpusError(f"{path}: no article files (expected articles/<lang>.jsonl)")

    versions: list[Version] = []
    questions: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}  # (doc, qid) -> (priority, row)
    reference = languages.reference
    invalid: list[tuple[str, str]] = []
    for file in files:
        # Files are named by language (articles/<iso>.jsonl); records say which for certain.
        label = file.rsplit("/", 1)[-1].removesuffix(".jsonl")
        with language_file(label, file):
            n_before = len(versions)
            _read_articles(fs, file, source, reference, versions, questions, invalid)
            if len(versions) == n_before:
                raise empty_language_file(file, label, file_size(fs, file))
    kept, dropped = keep_panel(versions, languages)

    human = [row for _, row in sorted(questions.values(), key=lambda pr: pr[1]["item_id"])]
    ids: dict[str, str] = {}
    for row in human:
        if row["item_id"] in ids:
            raise CorpusError(
                f"{path}: question_id {row['item_id']!r} is used by articles {ids[row['item_id']]!r} and "
                f"{row['doc_id']!r}; question ids must be unique across a source"
            )
        ids[row["item_id"]] = row["doc_id"]

    found: list[str] = []
    bank = _read_bank(
        fs, join(root, "items.jsonl"), source=source, doc_ids={v.doc_id for v in versions}, found=found
    )
    # The bank's text is English (what every language is asked): reported with the reference.
    invalid.extend((reference, location) for location in found)
    for row in bank:
        if row["item_id"] in ids:
            raise CorpusError(
                f"{join(root, 'items.jsonl')}: item_id {row['item_id']!r} is also a question_id"
            )
    return build_tables(
        kept,
        source=source,
        reference=reference,
        items=items_frame(human + bank),
        dropped_languages=dropped,
        invalid_utf8=invalid,
    )


def _read_articles(
    fs: Any,
    file: str,
    source: str,
    reference: str,
    versions: list[Version],
    questions: dict[tuple[str, str], tuple[int, dict[str, Any]]],
    invalid: list[tuple[str, str]],
) -> None:
    """Append one article file's versions and questions."""
    found: list[str] = []
    done = 0
    for line, obj in read_jsonl(fs, file, found=found, raw=RAW_FIELDS):
        record: ArticleRecord = _validate(ArticleRecord, obj, file, line)
        versions.append(
            Version(
                doc_id=record.doc_id,
                language=record.language,
                paragraphs=[(p.pid, p.text) for p in record.paragraphs],
                title=record.title,
                published=record.published,
                origin=where(file, line),
            )
        )
        # Questions normally sit on the English record; a copy elsewhere is used only if
        # English lacks it.
        priority = 0 if record.language == reference else 1
        for q in record.questions:
            key = (record.doc_id, q.question_id)
            if key in questions and questions[key][0] <= priority:
                continue
            questions[key] = (priority, _human_item(record.doc_id, q, source))
        # Undecodable fields of this line belong to the record's language.
        invalid.extend((record.language, location) for location in found[done:])
        done = len(found)


def _human_item(doc_id: str, q: QuestionRecord, source: str) -> dict[str, Any]:
    return {
        "item_id": q.question_id,
        "doc_id": doc_id,
        "item_source": "human",
        "level": q.level or HUMAN_LEVEL,
        "question": q.question,
        "gold_answer": q.answer,
        "answer_format": "free",
        "options": None,
        "target_pids": list(q.pids),
        "supporting_pids": list(q.pids),
        "gold_answerable": bool(q.answerable and q.answer is not None),
        "generator": f"source:{source}",
        "prompt_hash": None,
        "level_label_validated": False,
    }


def _read_bank(
    fs: Any, file: str, *, source: str, doc_ids: set[str], found: list[str]
) -> list[dict[str, Any]]:
    """The frozen item bank, if the folder has one; items of unknown articles are an error."""
    if not fs.isfile(file):
        return []
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(fs, file, found=found):
        item: ItemRecord = _validate(ItemRecord, obj, file, line)
        if item.item_id in seen:
            raise CorpusError(
                f"{where(file, line, 'item_id')}: {item.item_id!r} repeats line {seen[item.item_id]}"
            )
        seen[item.item_id] = line
        if item.doc_id not in doc_ids:
            raise CorpusError(f"{where(file, line, 'doc_id')}: no article {item.doc_id!r} in this source")
        row = item.model_dump()
        row["generator"] = item.generator or f"frozen:{source}"
        rows.append(row)
    return rows
