"""``reconstruct_release``: a release plus a local copy of the corpus -> the study's data folder.

Order: the release's files against its manifest, then every redacted text against the corpus
(every mismatch named by table, article, language and pid or item), and only then any writing,
in a temporary sibling folder renamed into place at the end.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from clcg_pipeline.config import ProjectConfig, load_config
from clcg_pipeline.corpus import load_source
from clcg_pipeline.release._build import (
    CONFIG,
    FORMAT,
    INDEX,
    MANIFEST,
    ReleaseError,
    check_new,
    documents,
    sha256_file,
    staged,
)
from clcg_pipeline.release._documents import restore_document
from clcg_pipeline.release._lists import decode_lists
from clcg_pipeline.release._redact import restore_table, restore_text
from clcg_pipeline.release._texts import KEY_COLUMNS, collect_texts, key_label

_SHOWN = 50  # mismatches listed in the error; the count says how many in all


@dataclass(frozen=True)
class ReconstructSummary:
    path: Path
    texts: int
    files: int


def read_manifest(release: Path) -> dict[str, Any]:
    path = release / MANIFEST
    if not path.is_file():
        raise ReleaseError(f"{release}: no {MANIFEST}; not a release written by `clcg release`")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise ReleaseError(f"{path}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    return manifest


def check_files(release: Path, manifest: dict[str, Any]) -> None:
    """Every file the manifest lists is there with its sha256 (else an error naming each)."""
    bad = []
    for entry in manifest["files"]:
        path = release / entry["path"]
        if not path.is_file():
            bad.append(f"{entry['path']}: missing")
        elif sha256_file(path) != entry["sha256"]:
            bad.append(f"{entry['path']}: sha256 differs from the manifest's")
    if bad:
        raise ReleaseError(
            f"{release}: {len(bad)} file(s) do not match {MANIFEST}: " + "; ".join(bad[:_SHOWN])
        )


def corpus_texts(config: ProjectConfig, source: str | None, redact: list[str]) -> pd.DataFrame:
    """The redacted texts as the local corpus has them (``source`` overrides the config's path)."""
    spec = config.sources.primary
    if source is not None:
        # The demo's files have the canonical JSONL layout: a copy of them is read as such.
        spec = spec.model_copy(update={"path": source, "kind": "jsonl" if spec.kind == "demo" else spec.kind})
    elif spec.kind != "demo" and (spec.path is None or not Path(spec.path).exists()):
        raise ReleaseError(f"source {spec.name!r}: {spec.path} not found; give the local copy with --source")
    corpus = load_source(spec, config.languages)
    tables = {
        "paragraphs": corpus.paragraphs,
        "articles": corpus.articles,
        "items": corpus.items,
        "item_translations": corpus.item_translations,
    }
    return collect_texts(tables, redact)


def match_texts(index: pd.DataFrame, rebuilt: pd.DataFrame) -> tuple[dict[str, str], list[str]]:
    """sha256 -> text for the texts that match, and one line per text that does not."""
    keys = ["table", "column", *KEY_COLUMNS]
    left = index.astype({c: "string" for c in keys if c != "position"})
    right = rebuilt.astype({c: "string" for c in keys if c != "position"})
    joined = left.merge(right.drop_duplicates(keys), on=keys, how="left", suffixes=("", "_local"))
    problems = []
    for row in joined.to_dict("records"):
        local = row.get("sha256_local")
        if local is None or pd.isna(local):
            problems.append(f"{key_label(row)}: not in the local corpus")
        elif local != row["sha256"]:
            problems.append(
                f"{key_label(row)}: text differs (release sha256 {row['sha256'][:12]}, local {local[:12]}, "
                f"{row['n_chars']} vs {row['n_chars_local']} characters)"
            )
    matched = joined[joined["sha256_local"] == joined["sha256"]]
    return dict(zip(matched["sha256"], matched["text"], strict=True)), problems


def _restore_document(document: Path, staging: Path, texts: dict[str, str], manifest: dict[str, Any]) -> None:
    """A study document with its referenced article text put back, escaped as the study wrote it."""
    written = manifest["redaction"].get("documents", {}).get(document.name)
    if written is None:  # a release before documents were referenced: copied whole
        shutil.copyfile(document, staging / document.name)
        return
    missing: list[str] = []
    text = restore_document(
        document,
        document.read_bytes().decode("utf-8"),
        lambda value: restore_text(value, texts, missing),
        written["json_ascii"],
    )
    if missing:
        raise ReleaseError(f"{document.name}: no text for " + "; ".join(missing[:_SHOWN]))
    (staging / document.name).write_bytes(text.encode("utf-8"))


def reconstruct_release(
    release: str | Path, out: str | Path, *, source: str | None = None
) -> ReconstructSummary:
    """Rebuild the study's data folder from ``release`` and the corpus, into the new folder ``out``."""
    root, target = Path(release), Path(out)
    check_new(target)
    manifest = read_manifest(root)
    check_files(root, manifest)
    config = load_config(root / CONFIG)
    index = pq.read_table(root / INDEX).to_pandas()
    texts, problems = match_texts(index, corpus_texts(config, source, manifest["redaction"]["redacted"]))
    if problems:
        raise ReleaseError(
            f"{len(problems)} of {len(index)} redacted texts do not match the local corpus; nothing written: "
            + "; ".join(problems[:_SHOWN])
            + (f"; ... and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else "")
        )
    tables = {e["path"] for e in manifest["files"] if e["path"].endswith(".parquet") and e["path"] != INDEX}
    with staged(target) as staging:
        for relative in sorted(tables):
            # JSON list columns decoded first: a restored text may hold what JSON escapes.
            stored = decode_lists(pq.read_table(root / relative))
            table, missing = restore_table(relative.split("/", 1)[0], stored, texts)
            if missing:
                raise ReleaseError(f"{relative}: " + "; ".join(missing[:_SHOWN]))
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, staging / relative)
        for document in documents(root):
            if document.name not in (MANIFEST, "datapackage.json"):
                _restore_document(document, staging, texts, manifest)
        shutil.copytree(root / CONFIG, staging / CONFIG)
    return ReconstructSummary(target, len(texts), len(tables))
