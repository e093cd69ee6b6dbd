"""FLORES-200 (as distributed) and FLORES+ (per-language JSONL or Parquet records).

Sentences sharing a URL form one article and each sentence is one paragraph, with pid
``s<sentence id>`` (the FLORES line number, the same in every language) so paragraphs align
across languages by construction. FLORES has no publication dates (published is null).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from clcg_pipeline.config import LanguagesConfig
from clcg_pipeline.corpus._build import CorpusTables, Version, build_tables, keep_panel
from clcg_pipeline.corpus._errors import CorpusError, empty_language_file, language_file, where
from clcg_pipeline.corpus._io import (
    file_size,
    filesystem,
    glob,
    is_valid_utf8,
    join,
    read_jsonl,
    read_lines,
    scrub,
)

SPLITS = ("dev", "devtest")
METADATA_COLUMNS = ("URL", "domain", "topic", "has_image", "has_hyperlink")
PLUS_FIELDS = ("id", "iso_639_3", "iso_15924", "text", "url", "domain", "topic")
_CODE = re.compile(r"^([a-z]{3})_([A-Z][a-z]{3})$")


@dataclass(frozen=True)
class _Meta:
    sid: int  # FLORES sentence id (line number in FLORES-200, ``id`` in FLORES+)
    url: str
    domain: str | None
    topic: str | None


def flores_code_map(languages: LanguagesConfig) -> dict[str, str]:
    """FLORES code (``swh_Latn``) -> panel ISO (``sw``), from languages.yaml ``flores_code``."""
    return {lang.flores_code: lang.iso for lang in languages.languages if lang.flores_code}


def file_language(file: str, codes: dict[str, str]) -> str:
    """The language a file is named for (``por_Latn.jsonl`` -> ``pt``), for error messages."""
    stem = file.rsplit("/", 1)[-1].split(".", 1)[0]
    return codes.get(stem, stem)


def load_flores(
    path: str, *, source: str, languages: LanguagesConfig, split: str | None = None
) -> CorpusTables:
    """Read a FLORES-200 folder (``<split>/<code>.<split>`` + ``metadata_<split>.tsv``) or FLORES+ files."""
    if split is not None and split not in SPLITS:
        raise CorpusError(f"source {source!r}: split {split!r} must be one of {list(SPLITS)}")
    fs, root = filesystem(path)
    if not fs.exists(root):
        raise CorpusError(f"{path}: FLORES source not found")
    codes = flores_code_map(languages)
    splits = [split] if split else list(SPLITS)
    invalid: list[tuple[str, str]] = []
    if glob(fs, join(root, "*", "*.dev")) or glob(fs, join(root, "*", "*.devtest")):
        sentences = dict(_flores200(fs, root, splits, codes, invalid))
    else:
        sentences = dict(_flores_plus(fs, root, splits, split, codes, invalid))
    if not sentences:
        raise CorpusError(f"{path}: no FLORES files found for split(s) {splits}")

    versions: list[Version] = []
    for split_name, (meta, per_code) in sorted(sentences.items()):
        versions.extend(_articles(split_name, meta, per_code, codes))
    kept, dropped = keep_panel(versions, languages)
    return build_tables(
        kept, source=source, reference=languages.reference, dropped_languages=dropped, invalid_utf8=invalid
    )


def _articles(
    split: str, meta: list[_Meta], per_code: dict[str, tuple[str, list[str]]], codes: dict[str, str]
) -> Iterator[Version]:
    """Group sentence ids by URL (in order of first appearance) and yield one version per language."""
    groups: dict[str, list[int]] = {}
    for index, m in enumerate(meta):
        groups.setdefault(m.url, []).append(index)
    doc_ids = {url: f"flores-{split}-{k:04d}" for k, url in enumerate(groups, start=1)}
    for code, (file, texts) in sorted(per_code.items()):
        iso = codes.get(code, code)  # unmapped codes are dropped (with a warning) by keep_panel
        for url, indices in groups.items():
            first = meta[indices[0]]
            yield Version(
                doc_id=doc_ids[url],
                language=iso,
                paragraphs=[(f"s{meta[i].sid}", texts[i]) for i in indices],
                title=None,
                published=None,
                extra={"url": url, "domain": first.domain, "topic": first.topic, "split": split},
                origin=file,
            )


def _flores200(
    fs: Any, root: str, splits: list[str], codes: dict[str, str], invalid: list[tuple[str, str]]
) -> Iterator[tuple[str, tuple[list[_Meta], dict]]]:
    for split in splits:
        files = glob(fs, join(root, split, f"*.{split}"))
        if not files:
            continue
        meta_file = next(
            (
                f
                for f in (join(root, f"metadata_{split}.tsv"), join(root, split, f"metadata_{split}.tsv"))
                if fs.isfile(f)
            ),
            None,
        )
        if meta_file is None:
            raise CorpusError(f"{join(root, f'metadata_{split}.tsv')}: metadata file not found")
        found: list[str] = []
        meta = _read_metadata(fs, meta_file, found)
        invalid.extend(("", location) for location in found)  # metadata is every language's
        per_code: dict[str, tuple[str, list[str]]] = {}
        for file in files:
            code = file.rsplit("/", 1)[-1].removesuffix(f".{split}")
            label = codes.get(code, code)
            with language_file(label, file):
                if not _CODE.match(code):
                    raise CorpusError(f"{file}: file name must be <lang>_<Script>.{split} (got {code!r})")
                lines = list(read_lines(fs, file))
                if not any(text.strip() for _, text in lines):
                    raise empty_language_file(file, label, file_size(fs, file))
                if len(lines) != len(meta):
                    raise CorpusError(
                        f"{file}: {len(lines)} sentences, but {meta_file} has {len(meta)} lines; "
                        "FLORES language files must be parallel line by line"
                    )
            # Sentences are paragraph text: kept as decoded, flagged by build_tables for the audit.
            invalid.extend(
                (label, where(file, number, "sentence")) for number, text in lines if not is_valid_utf8(text)
            )
            per_code[code] = (file, [text for _, text in lines])
        yield split, (meta, per_code)


def _read_metadata(fs: Any, file: str, found: list[str]) -> list[_Meta]:
    rows = list(read_lines(fs, file))
    if not rows:
        raise CorpusError(f"{where(file, 1)}: empty metadata file")
    header = rows[0][1].split("\t")
    missing = [c for c in METADATA_COLUMNS if c not in header]
    if missing:
        raise CorpusError(f"{where(file, 1)}: header lacks column(s) {missing} (found {header})")
    col = {name: header.index(name) for name in METADATA_COLUMNS}
    out: list[_Meta] = []
    for line, text in rows[1:]:
        cells = [
            scrub(
                cell,
                file=file,
                line=line,
                found=found,
                field=header[i] if i < len(header) else f"cell {i + 1}",
            )
            for i, cell in enumerate(text.split("\t"))
        ]
        if len(cells) != len(header):
            raise CorpusError(
                f"{where(file, line)}: {len(cells)} tab-separated cells, header has {len(header)}"
            )
        url = cells[col["URL"]].strip()
        if not url:
            raise CorpusError(f"{where(file, line, 'URL')}: empty")
        out.append(
            _Meta(
                sid=line - 1, url=url, domain=cells[col["domain"]] or None, topic=cells[col["topic"]] or None
            )
        )
    return out


def _plus_records(fs: Any, file: str, found: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """(line or row number, record) of one FLORES+ file."""
    if file.endswith(".parquet"):
        if file_size(fs, file) == 0:
            return []  # the caller's one rule for empty language files names the language
        try:
            with fs.open(file, "rb") as handle:
                frame = pd.read_parquet(handle)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise CorpusError(f"{file}: not a readable Parquet file ({exc})") from None
        missing = [c for c in PLUS_FIELDS if c not in frame.columns]
        if missing:
            raise CorpusError(f"{file}: column(s) {missing} missing (found {list(frame.columns)})")
        return [(i + 1, rec) for i, rec in enumerate(frame.to_dict("records"))]
    records = list(read_jsonl(fs, file, found=found, raw={"text"}))
    for line, rec in records:
        missing = [c for c in PLUS_FIELDS if c not in rec]
        if missing:
            raise CorpusError(f"{where(file, line, missing[0])}: missing (record lacks {missing})")
    return records


def _flores_plus(
    fs: Any,
    root: str,
    splits: list[str],
    wanted: str | None,
    codes: dict[str, str],
    invalid: list[tuple[str, str]],
) -> Iterator[tuple[str, tuple[list[_Meta], dict]]]:
    """FLORES+: files anywhere under ``<split>/`` (or directly in the folder, then split ``wanted``)."""
    by_split: dict[str, list[str]] = {}
    for split in splits:
        files = [f for ext in ("jsonl", "parquet") for f in glob(fs, join(root, split, "**", f"*.{ext}"))]
        if files:
            by_split[split] = sorted(files)
    if not by_split:
        flat = [f for ext in ("jsonl", "parquet") for f in glob(fs, join(root, f"*.{ext}"))]
        if flat:
            by_split[wanted or "all"] = sorted(flat)
    for split, files in by_split.items():
        per_code: dict[str, tuple[str, dict[int, str], dict[int, _Meta], dict[int, int]]] = {}
        labels: dict[str, str] = {}
        for file in files:
            labels[file] = file_language(file, codes)
            with language_file(labels[file], file):
                code, ids, metas, lines = _plus_file(fs, file, invalid, codes)
                if code in per_code:
                    raise CorpusError(f"{file}: language {code!r} also in {per_code[code][0]}")
            labels[file] = codes.get(code, code)
            per_code[code] = (file, ids, metas, lines)
        # The sentence ids of the first file (sorted) define the split; every other must match.
        first_file, first_ids, first_meta, _ = next(iter(per_code.values()))
        order = sorted(first_ids)
        for file, ids, metas, lines in per_code.values():
            with language_file(labels[file], file):
                _same_sentences(file, ids, metas, lines, first_file, first_ids, first_meta)
        meta = [first_meta[sid] for sid in order]
        texts = {code: (f, [ids[sid] for sid in order]) for code, (f, ids, _, _) in per_code.items()}
        yield split, (meta, texts)


def _plus_file(
    fs: Any, file: str, invalid: list[tuple[str, str]], codes: dict[str, str]
) -> tuple[str, dict[int, str], dict[int, _Meta], dict[int, int]]:
    """One FLORES+ language file: (code, text by sentence id, metadata by id, line by id)."""
    ids: dict[int, str] = {}
    metas: dict[int, _Meta] = {}
    lines: dict[int, int] = {}
    code = None
    found: list[str] = []
    for line, rec in _plus_records(fs, file, found):
        rec_code = f"{rec['iso_639_3']}_{rec['iso_15924']}"
        if code is None:
            code = rec_code
        elif rec_code != code:
            raise CorpusError(f"{where(file, line, 'iso_639_3')}: {rec_code!r} in a file of {code!r}")
        try:
            sid = int(rec["id"])
        except (TypeError, ValueError):
            raise CorpusError(f"{where(file, line, 'id')}: not an integer: {rec['id']!r}") from None
        if sid in ids:
            raise CorpusError(f"{where(file, line, 'id')}: sentence {sid} repeats line {lines[sid]}")
        if not isinstance(rec["text"], str):
            raise CorpusError(f"{where(file, line, 'text')}: not a string")
        ids[sid] = rec["text"]
        lines[sid] = line
        metas[sid] = _Meta(
            sid=sid, url=str(rec["url"]), domain=_text(rec.get("domain")), topic=_text(rec.get("topic"))
        )
    if code is None:
        raise empty_language_file(file, file_language(file, codes), file_size(fs, file))
    iso = codes.get(code, code)
    invalid.extend((iso, location) for location in found)
    return code, ids, metas, lines


def _text(value: Any) -> str | None:
    """A metadata cell as text (FLORES+ Parquet may hold numbers); None and NaN stay null."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value)


def _same_sentences(
    file: str,
    ids: dict[int, str],
    metas: dict[int, _Meta],
    lines: dict[int, int],
    first_file: str,
    first_ids: dict[int, str],
    first_meta: dict[int, _Meta],
) -> None:
    if set(ids) != set(first_ids):
        raise CorpusError(
            f"{file}: {len(ids)} sentences, {first_file} has {len(first_ids)}; "
            "FLORES language files must hold the same sentence ids"
        )
    for sid in sorted(first_ids):
        if metas[sid].url != first_meta[sid].url:
            raise CorpusError(
                f"{where(file, lines[sid], 'url')}: sentence {sid} has URL {metas[sid].url!r}, "
                f"{first_file} has {first_meta[sid].url!r}"
            )
