"""File access for sources: local paths or fsspec URLs, read as bytes so bad UTF-8 is seen, not lost."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Any

import fsspec
from fsspec import AbstractFileSystem

from clcg_pipeline.corpus._errors import CorpusError, where

_INDEX = re.compile(r"\[\d+\]")  # list positions in a field path, for matching ``raw`` names
_SURROGATE = re.compile("[\ud800-\udfff]")


def filesystem(path: str) -> tuple[AbstractFileSystem, str]:
    """The filesystem holding ``path`` and the path inside it."""
    fs, root = fsspec.core.url_to_fs(path)
    return fs, root.rstrip("/")


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def glob(fs: AbstractFileSystem, pattern: str) -> list[str]:
    """Matching files, sorted so the load order (and every derived id) is stable."""
    return sorted(p for p in fs.glob(pattern) if fs.isfile(p))


# Per source kind, the layouts of its per-language files under the source folder, each a set
# of globs; the first layout with a file is the one in use. The loaders find their files with
# ``layout_files`` and corpus coverage reads the languages off the same names. FLORES reads
# one split's files within these layouts (``_flores``), so only coverage uses its entry.
LAYOUTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "jsonl": (("articles/*.jsonl",), ("*.jsonl",)),
    "belebele": (("*.jsonl",), ("*/*.jsonl",)),
    "flores": (
        ("*/*.dev", "*/*.devtest"),
        ("*/**/*.jsonl", "*/**/*.parquet"),
        ("*.jsonl", "*.parquet"),
    ),
}
# Not a language's file wherever it lies: the canonical source's English item bank.
NOT_LANGUAGE_FILES = frozenset({"items.jsonl"})


def layout_files(fs: AbstractFileSystem, root: str, kind: str) -> list[str]:
    """The files of the first layout of ``kind`` (``LAYOUTS``) that has any under ``root``."""
    for patterns in LAYOUTS[kind]:
        found = {f for pattern in patterns for f in glob(fs, join(root, pattern))}
        files = sorted(f for f in found if f.rsplit("/", 1)[-1] not in NOT_LANGUAGE_FILES)
        if files:
            return files
    return []


def decode(raw: bytes) -> str:
    """UTF-8 text; invalid bytes survive as lone surrogates so the audit can count them."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="surrogateescape")


def is_valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean(text: str) -> str:
    """Text safe for Parquet: undecodable bytes and lone surrogates become U+FFFD."""
    if is_valid_utf8(text):
        return text
    # One U+FFFD per undecodable byte (escaped by ``decode``) or lone surrogate (a JSON "\ud800").
    return _SURROGATE.sub("\ufffd", text)


def scrub(
    value: Any,
    *,
    file: str,
    line: int,
    found: list[str],
    field: str = "",
    raw: Collection[str] = (),
) -> Any:
    """``value`` (a decoded JSON value or a text cell) with every string made storable.

    Each string that was not valid UTF-8 has its location (``file:line: field 'x'``) appended
    to ``found`` and, like paragraph text, becomes U+FFFD where the bytes were bad, so one bad
    byte in a question, an option or a metadata cell is reported instead of crashing the write.
    Fields named in ``raw`` (paths with list indices as ``[]``, e.g. ``paragraphs[].text``) keep
    their surrogates: they are paragraph text, which ``build_tables`` flags for the audit.
    """
    if isinstance(value, str):
        if is_valid_utf8(value):
            return value
        found.append(where(file, line, field or None))
        return value if _INDEX.sub("[]", field) in raw else clean(value)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = clean(str(key))
            path = f"{field}.{name}" if field else name
            out[name] = scrub(item, file=file, line=line, found=found, field=path, raw=raw)
        return out
    if isinstance(value, list):
        return [
            scrub(item, file=file, line=line, found=found, field=f"{field}[{i}]", raw=raw)
            for i, item in enumerate(value)
        ]
    return value


def file_size(fs: AbstractFileSystem, path: str) -> int:
    return int(fs.size(path) or 0)


def read_lines(fs: AbstractFileSystem, path: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, decoded line without its newline) for every line of a text file."""
    with fs.open(path, "rb") as handle:
        data = handle.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        yield number, decode(raw.removesuffix(b"\r"))


def read_jsonl(
    fs: AbstractFileSystem, path: str, *, found: list[str], raw: Collection[str] = ()
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a malformed line raises naming file and line.

    Every string of every object goes through :func:`scrub`: invalid UTF-8 is recorded in
    ``found`` and made storable, except the paragraph-text fields named in ``raw``.
    """
    for number, line in read_lines(fs, path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(
                f"{where(path, number)}: not valid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        if not isinstance(obj, dict):
            raise CorpusError(f"{where(path, number)}: expected a JSON object, got {type(obj).__name__}")
        yield number, scrub(obj, file=path, line=number, found=found, raw=raw)
